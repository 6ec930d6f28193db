"""Load and soak: chat turns against gunicorn on loopback for minutes, with web-process memory over time.

    RATIBA_DB_NAME=bench_soak .venv/bin/python bench/load_soak.py --minutes 10 [--concurrency 8]
        [--workers 2] [--threads 1] [--max-requests 200000] [--baseline-seconds 20]

One run, one tenant: shared/eval/aria_spa.yaml seeded with `seed_knowledge` into the bench database
(RATIBA_DB_NAME, default bench_soak), extractive provider, offline intent classifier.

1. gunicorn (sync workers, or gthread with --threads > 1; persistent DB connections; no --max-requests, so a
   leak cannot hide behind worker recycling) on 127.0.0.1, every worker warmed (model loaded).
2. Baselines, same server, same client, same concurrency: GET /healthz (routing + one SELECT) and
   POST /api/v1/retrieve/ (API key, query embedding, hybrid retrieval, no turn stored).
3. The soak: a bounded asyncio + httpx client (fixed concurrency, stops at --minutes or --max-requests,
   only 127.0.0.1) plays customers: each opens a session and sends 1-4 turns drawn from the eval's real
   questions (answerable, unanswerable, Swahili, trivial "ok thanks"), so turns are answered, refused,
   handed off and reused. Per minute: turns/s, p50/p95/p99, errors.
4. Every 10 s: RSS and USS of the gunicorn master and each worker (psutil) and the load average.
   Memory growth = mean of the last minute minus mean of the first minute, per worker.
"""
from __future__ import annotations

import argparse
import asyncio
import ipaddress
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlparse

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import common  # noqa: E402

BENCH_HOST = "aria-spa.soak.localhost"  # the eval's own domain has an underscore, which HTTP Host rejects
PREFIXES = ["", "Hi, ", "Hello! ", "Quick question: ", "Good morning, ", "Hey, ", "Please tell me: ",
            "Sorry to bother you, ", "Habari, ", "One more thing: ", "Excuse me, ", "Hi there. "]
SAMPLE_SECONDS = 10.0


# ----------------------------------------------------------------------------- data


def eval_messages(seed: int = 7) -> tuple[list[str], list[str]]:
    """The eval file's questions (answerable and unanswerable) with greeting prefixes, shuffled; and its
    trivial acknowledgements ("ok thanks", "asante"), which customers send as follow-ups."""
    import yaml

    data = yaml.safe_load((common.EVAL_DIR / "aria_spa.eval.yaml").read_text())
    rows = data["queries"] + [dict(u, kind="unanswerable") for u in data["unanswerable"]]
    questions = []
    for prefix in PREFIXES:
        for row in rows:
            if row.get("kind") != "trivial":
                text = row["text"]
                questions.append(prefix + (text[0].lower() + text[1:] if prefix else text))
    random.Random(seed).shuffle(questions)
    return questions, [row["text"] for row in rows if row.get("kind") == "trivial"]


def prepare() -> tuple[object, str, int]:
    """Seed the tenant (idempotent), add a loopback-friendly domain, issue a key, clear old conversations."""
    from django.db import connection

    from conversations.models import HandoffRequest, Session
    from knowledge.models import SnippetVersion
    from ratiba.models import Domain
    from ratiba.services import api_key_issue

    tenant_data, _ = common.load_dev_tenant()
    row, _ = common.seed_tenant(tenant_data, reseed=False)
    connection.set_schema_to_public()
    Domain.objects.get_or_create(domain=BENCH_HOST, defaults={"tenant": row, "is_primary": False})
    key = api_key_issue(tenant=row, label="load soak bench").raw
    connection.set_tenant(row)
    HandoffRequest.objects.all().delete()
    Session.objects.all().delete()
    snippets = SnippetVersion.objects.filter(is_active=True).count()
    connection.set_schema_to_public()
    return row, key, snippets


# ----------------------------------------------------------------------------- server


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_gunicorn(*, workers: int, threads: int, port: int) -> subprocess.Popen:
    env = dict(os.environ, DEBUG="0", SECRET_KEY="bench-only-" + "k" * 40, ALLOWED_HOSTS=".localhost,127.0.0.1",
               SECURE_SSL_REDIRECT="0", API_RATE_LIMIT_PER_MINUTE="100000000",
               API_RATE_LIMIT_PER_IP_PER_MINUTE="100000000", DB_CONN_MAX_AGE="600", LOG_LEVEL="WARNING",
               LLM_PROVIDER="extractive", INTENT_CLASSIFIER="offline")
    env.pop("CELERY_BROKER_URL", None)
    command = [str(common.ROOT / ".venv" / "bin" / "gunicorn"), "ratiba.wsgi", "-w", str(workers),
               "-b", f"127.0.0.1:{port}", "--timeout", "120", "--graceful-timeout", "5", "--log-level", "warning"]
    if threads > 1:
        command += ["-k", "gthread", "--threads", str(threads)]
    return subprocess.Popen(command, cwd=common.ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)


def wait_ready(server: subprocess.Popen, base: str, workers: int) -> None:
    import httpx
    import psutil

    deadline = time.time() + 90
    while True:
        try:
            ready = httpx.get(f"{base}/healthz", headers={"Host": BENCH_HOST}, timeout=2).status_code == 200
        except httpx.HTTPError:
            ready = False
        if ready and len(psutil.Process(server.pid).children()) >= workers:
            return
        if time.time() > deadline or server.poll() is not None:
            raise SystemExit("gunicorn did not start: " + (server.stderr.read().decode()[-2000:]
                                                            if server.poll() is not None else "timeout"))
        time.sleep(0.3)


def stop(server: subprocess.Popen) -> None:
    os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)


# ----------------------------------------------------------------------------- memory


def sample_memory(master_pid: int) -> dict:
    """RSS and USS (MB) of the gunicorn master and each worker, and the 1-minute load average."""
    import psutil

    def mem(proc) -> dict:
        full = proc.memory_full_info()
        return {"rss_mb": full.rss / 2**20, "uss_mb": full.uss / 2**20}

    master = psutil.Process(master_pid)
    workers = {}
    for child in master.children():
        try:
            workers[child.pid] = mem(child)
        except psutil.Error:
            continue
    return {"t": time.monotonic(), "load1": os.getloadavg()[0], "master": mem(master), "workers": workers}


def memory_growth(samples: list[dict], started: float, seconds: float) -> dict:
    """Per worker: mean RSS/USS over the first, the middle and the last minute of the soak, and growth from
    the first and from the middle minute to the last (a bounded cache filling up grows early, then stops;
    a leak keeps growing through the second half)."""
    first_end, last_start = started + 60, started + max(60.0, seconds - 60)
    middle = (started + seconds / 2 - 30, started + seconds / 2 + 30)
    per_pid: dict[int, dict] = {}
    for sample in samples:
        for pid, m in sample["workers"].items():
            entry = per_pid.setdefault(pid, {"first": [], "middle": [], "last": [], "all": []})
            entry["all"].append(m)
            if sample["t"] <= first_end:
                entry["first"].append(m)
            if middle[0] <= sample["t"] <= middle[1]:
                entry["middle"].append(m)
            if sample["t"] >= last_start:
                entry["last"].append(m)
    out = {}
    for pid, entry in per_pid.items():
        if not entry["first"] or not entry["last"]:
            out[pid] = {"note": "worker did not live through the whole soak (restarted?)"}
            continue
        row = {}
        for kind in ("rss_mb", "uss_mb"):
            first = sum(m[kind] for m in entry["first"]) / len(entry["first"])
            last = sum(m[kind] for m in entry["last"]) / len(entry["last"])
            mid = sum(m[kind] for m in entry["middle"]) / len(entry["middle"]) if entry["middle"] else None
            row[kind] = {"first_minute": first, "last_minute": last, "growth": last - first,
                         "growth_second_half": None if mid is None else last - mid,
                         "max": max(m[kind] for m in entry["all"])}
        out[pid] = row
    return out


# ----------------------------------------------------------------------------- load


def _loopback_only(base: str) -> None:
    host = urlparse(base).hostname
    if not ipaddress.ip_address(host).is_loopback:
        raise SystemExit(f"refusing to load {host}: this bench only drives 127.0.0.1")


async def drive(*, base: str, key: str, kind: str, concurrency: int, seconds: float, max_requests: int,
                messages: list[str] | None = None, trivial: list[str] | None = None, sampler=None,
                seed: int = 11) -> dict:
    """Fixed concurrency until `seconds` or `max_requests`; kind = healthz | retrieve | chat."""
    import httpx

    _loopback_only(base)
    headers = {"Host": BENCH_HOST, "Authorization": f"Bearer {key}"}
    records: list[tuple[float, float, str]] = []  # (finished at, latency ms, outcome)
    issued = {"n": 0, "message": 0}
    samples: list[dict] = []
    rng = random.Random(seed)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    timeout = httpx.Timeout(60.0)
    started = time.monotonic()
    deadline = started + seconds

    def next_message() -> str:
        text = messages[issued["message"] % len(messages)]
        issued["message"] += 1
        return text

    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=timeout, limits=limits) as client:

        async def request(body: dict | None) -> tuple[str, dict | None]:
            t0 = time.monotonic()
            try:
                if kind == "healthz":
                    response = await client.get("/healthz")
                elif kind == "retrieve":
                    response = await client.post("/api/v1/retrieve/", json=body)
                else:
                    response = await client.post("/api/v1/chat/turns/", json=body)
                outcome, data = str(response.status_code), None
                if response.status_code == 200 and kind == "chat":
                    data = response.json()
                    if not isinstance(data.get("answer"), str) or not data.get("turn_id"):
                        outcome = "malformed"
            except (httpx.HTTPError, ValueError) as exc:
                outcome, data = type(exc).__name__, None
            finished = time.monotonic()
            records.append((finished - started, (finished - t0) * 1000, outcome))
            return outcome, data

        async def customer():
            session_id, turns_left = None, 0
            while time.monotonic() < deadline and issued["n"] < max_requests:
                issued["n"] += 1
                if kind == "chat":
                    if turns_left == 0:
                        session_id, turns_left = None, rng.randint(1, 4)
                    body = {"message": next_message(), "channel": rng.choice(["chat", "chat", "whatsapp"])}
                    if session_id:
                        body["session_id"] = session_id
                        if trivial and rng.random() < 0.25:  # a follow-up "ok thanks" reuses the last retrieval
                            body["message"] = rng.choice(trivial)
                    outcome, data = await request(body)
                    turns_left -= 1
                    if outcome == "200" and data:
                        session_id = data["session_id"]
                    else:
                        turns_left = 0
                elif kind == "retrieve":
                    await request({"query": next_message(), "k": 5})
                else:
                    await request(None)

        async def sample_loop():
            while time.monotonic() < deadline and issued["n"] < max_requests:
                samples.append(await asyncio.to_thread(sampler))
                await asyncio.sleep(SAMPLE_SECONDS)

        tasks = [customer() for _ in range(concurrency)]
        if sampler is not None:
            sampler_task = asyncio.create_task(sample_loop())
        await asyncio.gather(*tasks)
        wall = time.monotonic() - started
        if sampler is not None:
            sampler_task.cancel()
            samples.append(sampler())
    return summarise(records, wall, samples=samples, started=started)


def summarise(records: list[tuple[float, float, str]], wall: float, *, samples: list[dict], started: float) -> dict:
    ok = [lat for _, lat, outcome in records if outcome == "200"]
    outcomes = Counter(outcome for _, _, outcome in records)
    minutes = []
    for minute in range(int(wall // 60) + (1 if wall % 60 > 5 else 0)):
        rows = [(lat, outcome) for at, lat, outcome in records if minute * 60 <= at < (minute + 1) * 60]
        span = min(60.0, wall - minute * 60)
        good = [lat for lat, outcome in rows if outcome == "200"]
        load = [s["load1"] for s in samples if minute * 60 <= s["t"] - started < (minute + 1) * 60]
        minutes.append({"minute": minute + 1, "requests": len(rows), "per_second": len(good) / span if span else 0,
                        "p50": common.percentile(good, 50), "p95": common.percentile(good, 95),
                        "p99": common.percentile(good, 99), "errors": len(rows) - len(good),
                        "load1": sum(load) / len(load) if load else None})
    return {"requests": len(records), "ok": len(ok), "errors": len(records) - len(ok), "outcomes": dict(outcomes),
            "seconds": wall, "per_second": len(ok) / wall if wall else 0.0,
            "p50": common.percentile(ok, 50), "p95": common.percentile(ok, 95), "p99": common.percentile(ok, 99),
            "error_rate": (len(records) - len(ok)) / len(records) if records else 0.0,
            "minutes": minutes, "memory_samples": samples,
            "memory_growth": memory_growth(samples, started, wall) if samples else {}}


# ----------------------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="soak length (default 10)")
    parser.add_argument("--concurrency", type=int, default=8, help="requests in flight (default 8)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2, help="gunicorn workers (default: cores)")
    parser.add_argument("--threads", type=int, default=1, help="threads per worker; >1 uses gthread (default 1: sync)")
    parser.add_argument("--max-requests", type=int, default=200_000, help="hard bound on soak requests")
    parser.add_argument("--baseline-seconds", type=float, default=20.0, help="seconds per baseline endpoint")
    args = parser.parse_args()
    os.environ.setdefault("RATIBA_DB_NAME", "bench_soak")
    os.environ["LLM_PROVIDER"] = "extractive"
    os.environ["INTENT_CLASSIFIER"] = "offline"
    common.setup_django()
    row, key, snippets = prepare()
    from django.db import connections

    connections.close_all()
    messages, trivial = eval_messages()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    load_before = os.getloadavg()
    server = start_gunicorn(workers=args.workers, threads=args.threads, port=port)
    try:
        wait_ready(server, base, args.workers)
        # Every worker loads the embedding model on its first turn: warm them all before measuring.
        warm = asyncio.run(drive(base=base, key=key, kind="chat", concurrency=args.workers * 2, seconds=180,
                                 max_requests=args.workers * 10, messages=messages[-200:]))
        baselines = {kind: asyncio.run(drive(base=base, key=key, kind=kind, concurrency=args.concurrency,
                                             seconds=args.baseline_seconds, max_requests=args.max_requests,
                                             messages=messages[::-1]))
                     for kind in ("healthz", "retrieve")}
        soak = asyncio.run(drive(base=base, key=key, kind="chat", concurrency=args.concurrency,
                                 seconds=args.minutes * 60, max_requests=args.max_requests, messages=messages,
                                 trivial=trivial, sampler=lambda: sample_memory(server.pid)))
        stored = stored_turns(row)
        # Every answered turn (warm-up and soak) must be one stored row: nothing lost under load.
        stored["answered_but_not_stored"] = warm["ok"] + soak["ok"] - stored["turns"]
    finally:
        stop(server)
    report = {"args": vars(args), "cpu_count": os.cpu_count(), "revision": common.git_revision(),
              "snippets": snippets, "distinct_messages": len(messages), "load_before": load_before,
              "load_after": os.getloadavg(), "warm_up": {k: warm[k] for k in ("requests", "ok", "errors", "outcomes")},
              "baselines": {k: {x: v[x] for x in v if x not in ("memory_samples", "minutes")}
                            for k, v in baselines.items()},
              "soak": soak, "stored_turns": stored}
    print_report(report)
    path = common.write_result("load_soak", report)
    print(f"\nwritten {path.relative_to(common.ROOT)}")
    return 0 if soak["errors"] == 0 and stored["answered_but_not_stored"] == 0 else 1


def stored_turns(row) -> dict:
    """Rows the soak left behind: every 200 must be one stored turn (nothing lost under load)."""
    from django.db import connection

    from conversations.models import Session, Turn

    connection.set_tenant(row)
    try:
        return {"turns": Turn.objects.count(), "sessions": Session.objects.count(),
                "refused": Turn.objects.exclude(refusal_reason="").count(),
                "trivial": Turn.objects.filter(trivial=True).count()}
    finally:
        connection.set_schema_to_public()


def print_report(r: dict) -> None:
    soak, args = r["soak"], r["args"]
    kind = f"gthread x{args['threads']}" if args["threads"] > 1 else "sync"
    print(f"\nLoad and soak: gunicorn {args['workers']} {kind} workers, {r['cpu_count']} cores, concurrency "
          f"{args['concurrency']}, extractive provider, {r['snippets']} live snippets (aria_spa), "
          f"load average before {r['load_before'][0]:.1f} / after {r['load_after'][0]:.1f}")
    rows = []
    for name, label in (("healthz", "GET /healthz (baseline)"), ("retrieve", "POST /api/v1/retrieve/ (baseline)")):
        b = r["baselines"][name]
        rows.append([label, b["seconds"], b["requests"], b["per_second"], b["p50"], b["p95"], b["p99"],
                     b["error_rate"]])
    rows.append(["POST /api/v1/chat/turns/ (soak)", soak["seconds"], soak["requests"], soak["per_second"],
                 soak["p50"], soak["p95"], soak["p99"], soak["error_rate"]])
    print(common.table(["endpoint", "seconds", "requests", "ok/s", "p50 ms", "p95 ms", "p99 ms", "error rate"],
                       rows))
    print(f"outcomes: {soak['outcomes']}; stored: {r['stored_turns']}")
    print(common.table(["minute", "requests", "turns/s", "p50 ms", "p95 ms", "p99 ms", "errors", "load avg"],
                       [[m["minute"], m["requests"], m["per_second"], m["p50"], m["p95"], m["p99"], m["errors"],
                         m["load1"]] for m in soak["minutes"]], title="Per minute"))
    mem_rows = []
    for pid, g in soak["memory_growth"].items():
        if "note" in g:
            mem_rows.append([pid, g["note"], "", "", "", "", ""])
            continue
        mem_rows.append([pid, g["rss_mb"]["first_minute"], g["rss_mb"]["last_minute"], g["rss_mb"]["growth"],
                         g["uss_mb"]["growth"], g["rss_mb"]["growth_second_half"], g["rss_mb"]["max"]])
    print(common.table(["worker pid", "RSS MB first min", "RSS MB last min", "RSS growth MB", "USS growth MB",
                        "RSS growth 2nd half MB", "RSS max MB"], mem_rows,
                       title="Web worker memory (sampled every 10 s)"))


if __name__ == "__main__":
    raise SystemExit(main())
