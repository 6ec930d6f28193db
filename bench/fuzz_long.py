"""Long schemathesis run over every REST operation.   python bench/fuzz_long.py [--examples 300] [--seed N]

The same fuzzer as tests/security/test_fuzz_schema.py (tests/security/fuzz_support.py), with many more
examples and no test transaction: requests commit, background work (embedding, ingestion) runs inline as
in production without a broker. A fresh tenant (bench_fuzz at bench-fuzz.localhost in the bench database
ratiba_bench_fuzz) is seeded through the API, then every operation from the served /api/schema/ gets
positive and negative examples, authenticated with a real key, checked for: no 5xx, documented status,
documented media type, response body matching the schema. Failures are collected, not fatal.

Baseline: the bounded `make test` budget (20 examples per operation) runs first in the same process, so
the table shows what the long run adds (requests, statuses reached, failures).
Prints a Markdown table per run and writes bench/results/fuzz_long-*.json.
"""
from __future__ import annotations

import argparse
import logging
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests" / "security"))
from common import git_revision, setup_django, table, write_result  # noqa: E402

SCHEMA, DOMAIN = "bench_fuzz", "bench-fuzz.localhost"
BASELINE_EXAMPLES = 20


def _fresh_tenant():
    import contextlib
    import io

    from django.db import connection

    from common import drop_tenant
    from ratiba.services import api_key_issue, tenant_create

    drop_tenant(SCHEMA)
    with contextlib.redirect_stdout(io.StringIO()):  # the per-schema migration chatter
        tenant, _ = tenant_create(schema=SCHEMA, name="Bench Fuzz Spa", domain=DOMAIN)
    connection.set_tenant(tenant)
    return tenant, api_key_issue(tenant=tenant, label="fuzz").raw


def _run(*, examples: int, seed: int, label: str) -> dict:
    from django.core.wsgi import get_wsgi_application
    from django.test import Client

    from fuzz_support import fuzz_operation, load_schema, operations, seed_fuzz_data

    app = get_wsgi_application()
    reports = []
    started = time.perf_counter()
    labels = [operation.label for operation in operations(load_schema(app=app, host=_fresh_tenant() and DOMAIN))]
    for op_label in labels:
        # A fresh, seeded tenant per operation: a DELETE fuzzed earlier cannot starve a later operation of data.
        _, raw_key = _fresh_tenant()
        known = seed_fuzz_data(client=Client(HTTP_HOST=DOMAIN), headers={"HTTP_AUTHORIZATION": f"Bearer {raw_key}"})
        operation = next(op for op in operations(load_schema(app=app, host=DOMAIN)) if op.label == op_label)
        # Every 4xx would otherwise be logged ("Not Found: ...") thousands of times; tenant creation
        # (migrations) resets logger levels, so this is set per operation.
        logging.getLogger("django.request").setLevel(logging.ERROR)
        reports.append(fuzz_operation(operation, app=app, host=DOMAIN, headers={"Authorization": f"Bearer {raw_key}"},
                                      max_examples=examples, seed=seed, known_path_values=known, keep_going=True))
        print(f"  {label}: {operation.label:<62} {reports[-1].examples:>5} requests  "
              f"{len(reports[-1].failures)} failures", flush=True)
    seconds = time.perf_counter() - started
    statuses = Counter()
    for report in reports:
        statuses.update(report.statuses)
    fuzzing = sum(report.seconds for report in reports)
    return {"label": label, "examples_per_operation": examples, "seconds": round(fuzzing, 1),
            "wall_seconds_with_setup": round(seconds, 1),
            "operations": len(reports), "requests": sum(r.examples for r in reports),
            "statuses": {str(k): v for k, v in sorted(statuses.items())},
            "server_errors": sum(v for k, v in statuses.items() if k >= 500),
            "failures": {r.label: r.failures for r in reports if r.failures},
            "per_operation": [{"operation": r.label, "requests": r.examples, "seconds": round(r.seconds, 2),
                               "statuses": {str(k): v for k, v in sorted(r.statuses.items())},
                               "failures": sorted(r.failures)} for r in reports]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=300, help="max examples per operation (default 300)")
    parser.add_argument("--seed", type=int, default=20260501)
    parser.add_argument("--no-baseline", action="store_true", help="skip the make-test-sized run")
    parser.add_argument("--fresh-db", action="store_true", help="drop and recreate the bench database first")
    args = parser.parse_args()
    setup_django(default_db="ratiba_bench_fuzz", fresh=args.fresh_db)
    from django.conf import settings

    # The fuzzer is one client at full speed: rate limits would turn most of the run into 429s.
    settings.API_RATE_LIMIT_PER_MINUTE = settings.API_RATE_LIMIT_PER_IP_PER_MINUTE = 10**9
    runs = []
    if not args.no_baseline:
        runs.append(_run(examples=BASELINE_EXAMPLES, seed=args.seed, label="baseline (make test budget)"))
    runs.append(_run(examples=args.examples, seed=args.seed, label=f"long ({args.examples}/operation)"))

    long_run = runs[-1]
    print(table(["operation", "requests", "s", "statuses", "failures"],
                [[row["operation"], row["requests"], row["seconds"],
                  " ".join(f"{k}:{v}" for k, v in row["statuses"].items()), len(row["failures"])]
                 for row in long_run["per_operation"]], title=f"Per operation — {long_run['label']}"))
    print(table(["run", "operations", "examples/op", "requests", "fuzzing s", "req/s", "distinct statuses", "5xx",
                 "failures"],
                [[run["label"], run["operations"], run["examples_per_operation"], run["requests"], run["seconds"],
                  round(run["requests"] / max(run["seconds"], 0.001), 1), " ".join(run["statuses"]),
                  run["server_errors"], sum(len(f) for f in run["failures"].values())] for run in runs],
                title="Summary"))
    for run in runs:
        for operation, failures in run["failures"].items():
            print(f"\n{run['label']} — {operation}:")
            for title in failures:
                print(f"  - {title}")
    path = write_result("fuzz_long", {"git": git_revision(), "seed": args.seed, "runs": runs})
    print(f"\nwritten {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
