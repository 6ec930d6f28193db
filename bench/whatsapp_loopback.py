"""WhatsApp loopback: signed webhook deliveries against gunicorn, a Celery worker on Redis, a stand-in Graph API.

Bounded: a fixed number of customer messages (default 300 from 40 numbers), at a fixed concurrency, then at
most --drain-seconds for the last replies. Everything runs on 127.0.0.1.

1. The dev tenant (aria_spa.yaml) is seeded in the bench database and given a WhatsApp number with an app secret.
2. A stand-in Graph API (a threaded HTTP server on loopback) answers the send-message call; --graph-500-rate of
   its answers are 500s, so the client's retries are exercised.
3. gunicorn (sync workers) serves the webhook; a Celery worker (Redis, a private key prefix) answers.
4. Deliveries are signed as Meta signs them. --redeliver of them are sent again afterwards (Meta's redelivery)
   and --twin of them twice at the same moment.

Measured: webhook latency (p50/p95/p99) and deliveries/s as the sender saw them; reply latency (delivery sent
to the Graph API's 200); replies lost (a customer message that never got a 200 reply); duplicates answered
(a customer message that got more than one 200 reply).

    .venv/bin/python bench/whatsapp_loopback.py [--messages 300] [--numbers 40] [--concurrency 8]
"""
from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter, defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from load_soak import free_port, stop  # noqa: E402

BENCH_DB = "ratiba_bench_whatsapp"
PHONE_NUMBER_ID = "106540352242922"
APP_SECRET = "bench-app-secret"
# The bench process encrypts the number's secrets; the servers must decrypt them with the same key.
SECRET_KEY = "bench-only-" + "k" * 40
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/13")
QUESTIONS = ["Is there parking?", "What time do you open on Sunday?", "How much is a Swedish massage?",
             "Do you accept M-Pesa?", "Mnafungua saa ngapi Jumamosi?", "Can I cancel my booking?",
             "Do I need to arrive early?", "Bei ya facial ni kiasi gani?", "Is there Wi-Fi?", "ok thanks"]


class StandInGraph:
    """Records send-message calls; answers 200 with a fresh id, or a 500 at the configured rate."""

    def __init__(self, *, error_rate: float, seed: int = 7):
        self.lock = threading.Lock()
        self.ok: list[tuple[float, str, str]] = []  # (time, replied-to message id, to)
        self.errors = 0
        self.random = random.Random(seed)
        self.error_rate = error_rate
        self.ids = itertools.count(1)
        graph = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - the stdlib's name
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                with graph.lock:
                    fail = graph.random.random() < graph.error_rate
                    if fail:
                        graph.errors += 1
                    else:
                        graph.ok.append((time.time(), (body.get("context") or {}).get("message_id", ""),
                                         body.get("to", "")))
                        wamid = f"wamid.BENCHOUT{next(graph.ids):07d}"
                payload = (b'{"error":{"message":"temporarily unavailable","code":2}}' if fail else
                           json.dumps({"messaging_product": "whatsapp", "messages": [{"id": wamid}]}).encode())
                self.send_response(500 if fail else 200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format, *args):  # noqa: A002
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def prepare() -> str:
    """Seed the dev tenant, connect its WhatsApp number, clear earlier WhatsApp rows; returns the schema."""
    from django.db import connection

    from channels.models import WhatsAppContact
    from channels.registry.services import whatsapp_number_connect
    from conversations.models import HandoffRequest, Session

    tenant_data, _ = common.load_dev_tenant()
    row, _ = common.seed_tenant(tenant_data, reseed=False)
    connection.set_schema_to_public()
    whatsapp_number_connect(tenant=row, phone_number_id=PHONE_NUMBER_ID, access_token="bench-token",
                            app_secret=APP_SECRET)
    connection.set_tenant(row)
    WhatsAppContact.objects.all().delete()
    HandoffRequest.objects.all().delete()
    Session.objects.all().delete()
    connection.set_schema_to_public()
    return row.schema_name


def service_env(graph_port: int, prefix: str) -> dict:
    env = dict(os.environ, DEBUG="0", SECRET_KEY=SECRET_KEY, ALLOWED_HOSTS=".localhost,localhost,127.0.0.1",
               SECURE_SSL_REDIRECT="0", DB_CONN_MAX_AGE="600", LOG_LEVEL="WARNING", LLM_PROVIDER="extractive",
               INTENT_CLASSIFIER="offline", CELERY_BROKER_URL=REDIS_URL, CELERY_BROKER_KEY_PREFIX=prefix,
               WHATSAPP_GRAPH_URL=f"http://127.0.0.1:{graph_port}", WHATSAPP_RETRY_BASE_SECONDS="0.2",
               WHATSAPP_TIMEOUT_SECONDS="5", WHATSAPP_SWEEP_SECONDS="5", HANDOFF_ANNOUNCER="", RATIBA_DB_NAME=os.environ["RATIBA_DB_NAME"])
    # The signing secret is deliberately the number's own; no platform-wide one.
    env.pop("WHATSAPP_APP_SECRET", None)
    return env


def start_services(*, graph_port: int, port: int, web_workers: int, worker_concurrency: int):
    prefix = f"bench-wa-{uuid.uuid4().hex[:6]}:"
    env = service_env(graph_port, prefix)
    venv = common.ROOT / ".venv" / "bin"
    web = subprocess.Popen([str(venv / "gunicorn"), "ratiba.wsgi", "-w", str(web_workers), "-b", f"127.0.0.1:{port}",
                            "--timeout", "60", "--log-level", "warning"], cwd=common.ROOT, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    # -B: the beat's WhatsApp sweep re-sends a reply whose three tries in one call all met a 500.
    worker = subprocess.Popen([str(venv / "celery"), "-A", "ratiba", "worker", "-B", "-s",
                               f"/tmp/{prefix.strip(':')}-beat", "--concurrency", str(worker_concurrency),
                               "-l", "warning", "--without-gossip", "--without-mingle", "--without-heartbeat"],
                              cwd=common.ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              start_new_session=True)
    return web, worker


def wait_ready(web: subprocess.Popen, base: str) -> None:
    import httpx

    deadline = time.time() + 90
    while time.time() < deadline:
        if web.poll() is not None:
            raise SystemExit("gunicorn did not start: " + web.stderr.read().decode()[-2000:])
        try:
            if httpx.get(f"{base}/healthz", headers={"Host": "localhost"}, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise SystemExit("gunicorn did not become ready in 90 s")


def delivery(*, wamid: str, wa_id: str, text: str) -> bytes:
    body = {"object": "whatsapp_business_account", "entry": [{"id": "102290129340398", "changes": [{
        "field": "messages", "value": {
            "messaging_product": "whatsapp",
            "metadata": {"display_phone_number": "254711000111", "phone_number_id": PHONE_NUMBER_ID},
            "contacts": [{"profile": {"name": "Bench Customer"}, "wa_id": wa_id}],
            "messages": [{"from": wa_id, "id": wamid, "timestamp": str(int(time.time())), "type": "text",
                          "text": {"body": text}}]}}]}]}
    return json.dumps(body).encode()


async def drive(*, base: str, messages: int, numbers: int, concurrency: int, redeliver: float, twin: float,
                seed: int) -> dict:
    import httpx

    from channels.whatsapp.payloads import signature_for

    rng = random.Random(seed)
    plan = []
    for n in range(messages):
        wa_id = f"2547{rng.randrange(10_000_000, 99_999_999)}" if n < numbers else plan[rng.randrange(numbers)][1]
        plan.append((f"wamid.BENCH{seed:03d}{n:07d}", wa_id, rng.choice(QUESTIONS)))
    sent_at: dict[str, float] = {}
    latencies: list[float] = []
    statuses: Counter = Counter()
    queue: asyncio.Queue = asyncio.Queue()
    for item in plan:
        queue.put_nowait(item)

    async with httpx.AsyncClient(base_url=base, headers={"Host": "localhost"}, timeout=30) as client:
        async def post(raw: bytes) -> None:
            started = time.perf_counter()
            response = await client.post("/webhooks/whatsapp/", content=raw, headers={
                "Content-Type": "application/json", "X-Hub-Signature-256": signature_for(raw_body=raw, app_secret=APP_SECRET)})
            latencies.append((time.perf_counter() - started) * 1000)
            statuses[response.status_code] += 1

        async def sender() -> None:
            while not queue.empty():
                wamid, wa_id, text = queue.get_nowait()
                raw = delivery(wamid=wamid, wa_id=wa_id, text=text)
                sent_at[wamid] = time.time()
                if rng.random() < twin:
                    await asyncio.gather(post(raw), post(raw))  # delivered twice at the same moment
                else:
                    await post(raw)

        started = time.perf_counter()
        await asyncio.gather(*(sender() for _ in range(concurrency)))
        # Meta's redelivery of some messages after they were acknowledged.
        again = [item for item in plan if rng.random() < redeliver]
        for wamid, wa_id, text in again:
            await post(delivery(wamid=wamid, wa_id=wa_id, text=text))
        wall = time.perf_counter() - started
    return {"plan": plan, "sent_at": sent_at, "latencies": latencies, "statuses": dict(statuses), "wall": wall,
            "redelivered": len(again)}


def warm_up(base: str, graph: StandInGraph, *, count: int) -> None:
    """Load the embedding model in every worker process before measuring (not counted)."""
    import httpx

    from channels.whatsapp.payloads import signature_for

    ids = [f"wamid.WARM{uuid.uuid4().hex[:10]}" for _ in range(count)]
    for n, wamid in enumerate(ids):
        raw = delivery(wamid=wamid, wa_id=f"25470000{n:04d}", text="Is there parking?")
        httpx.post(f"{base}/webhooks/whatsapp/", content=raw, timeout=60, headers={
            "Host": "localhost", "Content-Type": "application/json",
            "X-Hub-Signature-256": signature_for(raw_body=raw, app_secret=APP_SECRET)})
    deadline = time.time() + 180
    while time.time() < deadline:
        with graph.lock:
            if set(ids) <= {reply_to for _, reply_to, _ in graph.ok}:
                return
        time.sleep(0.5)
    raise SystemExit("the worker did not answer the warm-up messages within 180 s")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] if ordered else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=300)
    parser.add_argument("--numbers", type=int, default=40)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--redeliver", type=float, default=0.2, help="share of messages Meta sends again later")
    parser.add_argument("--twin", type=float, default=0.1, help="share delivered twice at the same moment")
    parser.add_argument("--graph-500-rate", type=float, default=0.1)
    parser.add_argument("--web-workers", type=int, default=2)
    parser.add_argument("--worker-concurrency", type=int, default=2)
    parser.add_argument("--drain-seconds", type=float, default=240)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    os.environ.setdefault("RATIBA_DB_NAME", BENCH_DB)
    os.environ["SECRET_KEY"] = SECRET_KEY
    common.setup_django(default_db=BENCH_DB)
    schema = prepare()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with StandInGraph(error_rate=args.graph_500_rate, seed=args.seed) as graph:
        web, worker = start_services(graph_port=graph.port, port=port, web_workers=args.web_workers,
                                     worker_concurrency=args.worker_concurrency)
        try:
            wait_ready(web, base)
            warm_up(base, graph, count=max(4, 2 * args.worker_concurrency))
            run = asyncio.run(drive(base=base, messages=args.messages, numbers=args.numbers,
                                    concurrency=args.concurrency, redeliver=args.redeliver, twin=args.twin,
                                    seed=args.seed))
            expected = {wamid for wamid, _, _ in run["plan"]}
            deadline = time.time() + args.drain_seconds
            while time.time() < deadline:
                with graph.lock:
                    answered = {reply_to for _, reply_to, _ in graph.ok}
                if expected <= answered:
                    break
                time.sleep(0.5)
            time.sleep(3)  # any late duplicate would show up now
        finally:
            for process in (web, worker):
                stop(process)
        with graph.lock:
            replies = list(graph.ok)
            graph_errors = graph.errors
    per_message = Counter(reply_to for _, reply_to, _ in replies)
    first_reply = {}
    for at, reply_to, _ in sorted(replies):
        first_reply.setdefault(reply_to, at)
    reply_ms = [(first_reply[w] - run["sent_at"][w]) * 1000 for w in expected if w in first_reply]
    from django.db import connection
    from django_tenants.utils import schema_context

    from channels.models import WhatsAppMessage

    with schema_context(schema):
        stored = Counter(WhatsAppMessage.objects.filter(direction="in").values_list("status", flat=True))
        outbound = Counter(WhatsAppMessage.objects.filter(direction="out").values_list("status", flat=True))
        swept = WhatsAppMessage.objects.filter(direction="out", attempts__gt=1).count()
    connection.close()
    latencies = run["latencies"]
    result = {
        "messages": len(expected), "numbers": args.numbers, "concurrency": args.concurrency,
        "deliveries_posted": len(latencies), "redelivered": run["redelivered"],
        "http_statuses": run["statuses"], "webhook_ms": {
            "p50": round(statistics.median(latencies), 1), "p95": round(percentile(latencies, 0.95), 1),
            "p99": round(percentile(latencies, 0.99), 1), "max": round(max(latencies), 1)},
        "deliveries_per_s": round(len(latencies) / run["wall"], 1),
        "reply_ms": {"p50": round(statistics.median(reply_ms), 0) if reply_ms else None,
                     "p95": round(percentile(reply_ms, 0.95), 0) if reply_ms else None},
        "replies_lost": len(expected - set(per_message)),
        "duplicates_answered": sum(1 for w in expected if per_message.get(w, 0) > 1),
        "graph_500s_answered": graph_errors, "replies_sent_by_the_sweep": swept,
        "inbound_rows": dict(stored), "outbound_rows": dict(outbound),
        "web_workers": args.web_workers, "worker_concurrency": args.worker_concurrency,
        "graph_500_rate": args.graph_500_rate, "cpu_count": os.cpu_count(),
    }
    common.RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    (common.RESULTS_DIR / "whatsapp_loopback.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    return 0 if result["replies_lost"] == 0 and result["duplicates_answered"] == 0 else 1


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.exit(main())
