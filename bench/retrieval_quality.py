"""Retrieval quality: the product's hybrid pipeline against five baselines, same model, same data, one run.

    .venv/bin/python bench/retrieval_quality.py            # dev tenant + 20 public core tenants
    .venv/bin/python bench/retrieval_quality.py --reseed   # drop and re-seed every bench tenant first
    .venv/bin/python bench/retrieval_quality.py --minor    # also the 69 held-out minor tenants (own table)

Runs on its own database (RATIBA_DB_NAME, default ratiba_bench_retrieval), never the dev database.
Prints Markdown tables and writes bench/results/retrieval_quality-<stamp>.json.
See docs/BENCHMARKS.md for what each method is and how baseline refusal is tuned.
"""
from __future__ import annotations

import argparse
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common  # noqa: E402
from bench.common import K_VALUES, Query, Scores, TenantData, fmt, table  # noqa: E402

FETCH = 10  # how many results each baseline returns (>= the largest k)
METHODS = ["product_hybrid", "product_hybrid_fused", "product_inline", "vector", "fts", "bm25", "inline_all", "langchain_ensemble"]
BASELINES = ["vector", "fts", "bm25", "inline_all", "langchain_ensemble"]
LABELS = {
    "product_hybrid": "product hybrid (fetch_snippets, pinned hybrid)",
    "product_hybrid_fused": "  diagnostic: product fused ranking before threshold/packing",
    "product_inline": "product inline (fetch_snippets, pinned inline)",
    "vector": "vector only (pgvector cosine)",
    "fts": "keyword only (Postgres FTS)",
    "bm25": "BM25 (rank-bm25 Okapi)",
    "inline_all": "inline-all (whole KB, newest first)",
    "langchain_ensemble": "LangChain EnsembleRetriever (BM25 + vector, RRF)",
}
# How each method decides to refuse: native, a similarity cut fitted on the dev tenant, or none.
REFUSAL_RULE = {
    "product_hybrid": "product (refusal_reason)",
    "product_hybrid_fused": "product (refusal_reason)",
    "product_inline": "product (refusal_reason)",
    "vector": "top-1 cosine < t (fitted on dev)",
    "fts": "no lexeme matches",
    "bm25": "top BM25 score <= 0",
    "inline_all": "n/a (never refuses)",
    "langchain_ensemble": "top-1 cosine < t (fitted on dev)",
}
TUNED = {"vector", "langchain_ensemble"}
TOKEN_RE = re.compile(r"\w+", re.UNICODE)


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens: the same analyser for rank-bm25 and LangChain's BM25Retriever."""
    return TOKEN_RE.findall(text.lower())


@dataclass
class Outcome:
    """What one method returned for one question."""

    ranked: list[str]
    refused: bool | None  # None: decided later (tuned threshold) or never
    top_similarity: float | None = None
    ms: float = 0.0
    related_hit: bool = False
    error: str = ""
    fused: list[str] | None = None  # the product's whole fused ranking (debug), before threshold and packing
    dropped: list[str] | None = None  # product: keys under the similarity threshold (debug)
    skipped: list[str] | None = None  # product: keys skipped by token-budget packing (debug)


# ----------------------------------------------------------------------------- corpus
@dataclass
class Doc:
    key: str
    title: str
    body: str
    vector: list[float]

    @property
    def text(self) -> str:
        return f"{self.title}\n{self.body}"


ELIGIBLE_SQL = """
    is_active AND role = 'retrieved' AND status <> 'draft' AND 'chat' = ANY(channels)
    AND (valid_from IS NULL OR valid_from <= current_date)
    AND (valid_until IS NULL OR valid_until >= current_date)
"""


def load_corpus() -> list[Doc]:
    """The tenant's answerable KB, newest first: what inline mode would inject for intent 'other'."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f"SELECT key, title, body, embedding::text FROM knowledge_snippetversion "
                       f"WHERE {ELIGIBLE_SQL} ORDER BY created_at DESC, id DESC")
        rows = cursor.fetchall()
    return [Doc(key=k, title=t, body=b, vector=_parse_vector(v)) for k, t, b, v in rows]


def _parse_vector(text: str | None) -> list[float]:
    return [float(x) for x in text.strip("[]").split(",")] if text else []


def _vector_literal(vector: list[float]) -> str:
    return "[" + ",".join(f"{x:.7f}" for x in vector) + "]"


# ----------------------------------------------------------------------------- methods
class Baselines:
    """Every non-product method over one tenant's corpus."""

    def __init__(self, docs: list[Doc]):
        from rank_bm25 import BM25Okapi

        self.docs = docs
        self.by_key = {doc.key: doc for doc in docs}
        self.bm25 = BM25Okapi([tokenize(doc.text) for doc in docs]) if docs else None
        self.ensemble = self._langchain(docs) if docs else None

    @staticmethod
    def _langchain(docs: list[Doc]):
        """LangChain's documented hybrid recipe: EnsembleRetriever(BM25Retriever, vector store retriever), equal weights."""
        from langchain_classic.retrievers import EnsembleRetriever
        from langchain_community.retrievers import BM25Retriever
        from langchain_core.documents import Document
        from langchain_core.embeddings import Embeddings
        from langchain_core.vectorstores import InMemoryVectorStore

        from knowledge.embeddings import embed_query, embed_texts

        stored = {doc.text: doc.vector for doc in docs}

        class ProductEmbeddings(Embeddings):
            """The product's model; documents get the very vectors stored in PostgreSQL."""

            def embed_documents(self, texts):
                missing = [t for t in texts if t not in stored]
                fresh = dict(zip(missing, embed_texts(missing))) if missing else {}
                return [stored.get(t) or fresh[t] for t in texts]

            def embed_query(self, text):
                return embed_query(text)

        documents = [Document(page_content=doc.text, metadata={"key": doc.key}) for doc in docs]
        bm25 = BM25Retriever.from_documents(documents, preprocess_func=tokenize, k=FETCH)
        store = InMemoryVectorStore(embedding=ProductEmbeddings())
        store.add_documents(documents)
        dense = store.as_retriever(search_kwargs={"k": FETCH})
        return EnsembleRetriever(retrievers=[bm25, dense], weights=[0.5, 0.5], id_key="key")

    def vector(self, query: str, qvec: list[float]) -> Outcome:
        from django.db import connection

        literal = _vector_literal(qvec)
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT key, 1 - (embedding <=> %s::vector) FROM knowledge_snippetversion "
                           f"WHERE {ELIGIBLE_SQL} AND embedding IS NOT NULL "
                           f"ORDER BY embedding <=> %s::vector LIMIT {FETCH}", [literal, literal])
            rows = cursor.fetchall()
        return Outcome(ranked=[k for k, _ in rows], refused=None, top_similarity=float(rows[0][1]) if rows else -1.0)

    def fts(self, query: str, qvec: list[float]) -> Outcome:
        """websearch_to_tsquery (all terms) ranked by ts_rank_cd; when that matches nothing, any term."""
        from django.db import connection

        base = (f"SELECT key, ts_rank_cd(search_vector, q) AS rank FROM knowledge_snippetversion, {{q}} "
                f"WHERE {ELIGIBLE_SQL} AND search_vector @@ q ORDER BY rank DESC, key LIMIT {FETCH}")
        with connection.cursor() as cursor:
            cursor.execute(base.format(q="websearch_to_tsquery('english', %s) q"), [query])
            rows = cursor.fetchall()
            if not rows:
                cursor.execute("SELECT string_agg(quote_literal(l), ' | ') "
                               "FROM unnest(tsvector_to_array(to_tsvector('english', %s))) l", [query])
                any_terms = cursor.fetchone()[0]
                if any_terms:
                    cursor.execute(base.format(q="to_tsquery('simple', %s) q"), [any_terms])
                    rows = cursor.fetchall()
        return Outcome(ranked=[k for k, _ in rows], refused=not rows)

    def bm25_rank(self, query: str, qvec: list[float]) -> Outcome:
        scores = self.bm25.get_scores(tokenize(query))
        order = sorted(range(len(self.docs)), key=lambda i: (-scores[i], i))[:FETCH]
        top = float(scores[order[0]]) if order else 0.0
        return Outcome(ranked=[self.docs[i].key for i in order], refused=top <= 0.0)

    def inline_all(self, query: str, qvec: list[float]) -> Outcome:
        return Outcome(ranked=[doc.key for doc in self.docs[:FETCH]], refused=False)

    def langchain_ensemble(self, query: str, qvec: list[float]) -> Outcome:
        results = self.ensemble.invoke(query)
        ranked = [doc.metadata["key"] for doc in results][:FETCH]
        top = _cosine(qvec, self.by_key[ranked[0]].vector) if ranked else -1.0
        return Outcome(ranked=ranked, refused=None, top_similarity=top)


def _cosine(a: list[float], b: list[float]) -> float:
    # Both sides are unit-normalised by the embedder.
    return float(sum(x * y for x, y in zip(a, b)))


def product(query: Query) -> Outcome:
    """The product's seam, exactly as the dispatcher calls it for an 'other' turn on the chat channel."""
    from knowledge.retrieval import fetch_snippets

    result = fetch_snippets("other", query=query.text, channel="chat")
    primary = [s for s in result.snippets if s.match_type != "related"]
    related = [s for s in result.snippets if s.match_type == "related"]
    ranked = [s.key for s in primary] + [s.key for s in related if s.key not in {p.key for p in primary}]
    sims = [s.similarity for s in result.snippets if s.similarity is not None]
    rank = common.first_hit_rank(ranked, query.relevant)
    debug = result.debug or {}
    fused = [row["key"] for row in debug.get("fusion", []) if isinstance(row, dict) and "key" in row]
    dropped = [row.get("key") for row in debug.get("threshold", {}).get("dropped", []) if isinstance(row, dict)]
    skipped = [f"{row.get('key')} ({row.get('reason')})" for row in debug.get("packing", {}).get("skipped", [])
               if isinstance(row, dict)]
    return Outcome(ranked=ranked, refused=result.refusal_reason is not None,
                   top_similarity=max(sims) if sims else None,
                   related_hit=bool(rank and rank > len(primary)), fused=list(dict.fromkeys(fused)),
                   dropped=dropped, skipped=skipped)


# ----------------------------------------------------------------------------- run
def run_tenant(tenant: TenantData, tenant_row, methods: list[str]) -> dict[str, list[Outcome]]:
    """Every method on every question of one tenant."""
    from django.db import connection

    from knowledge.embeddings import embed_query

    outcomes: dict[str, list[Outcome]] = {m: [] for m in methods}
    product_modes = [m for m in methods if m in ("product_hybrid", "product_inline")]
    connection.set_tenant(tenant_row)
    try:
        qvecs = [embed_query(q.text) for q in tenant.queries]  # warms the product's query cache too
        docs = load_corpus()
        baselines = Baselines(docs)
        for method in product_modes:
            common.pin_mode(tenant_row, method.removeprefix("product_"))
            connection.set_tenant(tenant_row)
            for query in tenant.queries:
                outcomes[method].append(_timed(lambda q=query: product(q)))
        if "product_hybrid_fused" in methods:
            outcomes["product_hybrid_fused"] = [
                Outcome(ranked=o.fused or [], refused=o.refused, top_similarity=o.top_similarity, ms=0.0,
                        error=o.error) for o in outcomes["product_hybrid"]]
        for method in [m for m in methods if m in BASELINES]:
            fn = {"vector": baselines.vector, "fts": baselines.fts, "bm25": baselines.bm25_rank,
                  "inline_all": baselines.inline_all, "langchain_ensemble": baselines.langchain_ensemble}[method]
            for query, qvec in zip(tenant.queries, qvecs):
                outcomes[method].append(_timed(lambda q=query, v=qvec: fn(q.text, v)))
        if "product_hybrid" in methods:
            common.pin_mode(tenant_row, "hybrid")
    finally:
        connection.set_schema_to_public()
    return outcomes


def _timed(call) -> Outcome:
    start = time.perf_counter()
    try:
        outcome = call()
    except Exception as exc:  # noqa: BLE001 - one failing question must not hide the others
        outcome = Outcome(ranked=[], refused=None, error=f"{type(exc).__name__}: {exc}")
    outcome.ms = (time.perf_counter() - start) * 1000
    return outcome


def apply_thresholds(records: list[tuple[Query, dict[str, Outcome]]], thresholds: dict[str, float]) -> None:
    for _, by_method in records:
        for method, cut in thresholds.items():
            outcome = by_method.get(method)
            if outcome is not None and outcome.top_similarity is not None and not outcome.error:
                outcome.refused = outcome.top_similarity < cut


def fit_thresholds(records, methods) -> dict[str, float]:
    """Fit each similarity-refusing baseline's cut on the dev tenant (as the product calibrates on dev data)."""
    thresholds = {}
    for method in methods:
        if method not in TUNED:
            continue
        pairs = [(o.top_similarity, q.answerable) for q, by in records
                 if (o := by[method]).top_similarity is not None and not o.error]
        thresholds[method] = common.best_threshold(pairs)
    return thresholds


def score(records, methods, key=lambda q: "all") -> dict[str, dict[str, Scores]]:
    """Scores per group (by `key`) per method."""
    out: dict[str, dict[str, Scores]] = {}
    for query, by_method in records:
        group = key(query)
        if group is None:
            continue
        for method in methods:
            outcome = by_method[method]
            scores = out.setdefault(group, {}).setdefault(method, Scores())
            if query.answerable:
                scores.add_ranked(outcome.ranked, query.relevant)
            refused = None if method == "inline_all" else outcome.refused
            scores.add_refusal(answerable=query.answerable, refused=refused)
    return out


def main_table(title: str, by_method: dict[str, Scores], methods, ms: dict[str, float]) -> str:
    rows = []
    for method in methods:
        s = by_method[method]
        rows.append([LABELS[method], s.n, *(s.recall(k) for k in K_VALUES), s.mrr, s.n_unanswerable or "n/a",
                     s.refusal_precision, s.refusal_recall, s.false_refusal_rate, REFUSAL_RULE[method],
                     f"{ms.get(method, 0.0):.1f}"])
    return table(["method", "n", "R@1", "R@3", "R@5", "MRR", "unans.", "refusal P", "refusal R", "false refusals",
                  "refusal rule", "ms/q"], rows, title=title)


def breakdown_table(title: str, groups: dict[str, dict[str, Scores]], methods, *, recall: bool = True,
                    refusal: bool = False) -> str:
    names = sorted(groups)
    headers = ["method"]
    for name in names:
        sample = next(iter(groups[name].values()))
        if recall:
            headers += [f"{name} R@1 (n={sample.n})", f"{name} R@5", f"{name} MRR"]
        if refusal:
            headers += [f"{name} refusal R (n={sample.n_unanswerable})"]
    rows = []
    for method in methods:
        row = [LABELS[method]]
        for name in names:
            s = groups[name][method]
            if recall:
                row += [s.recall(1), s.recall(5), s.mrr]
            if refusal:
                row += [s.refusal_recall]
        rows.append(row)
    return table(headers, rows, title=title)


def mean_ms(records, methods) -> dict[str, float]:
    return {m: sum(by[m].ms for _, by in records) / max(1, len(records)) for m in methods}


def verdict(summary: dict[str, dict[str, Scores]], methods) -> tuple[bool, list[str]]:
    """Is the product hybrid ahead of every baseline on R@5 and MRR on both datasets?"""
    lines, ok = [], True
    for dataset, by_method in summary.items():
        mine = by_method["product_hybrid"]
        for method in methods:
            if method == "product_hybrid" or method.startswith("product_"):
                continue
            other = by_method[method]
            for metric, a, b in (("R@5", mine.recall(5), other.recall(5)), ("MRR", mine.mrr, other.mrr)):
                ahead = a is not None and b is not None and a > b
                ok &= ahead
                if not ahead:
                    lines.append(f"{dataset}: product_hybrid {metric} {fmt(a)} is NOT ahead of {method} {fmt(b)}")
    return ok, lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reseed", action="store_true", help="drop and re-seed every bench tenant first")
    parser.add_argument("--skip-public", action="store_true", help="dev tenant only (quick iteration)")
    parser.add_argument("--minor", action="store_true",
                        help="also run public/tenants/minor/ (69 tenants never used for tuning) as a held-out table")
    parser.add_argument("--tenants", default="", help="comma-separated substrings: only public tenants matching")
    parser.add_argument("--methods", default=",".join(METHODS), help=f"subset of {','.join(METHODS)}")
    parser.add_argument("--fresh-db", action="store_true",
                        help="drop and recreate the bench database first (e.g. after migrations were rewritten)")
    args = parser.parse_args()
    methods = [m for m in args.methods.split(",") if m]
    unknown = set(methods) - set(METHODS)
    if unknown:
        parser.error(f"unknown methods: {sorted(unknown)}")
    if "product_hybrid_fused" in methods and "product_hybrid" not in methods:
        methods.remove("product_hybrid_fused")

    started = time.time()
    common.setup_django(fresh=args.fresh_db)
    dev, skipped = common.load_dev_tenant()
    tenants = [dev]
    if not args.skip_public:
        public = common.load_public_tenants("core")
        if args.tenants:
            wanted = [w.strip() for w in args.tenants.split(",") if w.strip()]
            public = [t for t in public if any(w in t.schema for w in wanted)]
        tenants += public
    if args.minor:
        minor = common.load_public_tenants("minor")
        for tenant in minor:
            tenant.dataset = "minor"
        tenants += minor

    records: dict[str, list[tuple[Query, dict[str, Outcome]]]] = {"dev": [], "public": [], "minor": []}
    per_tenant: dict[str, list] = {}
    for tenant in tenants:
        t0 = time.time()
        row, how = common.seed_tenant(tenant, reseed=args.reseed)
        seeded_s = time.time() - t0
        outcomes = run_tenant(tenant, row, methods)
        tenant_records = [(q, {m: outcomes[m][i] for m in methods}) for i, q in enumerate(tenant.queries)]
        records[tenant.dataset].extend(tenant_records)
        per_tenant[tenant.schema] = tenant_records
        errors = sum(1 for _, by in tenant_records for o in by.values() if o.error)
        print(f"  {tenant.schema:<44} {how:<7} {seeded_s:5.1f}s seed  {time.time() - t0 - seeded_s:5.1f}s run"
              f"  {len(tenant.queries)} questions{f'  {errors} ERRORS' if errors else ''}", flush=True)

    thresholds = fit_thresholds(records["dev"], methods)
    for dataset_records in records.values():
        apply_thresholds(dataset_records, thresholds)

    out: list[str] = []
    summary = {}
    datasets = [("dev", "Development tenant (aria_spa)")]
    if records["public"]:
        n_public = sum(1 for t in tenants if t.dataset == "public")
        datasets.append(("public", f"Public core benchmark ({n_public} tenants, pooled)"))
    if records["minor"]:
        n_minor = sum(1 for t in tenants if t.dataset == "minor")
        datasets.append(("minor", f"Held-out: public minor tenants ({n_minor}, pooled; never used for tuning)"))
    for dataset, title in datasets:
        recs = records[dataset]
        summary[dataset] = score(recs, methods)["all"]
        out.append(main_table(f"### {title}", summary[dataset], methods, mean_ms(recs, methods)))
    dev_recs = records["dev"]
    out.append(breakdown_table("### Dev tenant by language (answerable; refusal recall on unanswerables)",
                               score(dev_recs, methods, key=lambda q: q.language), methods, refusal=True))
    out.append(breakdown_table("### Dev tenant by query kind",
                               score(dev_recs, methods, key=lambda q: q.kind if q.answerable else None), methods))
    if records["public"]:
        pub = records["public"]
        out.append(breakdown_table("### Public by answer type (DSTC factual / DSTC subjective_partial / StackFAQ how_to)",
                                   score(pub, methods, key=lambda q: q.kind if q.answerable else None), methods))
        out.append(breakdown_table("### Public refusal recall: in-domain vs generic (CLINC150) unanswerables",
                                   score(pub, methods, key=lambda q: None if q.answerable else q.unanswerable_kind),
                                   methods, recall=False, refusal=True))
    tuned = {d: by for d, by in summary.items() if d != "minor"}
    ok, lines = verdict(tuned, methods) if "product_hybrid" in methods else (False, ["product_hybrid not run"])
    held_out = verdict({"minor": summary["minor"]}, methods) if "minor" in summary and "product_hybrid" in methods \
        else None
    out.append("\nThresholds fitted on the dev tenant (refuse when top-1 cosine is below): "
               + ", ".join(f"{m} {t:.3f}" for m, t in thresholds.items()))
    if skipped:
        out.append(f"Dev questions not scored (no retrieval label: structured/trivial/injection): {len(skipped)}")
    out.append("\nVERDICT: product hybrid ahead of every baseline on R@5 and MRR on every dataset: "
               + ("YES" if ok else "NO"))
    out.extend(f"  - {line}" for line in lines)
    if held_out is not None:
        out.append("HELD-OUT (minor tenants): product hybrid ahead of every baseline on R@5 and MRR: "
                   + ("YES" if held_out[0] else "NO"))
        out.extend(f"  - {line}" for line in held_out[1])
    errors = sum(1 for recs in records.values() for _, by in recs for o in by.values() if o.error)
    if errors:
        first = next(o.error for recs in records.values() for _, by in recs for o in by.values() if o.error)
        out.append(f"\n{errors} method calls raised; first: {first}")
    report = "\n".join(out)
    print(report)

    payload = {
        "benchmark": "retrieval_quality", "git": common.git_revision(), "seconds": round(time.time() - started, 1),
        "command": " ".join(sys.argv), "methods": {m: LABELS[m] for m in methods}, "refusal_rules": REFUSAL_RULE,
        "thresholds": thresholds, "verdict": {"ok": ok, "details": lines},
        "held_out_verdict": None if held_out is None else {"ok": held_out[0], "details": held_out[1]},
        "summary": {d: {m: s.as_dict() for m, s in by.items()} for d, by in summary.items()},
        "dev_by_language": _dicts(score(dev_recs, methods, key=lambda q: q.language)),
        "dev_by_kind": _dicts(score(dev_recs, methods, key=lambda q: q.kind if q.answerable else None)),
        "public_by_answer_type": _dicts(score(records["public"], methods,
                                              key=lambda q: q.kind if q.answerable else None)),
        "per_tenant": {schema: _dicts(score(recs, methods))["all"] for schema, recs in per_tenant.items()},
        "questions": {schema: [{"text": q.text, "relevant": sorted(q.relevant), "language": q.language,
                                "kind": q.kind, "unanswerable_kind": q.unanswerable_kind,
                                **{m: {"top5": o.ranked[:5], "refused": o.refused, "top_similarity": o.top_similarity,
                                       "related_hit": o.related_hit, "error": o.error,
                                       **({"dropped_by_threshold": o.dropped, "skipped_by_packing": o.skipped}
                                          if o.dropped is not None else {})} for m, o in by.items()}}
                               for q, by in recs] for schema, recs in per_tenant.items()},
        "report": report,
    }
    path = common.write_result("retrieval_quality", payload)
    print(f"\nwrote {path.relative_to(common.ROOT)} in {time.time() - started:.0f}s")
    return 0


def _dicts(groups):
    return {g: {m: s.as_dict() for m, s in by.items()} for g, by in groups.items()}


if __name__ == "__main__":
    sys.exit(main())
