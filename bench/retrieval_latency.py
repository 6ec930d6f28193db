"""Retrieval latency: p50/p95 of fetch_snippets at 50, 10k and 100k snippets in one tenant, against baselines.

    .venv/bin/python bench/retrieval_latency.py                       # sizes 50,10000,100000
    .venv/bin/python bench/retrieval_latency.py --sizes 50,10000      # quicker

Runs on its own database (RATIBA_DB_NAME, default ratiba_bench_retrieval) in a tenant of its own
(bench_latency). Synthetic but realistic snippets: every row is a real FAQ snippet from the eval
sets (dev tenant + all public tenants, ~2,000 texts) plus a sentence of another one; its vector is
the model's embedding of the base text, mixed with the other's and a little Gaussian noise, then
normalised, so rows cluster by topic the way real knowledge bases do. Rows are bulk-inserted with
the vector and full-text indexes dropped, and those indexes (whatever the migrations define) are
built afterwards. Queries are real eval questions.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common  # noqa: E402
from bench.common import percentile, table  # noqa: E402

SCHEMA = "bench_latency"
TABLE = "knowledge_snippetversion"
HEAVY_INDEX_METHODS = ("hnsw", "ivfflat", "gin")
NOISE_POOL = 997  # prime, so (base, other, noise) combinations do not repeat with the row id
OTHER_WEIGHT = 0.3
NOISE_SIGMA = 0.02  # per dimension; with the mix gives ~0.9 cosine between a row and its base text
CACHE = common.RESULTS_DIR / ".latency_base_vectors.json"


# ----------------------------------------------------------------------------- source texts
def base_snippets() -> list[dict]:
    """Every retrieved snippet of the dev tenant and of all public tenants (core and minor)."""
    import yaml

    seed = yaml.safe_load((common.EVAL_DIR / "aria_spa.yaml").read_text())
    out = [{"title": s["title"], "body": s["body"].strip(), "category": s.get("category") or "general"}
           for s in seed["snippets"] if s.get("role", "retrieved") == "retrieved" and s.get("status") != "draft"]
    for path in sorted((common.EVAL_DIR / "public" / "tenants").glob("*/*.json")):
        for s in json.loads(path.read_text())["snippets"]:
            out.append({"title": s["title"][:200], "body": s["body"], "category": s.get("category") or "general"})
    return out


def base_vectors(bases: list[dict]) -> tuple[list[list[float]], list[list[float]]]:
    """The model's embedding of each base text and of each base title (cached on disk: ~20 s to compute)."""
    from knowledge.embeddings import embed_texts, embedding_model_name
    from knowledge.services import embedding_text

    texts = [embedding_text(title=b["title"], body=b["body"]) for b in bases] + [b["title"] for b in bases]
    digest = hashlib.sha256(("\x00".join(texts) + embedding_model_name()).encode()).hexdigest()
    if CACHE.exists():
        cached = json.loads(CACHE.read_text())
        if cached.get("digest") == digest:
            vectors = cached["vectors"]
            return vectors[:len(bases)], vectors[len(bases):]
    vectors = embed_texts(texts)
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    CACHE.write_text(json.dumps({"digest": digest, "vectors": vectors}))
    return vectors[:len(bases)], vectors[len(bases):]


def query_texts(n: int, seed: int = 7) -> list[str]:
    """n real questions: the dev tenant's (English and Swahili) and a sample of the public ones."""
    import yaml

    evaluation = yaml.safe_load((common.EVAL_DIR / "aria_spa.eval.yaml").read_text())
    dev = [q["text"] for q in evaluation["queries"] if q.get("relevant")] + [q["text"] for q in evaluation["unanswerable"]]
    public = []
    for path in sorted((common.EVAL_DIR / "public" / "tenants" / "core").glob("*.json")):
        public += [q["text"] for q in json.loads(path.read_text())["queries"]]
    rng = random.Random(seed)
    rng.shuffle(public)
    texts = list(dict.fromkeys(dev + public))
    return texts[:n]


# ----------------------------------------------------------------------------- loading
def ensure_tenant():
    from django.db import connection

    from ratiba.services import tenant_create

    connection.set_schema_to_public()
    row, _ = tenant_create(schema=SCHEMA, name="Latency bench", domain="bench-latency.bench.localhost")
    return row


def _sql(cursor, statement: str, params=None):
    cursor.execute(statement, params or [])


def stage_sources(bases: list[dict], vectors: list[list[float]], title_vectors: list[list[float]]) -> None:
    """Upload the base texts, their title vectors, the scaled 'other' vectors and a noise pool into bench-only
    tables."""
    import numpy as np
    from django.db import connection

    from knowledge.tokens import token_estimate

    rng = np.random.default_rng(42)
    matrix = np.asarray(vectors, dtype=np.float32)
    titles = np.asarray(title_vectors, dtype=np.float32)
    noise = rng.normal(0.0, NOISE_SIGMA, size=(NOISE_POOL, matrix.shape[1])).astype(np.float32)
    with connection.cursor() as cursor:
        _sql(cursor, "DROP TABLE IF EXISTS bench_base, bench_noise")
        _sql(cursor, "CREATE TABLE bench_base (id int PRIMARY KEY, title text, body text, extra text, category text, "
                     "tokens int, extra_tokens int, vec vector, other_vec vector, title_vec vector)")
        _sql(cursor, "CREATE TABLE bench_noise (id int PRIMARY KEY, vec vector)")
        with cursor.cursor.copy("COPY bench_base (id, title, body, extra, category, tokens, extra_tokens, vec, other_vec, "
                                "title_vec) FROM STDIN") as copy:
            for index, (base, vector, title_vector) in enumerate(zip(bases, matrix, titles, strict=True), start=1):
                extra = base["body"].split(". ")[0].strip().rstrip(".") + "."
                copy.write_row([index, base["title"], base["body"], extra, base["category"],
                                token_estimate(f"{base['title']}\n{base['body']}"), token_estimate(extra),
                                _literal(vector), _literal(vector * OTHER_WEIGHT), _literal(title_vector)])
        with cursor.cursor.copy("COPY bench_noise (id, vec) FROM STDIN") as copy:
            for index, vector in enumerate(noise, start=1):
                copy.write_row([index, _literal(vector)])


def _literal(vector) -> str:
    return "[" + ",".join(f"{x:.6f}" for x in vector) + "]"


def heavy_indexes(cursor) -> dict[str, str]:
    """The vector and full-text indexes the migrations put on the versions table (name -> definition).

    Remembered in a bench table, so a run interrupted between dropping and rebuilding them can restore them.
    """
    _sql(cursor, "CREATE TABLE IF NOT EXISTS bench_index_defs (name text PRIMARY KEY, def text)")
    _sql(cursor, "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() AND tablename = %s",
         [TABLE])
    current = {name: definition for name, definition in cursor.fetchall()
               if any(f" using {method} " in definition.lower() for method in HEAVY_INDEX_METHODS)}
    if current:
        _sql(cursor, "DELETE FROM bench_index_defs")
        for name, definition in current.items():
            _sql(cursor, "INSERT INTO bench_index_defs VALUES (%s, %s)", [name, definition])
        return current
    _sql(cursor, "SELECT name, def FROM bench_index_defs ORDER BY name")
    return dict(cursor.fetchall())


def check_columns(cursor, provided: set[str]) -> None:
    """Fail clearly if the versions table gained a NOT NULL column this loader does not fill."""
    _sql(cursor, "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
                 "AND table_name = %s AND is_nullable = 'NO' AND column_default IS NULL "
                 "AND is_identity = 'NO' AND is_generated = 'NEVER'", [TABLE])
    missing = sorted({row[0] for row in cursor.fetchall()} - provided)
    if missing:
        raise SystemExit(f"{TABLE} has NOT NULL columns the bench loader does not fill: {missing}")


INSERT_VERSIONS = f"""
INSERT INTO {TABLE} (snippet_id, key, version, title, body, category, role, language, channels, tags, status,
    related_keys, token_count, notes, is_active, activated_at, created_at, updated_at, embedding, title_embedding,
    embedding_state, embedding_model, embedded_at)
SELECT s.id, s.key, 1,
    left(b.title || CASE WHEN s.id > %(bases)s THEN ' (' || o.category || ' ' || (s.id / %(bases)s) || ')' ELSE '' END, 200),
    b.body || ' ' || o.extra,
    b.category, 'retrieved', 'en', ARRAY['chat','whatsapp','email']::varchar[], ARRAY[]::varchar[],
    CASE WHEN s.id %% 50 = 0 THEN 'draft' WHEN s.id %% 50 = 1 THEN 'deprecated'
         WHEN s.id %% 10 = 2 THEN 'canonical' ELSE 'accepted' END,
    CASE WHEN s.id %% 10 = 0 THEN ARRAY['syn' || lpad((1 + s.id %% %(n)s)::text, 6, '0')]::varchar[]
         ELSE ARRAY[]::varchar[] END,
    b.tokens + o.extra_tokens, '', true, now(), now() - make_interval(secs => s.id), now(),
    l2_normalize(b.vec + o.other_vec + z.vec), l2_normalize(b.title_vec + z.vec), 'done', %(model)s, now()
FROM knowledge_snippet s
JOIN bench_base b ON b.id = 1 + (s.id - 1) %% %(bases)s
JOIN bench_base o ON o.id = 1 + (s.id * 7919) %% %(bases)s
JOIN bench_noise z ON z.id = 1 + (s.id * 104729) %% {NOISE_POOL}
"""
PROVIDED = {"snippet_id", "key", "version", "title", "body", "category", "role", "language", "channels", "tags",
            "status", "related_keys", "token_count", "notes", "is_active", "activated_at", "created_at",
            "updated_at", "embedding", "title_embedding", "embedding_state", "embedding_model", "embedded_at"}


def load(size: int, n_bases: int) -> dict:
    """Replace the tenant's snippets with `size` synthetic ones; build the heavy indexes after the load."""
    from django.db import connection

    from knowledge.embeddings import embedding_model_name

    timings = {}
    with connection.cursor() as cursor:
        check_columns(cursor, PROVIDED)
        indexes = heavy_indexes(cursor)
        t0 = time.perf_counter()
        _sql(cursor, "TRUNCATE knowledge_snippet RESTART IDENTITY CASCADE")
        for name in indexes:
            _sql(cursor, f'DROP INDEX IF EXISTS "{name}"')
        _sql(cursor, "INSERT INTO knowledge_snippet (key, created_at) "
                     "SELECT 'syn' || lpad(i::text, 6, '0'), now() FROM generate_series(1, %s) i", [size])
        _sql(cursor, INSERT_VERSIONS, {"bases": n_bases, "n": size, "model": embedding_model_name()})
        timings["insert_s"] = time.perf_counter() - t0
        # Session-level only: bigger build memory and both cores for the index builds.
        _sql(cursor, "SET maintenance_work_mem = '1GB'")
        _sql(cursor, "SET max_parallel_maintenance_workers = 2")
        for name, definition in sorted(indexes.items()):
            t1 = time.perf_counter()
            _sql(cursor, definition)
            timings[f"index_{name}_s"] = time.perf_counter() - t1
        _sql(cursor, "RESET maintenance_work_mem")
        _sql(cursor, "RESET max_parallel_maintenance_workers")
        t2 = time.perf_counter()
        _sql(cursor, f"VACUUM ANALYZE {TABLE}")
        _sql(cursor, "ANALYZE knowledge_snippet")
        timings["analyze_s"] = time.perf_counter() - t2
        _sql(cursor, f"SELECT count(*) FROM {TABLE}")
        assert cursor.fetchone()[0] == size
    return timings


# ----------------------------------------------------------------------------- measuring
ELIGIBLE = ("is_active AND role = 'retrieved' AND status <> 'draft' AND 'chat' = ANY(channels) "
            "AND (valid_from IS NULL OR valid_from <= current_date) AND (valid_until IS NULL OR valid_until >= current_date)")
K_CANDIDATES = 24  # 3 x the default top_k of 8, what the product over-retrieves


def measure(fn, items, warmup: int) -> list[float]:
    for item in items[:warmup]:
        fn(item)
    out = []
    for item in items:
        start = time.perf_counter()
        fn(item)
        out.append((time.perf_counter() - start) * 1000)
    return out


def measure_interleaved(series: dict, items, warmup: int) -> dict[str, list[float]]:
    """Time every series on every item, rotating the order per item, so a burst of load on a shared
    machine hits all series alike instead of whichever happened to run then."""
    names = list(series)
    for item in items[:warmup]:
        for name in names:
            series[name](item)
    out: dict[str, list[float]] = {name: [] for name in names}
    for index, item in enumerate(items):
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            start = time.perf_counter()
            series[name](item)
            out[name].append((time.perf_counter() - start) * 1000)
    return out


class StatementTimer:
    """Times every SQL statement the product runs (Django execute_wrapper), grouped by statement shape."""

    def __init__(self):
        self.by_shape: dict[str, list[float]] = {}
        self.active = False

    def __call__(self, execute, sql, params, many, context):
        if not self.active:
            return execute(sql, params, many, context)
        start = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.by_shape.setdefault(self.shape(sql), []).append((time.perf_counter() - start) * 1000)

    @staticmethod
    def shape(sql: str) -> str:
        text = " ".join(sql.split())
        for marker, name in (("kpool AS", "hybrid candidates (one statement: HNSW/exact + keyword pool + signals)"),
                             ("rel_keys", "related snippets (1 hop, with signals)"),
                             ("df AS", "signals (CTE: df/idf + per-row signals)"), ("pool AS", "keyword candidates"),
                             ("knowledge_collection", "collections lookup"),
                             ("hnsw.iterative_scan", "SET hnsw iterative scan / ef_search"),
                             ("<=>", "vector candidates"), ("search_path", "SET search_path (django-tenants)"),
                             ("retrievalsettings", "retrieval settings read")):
            if marker in text:
                return name
        return text[:60]


def product_call(query: str, *, with_embedding: bool, meta: list):
    from knowledge import embeddings
    from knowledge.retrieval import fetch_snippets

    if with_embedding:
        # Empty the query-vector cache for this call only, then put it back, so the interleaved
        # "embedding excluded" calls keep hitting it.
        saved = dict(embeddings._query_cache)
        embeddings._query_cache.clear()
        try:
            result = fetch_snippets("other", query=query, channel="chat")
        finally:
            embeddings._query_cache.update(saved)
    else:
        result = fetch_snippets("other", query=query, channel="chat")
    meta.append({"mode": result.mode, "embedding_ms": result.embedding_ms, "retrieval_ms": result.retrieval_ms,
                 "returned": result.returned_count,
                 "strategy": (result.debug or {}).get("vector", {}).get("strategy", "n/a")})
    return result


def sql_vector(cursor, literal: str, *, exact: bool) -> None:
    if exact:
        _sql(cursor, "BEGIN")
        _sql(cursor, "SET LOCAL enable_indexscan = off")
    _sql(cursor, f"SELECT id, embedding <=> %s::vector AS d FROM {TABLE} WHERE {ELIGIBLE} AND embedding IS NOT NULL "
                 f"ORDER BY d LIMIT {K_CANDIDATES}", [literal])
    cursor.fetchall()
    if exact:
        _sql(cursor, "COMMIT")


def sql_fts(cursor, query: str) -> None:
    _sql(cursor, f"SELECT id, ts_rank_cd(search_vector, q) AS r FROM {TABLE}, websearch_to_tsquery('english', %s) q "
                 f"WHERE {ELIGIBLE} AND search_vector @@ q ORDER BY r DESC LIMIT {K_CANDIDATES}", [query])
    cursor.fetchall()


def run_size(size: int, queries: list[str], qvecs: dict[str, str], warmup: int, tenant_row) -> dict:
    from django.db import connection

    from knowledge.embeddings import embed_query

    result = {"size": size, "series": {}, "notes": [], "loadavg_before": os.getloadavg()[0]}
    for text in queries:
        embed_query(text)  # warm the product's query cache: "embedding excluded" measures retrieval alone
    try:
        from knowledge.retrieval import fetch_snippets  # noqa: F401
        have_product = True
    except ImportError as exc:
        have_product = False
        result["notes"].append(f"fetch_snippets not importable ({exc}): product series skipped")

    common.pin_mode(tenant_row, "hybrid")
    connection.set_tenant(tenant_row)
    if have_product:
        for text in queries:  # the product may embed a prepared text (glossary, rewrite): cache exactly that
            product_call(text, with_embedding=False, meta=[])
    meta_excl: list = []
    meta_incl: list = []
    timer = StatementTimer()

    def excluded(q):
        timer.active = True
        try:
            return product_call(q, with_embedding=False, meta=meta_excl)
        finally:
            timer.active = False

    with connection.execute_wrapper(timer), connection.cursor() as cursor:
        series = {}
        if have_product:
            series["fetch_snippets (hybrid), embedding excluded"] = excluded
            series["fetch_snippets (hybrid), embedding included"] = (
                lambda q: product_call(q, with_embedding=True, meta=meta_incl))
        series["baseline: exact vector scan + FTS (no ANN index)"] = (
            lambda q: (sql_vector(cursor, qvecs[q], exact=True), sql_fts(cursor, q)))
        series["reference: HNSW top-24 SQL only"] = lambda q: sql_vector(cursor, qvecs[q], exact=False)
        series["reference: FTS top-24 SQL only (GIN)"] = lambda q: sql_fts(cursor, q)
        timings = measure_interleaved(series, queries, warmup)
    for label, values in timings.items():
        result["series"][label] = values
        if label == "fetch_snippets (hybrid), embedding excluded":
            result["series"]["  product-reported retrieval_ms"] = [m["retrieval_ms"] for m in meta_excl[warmup:]]
            result["series"]["  product-reported embedding_ms (should be ~0)"] = [
                m["embedding_ms"] for m in meta_excl[warmup:]]
        if label == "fetch_snippets (hybrid), embedding included":
            embed_ms = [m["embedding_ms"] for m in meta_incl[warmup:]]
            result["series"]["  product-reported embedding_ms"] = embed_ms
            if statistics.median(embed_ms) < 1.0:
                result["notes"].append("embedding_ms ~0 in the 'included' run: the product caches query vectors "
                                       "somewhere this bench does not clear")
    calls = max(1, len(meta_excl))
    result["statements"] = [
        {"statement": shape, "per_call": round(len(times) / calls, 2), "p50": percentile(times, 50),
         "p95": percentile(times, 95), "ms_per_call": round(sum(times) / calls, 3)}
        for shape, times in sorted(timer.by_shape.items(), key=lambda item: -sum(item[1]))]
    if meta_excl:
        measured = meta_excl[warmup:]
        result["modes_seen"] = sorted({m["mode"] for m in measured})
        result["returned_median"] = statistics.median(m["returned"] for m in measured)
        result["vector_strategies"] = dict(sorted(Counter(m["strategy"] for m in measured).items()))
    if have_product and size <= 200:
        # What an automatic tenant this small actually runs: inline (measured on its own, after the rest).
        common.pin_mode(tenant_row, "inline")
        connection.set_tenant(tenant_row)
        meta_inline: list = []
        result["series"]["fetch_snippets (inline), embedding excluded"] = measure(
            lambda q: product_call(q, with_embedding=False, meta=meta_inline), queries, warmup)
        result["inline_modes_seen"] = sorted({m["mode"] for m in meta_inline})
        common.pin_mode(tenant_row, "hybrid")
    connection.set_schema_to_public()
    result["loadavg_after"] = os.getloadavg()[0]
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="50,10000,100000", help="comma-separated snippet counts")
    parser.add_argument("--queries", type=int, default=200, help="measured questions per series")
    parser.add_argument("--warmup", type=int, default=20, help="unmeasured calls before each series")
    parser.add_argument("--target-ms", type=float, default=50.0, help="p95 target, embedding excluded, largest size")
    parser.add_argument("--fresh-db", action="store_true",
                        help="drop and recreate the bench database first (e.g. after migrations were rewritten)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]

    started = time.time()
    common.setup_django(fresh=args.fresh_db)
    from django.db import connection

    from knowledge.embeddings import embed_query

    tenant_row = ensure_tenant()
    bases = base_snippets()
    vectors, title_vectors = base_vectors(bases)
    queries = query_texts(args.queries)
    qvecs = {q: _literal(embed_query(q)) for q in queries}
    connection.set_tenant(tenant_row)
    stage_sources(bases, vectors, title_vectors)
    connection.set_schema_to_public()
    print(f"{len(bases)} base texts, {len(queries)} questions; sizes {sizes}", flush=True)

    results = []
    for size in sizes:
        connection.set_tenant(tenant_row)
        t0 = time.time()
        timings = load(size, len(bases))
        connection.set_schema_to_public()
        print(f"  loaded {size:>7} snippets in {time.time() - t0:5.1f}s "
              + " ".join(f"{k}={v:.1f}" for k, v in timings.items()), flush=True)
        run = run_size(size, queries, qvecs, args.warmup, tenant_row)
        run["load"] = timings
        results.append(run)
        print(f"  measured {size:>7} in {time.time() - t0:5.1f}s total", flush=True)

    lines = []
    for run in results:
        rows = [[label, len(values), percentile(values, 50), percentile(values, 95), statistics.fmean(values)]
                for label, values in run["series"].items()]
        load_note = ", ".join(f"{k} {v:.1f}" for k, v in run["load"].items())
        lines.append(table(["series (ms)", "n", "p50", "p95", "mean"], rows,
                           title=f"### {run['size']:,} snippets (load: {load_note}; modes seen {run.get('modes_seen')}"
                                 f"{' / inline ' + str(run.get('inline_modes_seen')) if run.get('inline_modes_seen') else ''}; "
                                 f"vector strategy {run.get('vector_strategies')}; "
                                 f"median returned {run.get('returned_median')}; "
                                 f"1-min load average {run['loadavg_before']:.1f} -> {run['loadavg_after']:.1f} "
                                 f"on {os.cpu_count()} cores)"))
        if run.get("statements"):
            lines.append(table(["SQL statement inside fetch_snippets (embedding excluded)", "per call", "p50 ms",
                                "p95 ms", "ms per call"],
                               [[st["statement"], st["per_call"], st["p50"], st["p95"], st["ms_per_call"]]
                                for st in run["statements"][:8]], title="Where the time goes:"))
        lines += [f"note: {note}" for note in run["notes"]]
    largest = results[-1] if results else None
    verdict = None
    if largest:
        p95 = percentile(largest["series"].get("fetch_snippets (hybrid), embedding excluded", []), 95)
        verdict = p95 < args.target_ms
        lines.append(f"\nTARGET fetch_snippets p95 (embedding excluded) at {largest['size']:,}: {p95:.1f} ms "
                     f"< {args.target_ms:.0f} ms: {'YES' if verdict else 'NO'}")
    report = "\n".join(lines)
    print(report)
    payload = {"benchmark": "retrieval_latency", "git": common.git_revision(), "command": " ".join(sys.argv),
               "seconds": round(time.time() - started, 1), "sizes": sizes, "queries": len(queries),
               "target_ms": args.target_ms, "target_met": verdict,
               "results": [{**{k: v for k, v in r.items() if k != "series"},
                            "series": {label: {"p50": percentile(v, 50), "p95": percentile(v, 95),
                                               "mean": statistics.fmean(v), "n": len(v)}
                                       for label, v in r["series"].items()}} for r in results],
               "report": report}
    path = common.write_result("retrieval_latency", payload)
    print(f"\nwrote {path.relative_to(common.ROOT)} in {time.time() - started:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
