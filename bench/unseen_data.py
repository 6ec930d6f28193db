"""Every labelled business, its folds, and the retrieval runs the answer-or-refuse bench learns from.

    .venv/bin/python bench/unseen_data.py            # seed what is missing, run every question, cache pools
    .venv/bin/python bench/unseen_data.py --reseed   # drop and re-seed every business first

Businesses: the development tenant (aria_spa), the 89 public tenants (20 core, 69 minor) and the ones the
team wrote (bench/businesses/). Each is put in one of five folds BY BUSINESS (never by question):
folds 0-2 are where anything is fitted or chosen, folds 3-4 are only reported on (FOLDS below).

For every business it runs, through the product's own `retrieve` (pinned hybrid, real MiniLM):
- each answerable question (ranking, false refusals);
- each labelled unanswerable question (in-domain near misses, and the public sets' generic off-topic ones);
- a synthetic near miss per answerable question: the same question with the snippets that answer it taken
  out of the knowledge base (a retrieval filter), so what comes back is related but does not answer.
  Cases where a remaining snippet is a near-duplicate of a removed one (title similarity >= DUPLICATE_TITLE)
  are dropped: that snippet may still answer.
The candidate pool the refusal decision saw is cached (bench/results/unseen_pools.pkl), with the
vector-only ranking (cosine over every eligible snippet) for the ranking comparison.
"""
from __future__ import annotations

import argparse
import hashlib
import pickle
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common  # noqa: E402
from bench.common import Query, TenantData  # noqa: E402

BUSINESSES_DIR = Path(__file__).resolve().parent / "businesses"
POOLS_PATH = common.RESULTS_DIR / "unseen_pools.pkl"
N_FOLDS = 5
CHOOSE_FOLDS = (0, 1, 2)
REPORT_FOLDS = (3, 4)
DUPLICATE_TITLE = 0.85
ANSWERABLE_KINDS = {"direct", "paraphrase", "typo", "swahili", "multi", "factual", "subjective_partial", "how_to"}


# ----------------------------------------------------------------------------- businesses and folds
def load_own_businesses() -> list[TenantData]:
    """The businesses in bench/businesses/ (seed YAML + labelled questions)."""
    import yaml

    tenants = []
    for seed_path in sorted(BUSINESSES_DIR.glob("*.yaml")):
        if seed_path.name.endswith(".eval.yaml"):
            continue
        eval_path = seed_path.with_name(seed_path.stem + ".eval.yaml")
        if not eval_path.exists():
            continue
        seed = yaml.safe_load(seed_path.read_text())
        evaluation = yaml.safe_load(eval_path.read_text())
        block = seed["tenant"]
        tenant = TenantData(schema="own_" + block["schema"][:50], name=block["name"], domain=f"own-{block['domain']}",
                            dataset="own", family=block["schema"], seed_yaml=seed_path)
        for item in evaluation.get("queries", []):
            if item.get("kind") not in ANSWERABLE_KINDS or not item.get("relevant"):
                continue
            tenant.queries.append(Query(text=item["text"], relevant=frozenset(item["relevant"]),
                                        language=item.get("language", "en"), kind=item["kind"],
                                        intent=item.get("intent", "other")))
        for item in evaluation.get("unanswerable", []):
            tenant.queries.append(Query(text=item["text"], relevant=frozenset(), language=item.get("language", "en"),
                                        kind="unanswerable", unanswerable_kind="in_domain"))
        tenant.fold = evaluation.get("fold")
        tenants.append(tenant)
    return tenants


def all_businesses() -> list[TenantData]:
    dev, _skipped = common.load_dev_tenant()
    return [dev, *load_own_businesses(), *common.load_public_tenants("core"), *common.load_public_tenants("minor")]


def assign_folds(businesses: list[TenantData]) -> dict[str, int]:
    """Business schema -> fold. Written businesses (the development tenant first) are dealt round-robin so
    every fold has some; public ones by a hash of their name. The development tenant lands in fold 0.

    A written business whose eval file names its `fold` goes there and is left out of the deal: businesses
    written later join the choosing folds without moving the first ones (whose folds earlier figures used).
    """
    folds: dict[str, int] = {b.schema: int(b.fold) for b in businesses if getattr(b, "fold", None) is not None}
    written = [b for b in businesses if b.dataset == "dev"] + sorted(
        (b for b in businesses if b.dataset == "own" and b.schema not in folds),
        key=lambda b: hashlib.sha1(b.schema.encode()).hexdigest())
    for index, business in enumerate(written):
        folds[business.schema] = index % N_FOLDS
    for business in businesses:
        if business.schema not in folds:
            folds[business.schema] = int(hashlib.sha1(business.schema.encode()).hexdigest(), 16) % N_FOLDS
    return folds


def written_folds() -> dict[str, int]:
    """Folds of the written businesses (the development tenant and bench/businesses/), without reading the
    public tenants: assign_folds deals written businesses apart from them, so the folds are the same."""
    dev, _skipped = common.load_dev_tenant()
    return assign_folds([dev, *load_own_businesses()])


# ----------------------------------------------------------------------------- cached runs
@dataclass
class PoolCandidate:
    """What the decision and the ranking read of one candidate (a picklable copy of the product's)."""

    key: str
    title: str
    body: str
    category: str
    status: str
    similarity: float | None
    title_similarity: float | None
    keyword_rank: float
    matched_terms: int
    heading_terms: int
    query_terms: int
    idf_coverage: float
    source: str


@dataclass
class Run:
    """One question asked of one business (as labelled, or as a synthetic near miss)."""

    business: str
    dataset: str
    fold: int
    text: str
    language: str
    kind: str  # the question's kind, or "unanswerable" / "near_miss"
    unanswerable_kind: str  # "" | in_domain | generic | synthetic
    relevant: frozenset[str]
    removed: tuple[str, ...]
    ranked: list[str]  # the product's primary results
    vector_ranked: list[str]  # cosine over every eligible snippet (the vector-only baseline)
    pool: list[PoolCandidate]
    detected_language: str
    embedding_text: str
    content_text: str
    previous_refused: bool  # the refusal decision of the code that made the run
    query_vector: list[float] = field(default_factory=list)
    read_text: str = ""  # the text retrieval read: the question, with the knowledge's spelling of misspelt words

    @property
    def answerable(self) -> bool:
        return bool(self.relevant)


def _pool_copy(candidates) -> list[PoolCandidate]:
    return [PoolCandidate(key=c.key, title=c.title, body=c.body, category=c.category, status=c.status,
                          similarity=c.similarity, title_similarity=c.title_similarity,
                          keyword_rank=c.keyword_rank, matched_terms=c.matched_terms, heading_terms=c.heading_terms,
                          query_terms=c.query_terms, idf_coverage=c.idf_coverage, source=c.source)
            for c in candidates]


def _eligible_vectors() -> tuple[list[str], list[str], "object", "object"]:
    """(keys, titles, snippet vectors, title vectors) of the tenant's answerable snippets."""
    import numpy as np
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f"SELECT key, title, embedding::text, title_embedding::text FROM knowledge_snippetversion "
                       f"WHERE {_ELIGIBLE} ORDER BY key")
        rows = cursor.fetchall()

    def parse(text):
        return [float(x) for x in text.strip("[]").split(",")] if text else [0.0] * 384

    return ([r[0] for r in rows], [r[1] for r in rows], np.array([parse(r[2]) for r in rows]),
            np.array([parse(r[3]) for r in rows]))


_ELIGIBLE = ("is_active AND role = 'retrieved' AND status <> 'draft' AND 'chat' = ANY(channels) "
             "AND (valid_from IS NULL OR valid_from <= current_date) "
             "AND (valid_until IS NULL OR valid_until >= current_date)")


def run_business(business: TenantData, fold: int) -> list[Run]:
    """Every question of one business, plus its synthetic near misses."""
    import numpy as np
    from django.db import connection

    from knowledge.embeddings import embed_query
    from knowledge.retrieval import pipeline
    from knowledge.retrieval.filters import Filters

    captured: dict = {}
    original_decide = pipeline.decide

    def capture(pool, *, language, **kwargs):
        captured["pool"] = _pool_copy(pool)
        return original_decide(pool, language=language, **kwargs)

    pipeline.decide = capture
    runs: list[Run] = []
    row = common.tenant_get_or_none(business.schema)
    connection.set_tenant(row)
    try:
        keys, _titles, vectors, title_vectors = _eligible_vectors()
        key_index = {key: i for i, key in enumerate(keys)}
        title_sims = title_vectors @ title_vectors.T

        def ask(query: Query, *, removed: tuple[str, ...], kind: str, unanswerable_kind: str) -> Run:
            keep = [k for k in keys if k not in removed]
            filters = Filters(keys=tuple(keep)) if removed else None
            result = pipeline.retrieve(intent="other", query=query.text, channel="chat", filters=filters,
                                       record=False)
            prepared = pipeline.with_spelling(pipeline.prepare_query(query.text))  # as retrieve read it
            raw_vector = np.array(embed_query(query.text))
            mask = np.array([k not in removed for k in keys])
            sims = np.where(mask, vectors @ raw_vector, -9.0)
            order = [keys[i] for i in np.argsort(-sims, kind="stable") if mask[i]][:10]
            return Run(business=business.schema, dataset=business.dataset, fold=fold, text=query.text,
                       language=query.language, kind=kind, unanswerable_kind=unanswerable_kind,
                       relevant=frozenset() if removed else query.relevant, removed=removed,
                       ranked=[s.key for s in result.primary], vector_ranked=order, pool=captured["pool"],
                       detected_language=prepared.language.language, embedding_text=prepared.embedding_text,
                       content_text=prepared.query.content_text,
                       previous_refused=result.refusal_reason is not None, read_text=prepared.text,
                       query_vector=embed_query(prepared.embedding_text))

        for query in business.queries:
            if query.answerable:
                runs.append(ask(query, removed=(), kind=query.kind, unanswerable_kind=""))
                removed = tuple(sorted(k for k in query.relevant if k in key_index))
                if not removed or len(removed) == len(keys):
                    continue
                others = [i for k, i in key_index.items() if k not in removed]
                nearest = max(title_sims[key_index[k], others].max() for k in removed)
                if nearest >= DUPLICATE_TITLE:
                    continue  # a remaining snippet is a near-duplicate: it may still answer
                runs.append(ask(query, removed=removed, kind="near_miss", unanswerable_kind="synthetic"))
            else:
                runs.append(ask(query, removed=(), kind="unanswerable",
                                unanswerable_kind=query.unanswerable_kind or "in_domain"))
    finally:
        pipeline.decide = original_decide
        connection.set_schema_to_public()
    return runs


def collect(*, reseed: bool, only: set[str] | None = None) -> list[Run]:
    """Seed (where needed) and run every business; returns and caches every run."""
    businesses = all_businesses()
    folds = assign_folds(businesses)
    cached: dict[str, list[Run]] = {}
    if POOLS_PATH.exists() and not reseed:
        for run in _unpickle(POOLS_PATH.read_bytes()):
            cached.setdefault(run.business, []).append(run)
    runs: list[Run] = []
    for business in businesses:
        if only is not None and business.schema not in only:
            runs.extend(cached.get(business.schema, []))  # leave it as cached (or absent)
            continue
        if only is None and business.schema in cached:
            runs.extend(cached[business.schema])
            continue
        started = time.perf_counter()
        row, how = common.seed_tenant(business, reseed=reseed)
        common.pin_mode(row, "hybrid")
        business_runs = run_business(business, folds[business.schema])
        runs.extend(business_runs)
        print(f"{business.schema:<48} fold {folds[business.schema]}  {how:<8} {len(business_runs):>4} runs "
              f"in {time.perf_counter() - started:5.1f} s", flush=True)
        # Saved after every business, with what is still only cached, so an interrupted run keeps its work.
        done = {run.business for run in runs}
        pending = [run for schema, cached_runs in cached.items() if schema not in done for run in cached_runs]
        POOLS_PATH.parent.mkdir(parents=True, exist_ok=True)
        POOLS_PATH.write_bytes(pickle.dumps(runs + pending))
    POOLS_PATH.write_bytes(pickle.dumps(runs))
    return runs


class _Unpickler(pickle.Unpickler):
    """Runs pickled when this file ran as __main__ name their classes there."""

    def find_class(self, module, name):
        if module == "__main__":
            module = __name__
        return super().find_class(module, name)


def _unpickle(data: bytes) -> list[Run]:
    import io

    return _Unpickler(io.BytesIO(data)).load()


def load_runs() -> list[Run]:
    return _unpickle(POOLS_PATH.read_bytes())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reseed", action="store_true", help="drop and re-seed every business first")
    parser.add_argument("--only", nargs="*", help="(re-)run only these business schemas; leave the rest as cached")
    args = parser.parse_args()
    common.setup_django()
    started = time.perf_counter()
    runs = collect(reseed=args.reseed, only=set(args.only) if args.only else None)
    print(f"{len(runs)} runs from {len({r.business for r in runs})} businesses in "
          f"{time.perf_counter() - started:.0f} s -> {POOLS_PATH.relative_to(common.ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
