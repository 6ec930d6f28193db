"""Do the telemetry pages answer in under 300 ms with 100k retrieval-log rows?  python bench/dashboard_speed.py

Loads 100k synthetic turns over 30 days (plus their section rows, overflow and gap events) into one
tenant of a bench database (default bench_telemetry; reused when already loaded, --reload to rebuild),
then measures, in this process:
- the product: full page requests through Django's test client (middleware, tenant routing, session
  auth, selectors, template) for /telemetry/?days=7|30, /telemetry/gaps/, the digest list and
  GET /api/v1/telemetry/retrieval-health/?days=30;
- the baseline: the SOP's own telemetry SQL (health per channel, most-retrieved sections by unnesting
  the JSONB column, never-retrieved with NOT EXISTS over JSONB) on the same rows;
- the product's figures cold (no kept day rollups: every day from raw rows, as on the very first view)
  and with its telemetry indexes dropped, to show what the rollups and the indexes buy.
Prints Markdown tables; target (issue 6): every page under 300 ms (p95).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import git_revision, percentile, setup_django, table, write_result  # noqa: E402

SCHEMA, DOMAIN = "bench_dash", "bench-dash.localhost"
TURNS, GAP_EVENTS, DAYS = 100_000, 2_000, 30
REPEATS = 30
TARGET_MS = 300.0
KEYS = [f"section-{i:02d}" for i in range(40)]


def _ensure_tenant(reload: bool):
    from django.db import connection

    from common import drop_tenant, tenant_get_or_none
    from knowledge.services import snippet_version_create
    from ratiba.services import tenant_create
    from telemetry.models import RetrievalLog
    from telemetry.synthetic import synthetic_telemetry_write

    connection.set_schema_to_public()
    if reload:
        drop_tenant(SCHEMA)
    tenant = tenant_get_or_none(SCHEMA)
    if tenant is None:
        tenant, _ = tenant_create(schema=SCHEMA, name="Bench Dashboard Spa", domain=DOMAIN)
    connection.set_tenant(tenant)
    loaded = RetrievalLog.objects.count()
    load_s = None
    if loaded != TURNS:
        started = time.perf_counter()
        RetrievalLog.objects.all().delete()
        for key in KEYS:
            snippet_version_create(key=key, title=key.replace("-", " ").title(), body=f"About {key}.",
                                   category="general", role="retrieved", enforce_release_gate=False,
                                   queue_embedding=False)
        synthetic_telemetry_write(turns=TURNS, days=DAYS, seed=3, keys=KEYS, gap_events=GAP_EVENTS)
        load_s = time.perf_counter() - started
        from telemetry.digest import gap_questions_group

        gap_questions_group()
    with connection.cursor() as cursor:
        cursor.execute("vacuum analyze telemetry_retrievallog")
        cursor.execute("vacuum analyze telemetry_retrievallogsection")
        cursor.execute("vacuum analyze telemetry_event")
    connection.set_schema_to_public()
    return tenant, load_s


def _time(fn, repeats: int = REPEATS) -> dict:
    fn()  # warm: plans cached, templates compiled
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return {"p50": statistics.median(samples), "p95": percentile(samples, 95), "max": max(samples)}


def _pages(tenant) -> dict:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client

    from ratiba.services import api_key_issue

    connection.set_tenant(tenant)
    User = get_user_model()
    user = User.objects.filter(username="bench").first() or User.objects.create_user(
        username="bench", password="bench-pw-1", is_staff=True)
    client = Client(HTTP_HOST=DOMAIN)
    client.force_login(user)
    connection.set_schema_to_public()
    key = api_key_issue(tenant=tenant, label="bench").raw

    def get(path, **extra):
        def run():
            response = client.get(path, **extra)
            assert response.status_code == 200, (path, response.status_code)
        return run

    return {
        "GET /telemetry/?days=7": _time(get("/telemetry/?days=7")),
        "GET /telemetry/?days=30": _time(get("/telemetry/?days=30")),
        "GET /telemetry/gaps/": _time(get("/telemetry/gaps/")),
        "GET /telemetry/digests/": _time(get("/telemetry/digests/")),
        "GET /api/v1/telemetry/retrieval-health/?days=30": _time(
            get("/api/v1/telemetry/retrieval-health/?days=30", HTTP_AUTHORIZATION=f"Bearer {key}")),
    }


SOP_HEALTH = """
SELECT channel, COUNT(*) AS total_turns,
    AVG(retrieved_tokens)::INTEGER AS avg_retrieved_tokens,
    AVG(core_tokens + retrieved_tokens)::INTEGER AS avg_total_prompt,
    ROUND(100.0 * COUNT(*) FILTER (WHERE empty_retrieval) / COUNT(*), 1) AS empty_pct,
    ROUND(100.0 * COUNT(*) FILTER (WHERE fallback_used) / COUNT(*), 1) AS fallback_pct,
    ROUND(100.0 * COUNT(*) FILTER (WHERE trivial) / COUNT(*), 1) AS trivial_cache_pct,
    AVG(embedding_latency_ms) FILTER (WHERE NOT trivial)::INTEGER AS avg_embed_ms,
    AVG(retrieval_latency_ms) FILTER (WHERE NOT trivial)::INTEGER AS avg_retrieval_ms
FROM telemetry_retrievallog WHERE created_at > NOW() - INTERVAL '{days} days' GROUP BY channel"""
SOP_MOST = """
SELECT section->>'key' AS section_key, COUNT(*) AS retrieval_count,
    AVG((section->>'similarity')::numeric)::NUMERIC(4,3) AS avg_similarity
FROM telemetry_retrievallog, jsonb_array_elements(retrieved_sections) AS section
WHERE created_at > NOW() - INTERVAL '{days} days'
GROUP BY section->>'key' ORDER BY retrieval_count DESC"""
SOP_NEVER = """
SELECT aks.key, aks.token_count FROM knowledge_snippetversion aks
WHERE aks.is_active AND aks.role = 'retrieved' AND NOT EXISTS (
    SELECT 1 FROM telemetry_retrievallog krl, jsonb_array_elements(krl.retrieved_sections) AS s
    WHERE s->>'key' = aks.key AND krl.created_at > NOW() - INTERVAL '30 days')"""


def _sop_baseline(tenant) -> dict:
    from django.db import connection

    connection.set_tenant(tenant)

    def run(sql):
        def go():
            with connection.cursor() as cursor:
                cursor.execute(sql)
                cursor.fetchall()
        return go

    results = {
        "SOP health per channel (7 d)": _time(run(SOP_HEALTH.format(days=7))),
        "SOP health per channel (30 d)": _time(run(SOP_HEALTH.format(days=30))),
        "SOP most-retrieved, JSONB unnest (30 d)": _time(run(SOP_MOST.format(days=30))),
        "SOP never-retrieved, JSONB NOT EXISTS (30 d)": _time(run(SOP_NEVER), repeats=5),
    }
    connection.set_schema_to_public()
    return results


TELEMETRY_INDEXES = {
    "retrieval_log_created": "create index retrieval_log_created on telemetry_retrievallog (created_at)",
    "retrieval_section_created_key": "create index retrieval_section_created_key on telemetry_retrievallogsection "
                                     "(created_at, key)",
    "retrieval_section_key_created": "create index retrieval_section_key_created on telemetry_retrievallogsection "
                                     "(key, created_at)",
}


def _product_figures(tenant, *, label: str) -> dict:
    from django.db import connection

    from telemetry.selectors import never_retrieved_sections, retrieval_health

    connection.set_tenant(tenant)
    results = {
        f"retrieval_health(days=7) {label}": _time(lambda: retrieval_health(days=7)),
        f"retrieval_health(days=30) {label}": _time(lambda: retrieval_health(days=30)),
        f"never_retrieved_sections() {label}": _time(never_retrieved_sections),
    }
    connection.set_schema_to_public()
    return results


def _cold(tenant) -> dict:
    """The same figures with no kept day rollups: every day aggregated from raw rows (the first view ever)."""
    from django.db import connection

    from telemetry.rollups import rollups_rebuild
    from telemetry.selectors import retrieval_health

    connection.set_tenant(tenant)
    results = {}
    for days in (7, 30):
        samples = []
        for _ in range(5):
            rollups_rebuild()
            started = time.perf_counter()
            retrieval_health(days=days)
            samples.append((time.perf_counter() - started) * 1000)
        results[f"retrieval_health(days={days}) cold, no kept rollups"] = {
            "p50": statistics.median(samples), "p95": percentile(samples, 95), "max": max(samples)}
    connection.set_schema_to_public()
    return results


def _without_indexes(tenant) -> dict:
    from django.db import connection

    connection.set_tenant(tenant)
    with connection.cursor() as cursor:
        cursor.execute("select indexname from pg_indexes where schemaname = %s", [SCHEMA])
        present = {row[0] for row in cursor.fetchall()}
        for name in TELEMETRY_INDEXES:
            if name in present:
                cursor.execute(f'drop index "{SCHEMA}"."{name}"')
    connection.set_schema_to_public()
    try:
        return _product_figures(tenant, label="without indexes")
    finally:
        connection.set_tenant(tenant)
        with connection.cursor() as cursor:
            for name, sql in TELEMETRY_INDEXES.items():
                if name in present:
                    cursor.execute(sql)
            cursor.execute("analyze telemetry_retrievallog")
            cursor.execute("analyze telemetry_retrievallogsection")
        connection.set_schema_to_public()


def _load() -> list[float]:
    import os

    return [round(value, 2) for value in os.getloadavg()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reload", action="store_true", help="drop and reload the 100k-row tenant")
    args = parser.parse_args()
    setup_django(default_db="bench_telemetry")
    from django.db import connection

    from telemetry.models import Event, RetrievalLog, RetrievalLogSection

    tenant, load_s = _ensure_tenant(args.reload)
    connection.set_tenant(tenant)
    counts = {"logs": RetrievalLog.objects.count(), "sections": RetrievalLogSection.objects.count(),
              "events": Event.objects.count()}
    connection.set_schema_to_public()
    print(f"tenant {SCHEMA}: {counts['logs']:,} retrieval logs, {counts['sections']:,} section rows, "
          f"{counts['events']:,} events" + (f" (loaded in {load_s:.1f} s)" if load_s else " (reused)"))

    pages = _pages(tenant)
    product = _product_figures(tenant, label="")
    baseline = _sop_baseline(tenant)
    unindexed = _without_indexes(tenant)
    cold = _cold(tenant)
    _product_figures(tenant, label="")  # leave the rollups warm again

    rows = [[name, r["p50"], r["p95"], r["max"], "yes" if r["p95"] < TARGET_MS else "NO"] for name, r in pages.items()]
    print(table(["page (full request)", "p50 ms", "p95 ms", "max ms", f"< {TARGET_MS:.0f} ms"],
                [[c if not isinstance(c, float) else round(c, 1) for c in row] for row in rows],
                title=f"Telemetry pages, {counts['logs']:,} log rows ({REPEATS} requests each)"))
    rows = [[name, round(r["p50"], 1), round(r["p95"], 1)] for name, r in {**product, **cold, **unindexed, **baseline}.items()]
    print(table(["query", "p50 ms", "p95 ms"], rows, title="Product selectors (warm rollups) vs. baselines: cold (no rollups), no indexes, the SOP's SQL"))
    path = write_result("dashboard_speed", {"revision": git_revision(), "counts": counts, "load_s": load_s,
                                            "pages": pages, "product": product, "baseline_sop": baseline,
                                            "cold": cold, "without_indexes": unindexed, "load_average": _load()})
    print(f"\nload average during the run: {_load()} (2 cores)\nresults: {path}")


if __name__ == "__main__":
    main()
