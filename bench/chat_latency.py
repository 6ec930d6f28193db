"""Chat turn latency and throughput with the extractive provider, against the local embedding ceiling.

    .venv/bin/python bench/chat_latency.py [--duration 20] [--concurrency 8] [--workers 2] [--fresh-db]

Three measurements, one run, one seeded tenant (aria_spa.yaml in RATIBA_DB_NAME, default bench_chat):

1. In-process turn latency: every eval question through `turn_run`, the query-embedding cache cleared
   before each turn (a real customer's question is new); p50/p95 overall and per path, with the
   embedding and retrieval share from the turn's retrieval log.
2. The ceiling: local query embeddings per second (all-MiniLM-L6-v2, one torch thread per process) in
   as many processes as gunicorn has workers, on distinct texts. Every non-trivial turn embeds its
   question once, so this bounds turns/s on this machine.
3. Load: gunicorn (sync workers, persistent DB connections) on loopback, a bounded asyncio + httpx
   client POSTing distinct questions to /api/v1/chat/turns/ for `--duration` seconds; turns/s, latency
   under load, errors — reported as a share of the ceiling. Baseline in the same run: GET
   /api/v1/whoami/ (API-key lookup, no retrieval) under the same client.
"""
from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import common  # noqa: E402

BENCH_HOST = "aria-spa.chatbench.localhost"  # the eval's own domain has an underscore, which HTTP Host rejects
PREFIXES = ["", "Hi, ", "Hello! ", "Quick question: ", "Good morning, ", "Hey, ", "Please tell me: ",
            "Sorry to bother you, ", "Habari, ", "One more thing: ", "Excuse me, ", "Hi there. "]


def questions() -> list[dict]:
    import yaml

    data = yaml.safe_load((common.EVAL_DIR / "aria_spa.eval.yaml").read_text())
    return data["queries"] + [dict(u, kind="unanswerable") for u in data["unanswerable"]]


def unique_messages(count: int) -> list[str]:
    """Distinct natural messages (prefix x question), so no worker's query cache can serve them."""
    texts = [q["text"] for q in questions() if q.get("kind") != "trivial"]
    out = []
    for prefix in PREFIXES:
        for text in texts:
            out.append(prefix + (text[0].lower() + text[1:] if prefix else text))
            if len(out) >= count:
                return out
    return out


# ----------------------------------------------------------------------------- 1. in-process latency


def in_process(row) -> dict:
    from django.db import connection

    from conversations import services
    from knowledge import embeddings
    from telemetry.models import RetrievalLog

    connection.set_tenant(row)
    services.turn_run(services.TurnInput(message="warm up the model"))
    by_path: dict[str, list[float]] = defaultdict(list)
    turn_ids = []
    for item in questions():
        embeddings._query_cache.clear()
        started = time.perf_counter()
        result = services.turn_run(services.TurnInput(message=item["text"]))
        elapsed = (time.perf_counter() - started) * 1000
        path = ("refusal" if result.refusal_reason else
                "small talk" if result.intent in ("greeting", "thanks") else
                "hand-off" if result.intent in ("booking", "cancel", "reschedule") else
                "facts" if result.intent in ("services", "hours") else "answer")
        by_path[path].append(elapsed)
        by_path["all"].append(elapsed)
        turn_ids.append(result.turn_id)
    logs = list(RetrievalLog.objects.filter(turn_id__in=turn_ids, trivial=False)
                .values_list("embedding_latency_ms", "retrieval_latency_ms"))
    return {
        "paths": {path: {"n": len(values), "p50": common.percentile(values, 50), "p95": common.percentile(values, 95)}
                  for path, values in by_path.items()},
        "embedding_ms_p50": common.percentile([e for e, _ in logs], 50),
        "retrieval_ms_p50": common.percentile([r for _, r in logs], 50),
    }


# ----------------------------------------------------------------------------- 2. the ceiling


def _embed_worker(args) -> int:
    texts, seconds = args
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ratiba.settings")
    import django

    django.setup()
    from knowledge.embeddings import get_embedder

    embedder = get_embedder()
    embedder.embed(["warm up"])
    done, index = 0, 0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        embedder.embed([texts[index % len(texts)]])
        index += 1
        done += 1
    return done


def embedding_ceiling(processes: int, seconds: float) -> float:
    """Query embeddings per second with `processes` single-threaded embedders in parallel."""
    texts = unique_messages(2000)
    chunks = [(texts[i::processes], seconds) for i in range(processes)]
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(processes) as pool:
        started = time.perf_counter()
        counts = pool.map(_embed_worker, chunks)
        wall = time.perf_counter() - started
    # Each worker ran for `seconds` after its own warm-up; the rate is per measured second.
    return sum(counts) / seconds if wall > 0 else 0.0


# ----------------------------------------------------------------------------- 3. load over HTTP


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_gunicorn(workers: int, port: int) -> subprocess.Popen:
    env = dict(os.environ, DEBUG="0", SECRET_KEY="bench-only-" + "k" * 40, ALLOWED_HOSTS=".localhost,127.0.0.1",
               SECURE_SSL_REDIRECT="0", API_RATE_LIMIT_PER_MINUTE="100000000",
               API_RATE_LIMIT_PER_IP_PER_MINUTE="100000000", DB_CONN_MAX_AGE="600", LOG_LEVEL="WARNING",
               LLM_PROVIDER="extractive", INTENT_CLASSIFIER="offline")
    command = [str(common.ROOT / ".venv" / "bin" / "gunicorn"), "ratiba.wsgi", "-w", str(workers), "-b",
               f"127.0.0.1:{port}", "--timeout", "120", "--graceful-timeout", "5", "--log-level", "warning"]
    return subprocess.Popen(command, cwd=common.ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)


async def _load(url: str, *, method: str, headers: dict, bodies: list[dict] | None, concurrency: int,
                duration: float) -> dict:
    import httpx

    latencies: list[float] = []
    statuses: Counter = Counter()
    counter = {"next": 0}
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        deadline = time.perf_counter() + duration

        async def worker():
            while time.perf_counter() < deadline:
                index = counter["next"]
                counter["next"] += 1
                started = time.perf_counter()
                try:
                    if method == "POST":
                        response = await client.post(url, headers=headers, json=bodies[index % len(bodies)])
                    else:
                        response = await client.get(url, headers=headers)
                    statuses[response.status_code] += 1
                except httpx.HTTPError as exc:
                    statuses[type(exc).__name__] += 1
                    continue
                latencies.append((time.perf_counter() - started) * 1000)

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        wall = time.perf_counter() - started
    ok = statuses.get(200, 0)
    return {"requests": sum(statuses.values()), "ok": ok, "per_second": ok / wall, "statuses": dict(statuses),
            "p50": common.percentile(latencies, 50), "p95": common.percentile(latencies, 95), "seconds": wall}


def http_load(*, workers: int, concurrency: int, duration: float, api_key: str) -> dict:
    import httpx

    port = free_port()
    server = start_gunicorn(workers, port)
    base = f"http://127.0.0.1:{port}"
    headers = {"Host": BENCH_HOST, "Authorization": f"Bearer {api_key}"}
    try:
        deadline = time.time() + 60
        while True:
            try:
                if httpx.get(f"{base}/healthz", headers={"Host": BENCH_HOST}, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.time() > deadline or server.poll() is not None:
                raise SystemExit("gunicorn did not start: " + (server.stderr.read().decode()[-2000:]
                                                                if server.poll() is not None else "timeout"))
            time.sleep(0.3)
        bodies = [{"message": text} for text in unique_messages(5000)]
        warm = [{"message": f"Warm-up question number {i}: is there parking?"} for i in range(workers * 6)]
        # Every worker loads the model on its first turn: warm them all before measuring.
        asyncio.run(_load(f"{base}/api/v1/chat/turns/", method="POST", headers=headers, bodies=warm,
                          concurrency=workers * 2, duration=8))
        baseline = asyncio.run(_load(f"{base}/api/v1/whoami/", method="GET", headers=headers, bodies=None,
                                     concurrency=concurrency, duration=min(duration, 10)))
        turns = asyncio.run(_load(f"{base}/api/v1/chat/turns/", method="POST", headers=headers, bodies=bodies,
                                  concurrency=concurrency, duration=duration))
        return {"baseline_whoami": baseline, "turns": turns}
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)


# ----------------------------------------------------------------------------- main


def prepare(reseed: bool):
    from django.db import connection

    from conversations.models import HandoffRequest, Session
    from ratiba.models import Domain
    from ratiba.services import api_key_issue

    tenant_data, _ = common.load_dev_tenant()
    row, _ = common.seed_tenant(tenant_data, reseed=reseed)
    common.pin_mode(row, "hybrid")
    connection.set_schema_to_public()
    Domain.objects.get_or_create(domain=BENCH_HOST, defaults={"tenant": row, "is_primary": False})
    key = api_key_issue(tenant=row, label="chat latency bench").raw
    connection.set_tenant(row)
    HandoffRequest.objects.all().delete()
    Session.objects.all().delete()
    connection.set_schema_to_public()
    return row, key


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of load (default 20)")
    parser.add_argument("--concurrency", type=int, default=8, help="requests in flight (default 8)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2, help="gunicorn workers (default: cores)")
    parser.add_argument("--ceiling-seconds", type=float, default=8.0)
    parser.add_argument("--reseed", action="store_true")
    parser.add_argument("--fresh-db", action="store_true", help="drop and re-create the bench database first")
    args = parser.parse_args()
    os.environ.setdefault("RATIBA_DB_NAME", "bench_chat")
    os.environ["LLM_PROVIDER"] = "extractive"
    os.environ["INTENT_CLASSIFIER"] = "offline"
    if args.fresh_db:
        from chat_quality import drop_bench_database

        drop_bench_database(os.environ["RATIBA_DB_NAME"])
    common.setup_django()
    row, key = prepare(args.reseed)

    latency = in_process(row)
    from django.db import connections

    connections.close_all()
    ceiling = embedding_ceiling(args.workers, args.ceiling_seconds)
    load = http_load(workers=args.workers, concurrency=args.concurrency, duration=args.duration, api_key=key)
    report = {"in_process": latency, "embedding_ceiling_per_second": ceiling, "load": load,
              "workers": args.workers, "concurrency": args.concurrency, "cpu_count": os.cpu_count(),
              "revision": common.git_revision()}
    print_report(report)
    path = common.write_result("chat_latency", report)
    print(f"\nwritten {path.relative_to(common.ROOT)}")
    return 0


def print_report(r: dict) -> None:
    lat = r["in_process"]
    print(f"\nChat turn latency, extractive provider, in process (query cache cleared per turn; "
          f"embedding p50 {lat['embedding_ms_p50']:.1f} ms, retrieval p50 {lat['retrieval_ms_p50']:.1f} ms)")
    order = ["all", "answer", "facts", "hand-off", "refusal", "small talk"]
    print(common.table(["path", "n", "p50 ms", "p95 ms"],
                       [[p, lat["paths"][p]["n"], lat["paths"][p]["p50"], lat["paths"][p]["p95"]]
                        for p in order if p in lat["paths"]]))
    turns, base = r["load"]["turns"], r["load"]["baseline_whoami"]
    ceiling = r["embedding_ceiling_per_second"]
    print(f"\nUnder load: gunicorn {r['workers']} sync workers on {r['cpu_count']} cores, persistent DB "
          f"connections, {r['concurrency']} requests in flight")
    print(common.table(["endpoint", "req/s", "p50 ms", "p95 ms", "requests", "non-200"],
                       [["POST /api/v1/chat/turns/", turns["per_second"], turns["p50"], turns["p95"],
                         turns["requests"], turns["requests"] - turns["ok"]],
                        ["GET /api/v1/whoami/ (baseline)", base["per_second"], base["p50"], base["p95"],
                         base["requests"], base["requests"] - base["ok"]]]))
    print(common.table(["ceiling", "value"],
                       [[f"local query embeddings/s ({r['workers']} processes, 1 thread each)", ceiling],
                        ["chat turns/s", turns["per_second"]],
                        ["turns/s as a share of the embedding ceiling", turns["per_second"] / ceiling
                         if ceiling else None]]))


if __name__ == "__main__":
    raise SystemExit(main())
