"""Choose the answer-type boost of the ranking on the choosing folds; report it on the report folds.

    RATIBA_DB_NAME=bench_unseen .venv/bin/python bench/answer_type_boost.py

Reads the pools of bench/unseen_data.py (run it first). Each answerable question's candidates are fused again
with the product's own `fuse` and `rank`, with a candidate holding the kind of answer the question asks for
(a price for "how much", a place for "where": knowledge.retrieval.answer_types) lifted by each weight tried.
The weight with the best MRR on the choosing folds' written businesses, not worse than no boost on their
public tenants, is the one to set as `fusion.ANSWER_TYPE_BOOST`; the report folds are printed for that
weight and for no boost, and were not used to choose.
"""
from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common  # noqa: E402
from bench.unseen_data import CHOOSE_FOLDS, load_runs  # noqa: E402

WEIGHTS = (0.0, 0.02, 0.04, 0.06, 0.08, 0.1)


def reranked(run, *, weight: float) -> list[str]:
    """The run's candidates fused and ranked as the product does, with the answer-type boost at `weight`."""
    from knowledge.retrieval.answer_types import answer_types
    from knowledge.retrieval.candidates import Candidate
    from knowledge.retrieval.fusion import Weights, fuse, rank

    candidates = [Candidate(id=i, key=p.key, version=1, title=p.title, body=p.body, category=p.category,
                            status=p.status, token_count=1, similarity=p.similarity,
                            title_similarity=p.title_similarity, keyword_rank=p.keyword_rank,
                            matched_terms=p.matched_terms, heading_terms=p.heading_terms, query_terms=p.query_terms,
                            idf_coverage=p.idf_coverage, source=p.source) for i, p in enumerate(run.pool)]
    fuse(candidates, Weights(), types=answer_types(run.read_text or run.text), type_boost=weight)
    return list(dict.fromkeys(c.key for c in rank(candidates)))


def figures(runs, *, weight: float) -> tuple[float, float, int]:
    """(hit@1, MRR, n) over the answerable runs."""
    hits, reciprocal = 0, 0.0
    for run in runs:
        order = reranked(run, weight=weight)
        rank_of = next((i for i, key in enumerate(order[:10]) if key in run.relevant), None)
        if rank_of is not None:
            hits += rank_of == 0
            reciprocal += 1 / (rank_of + 1)
    return hits / len(runs), reciprocal / len(runs), len(runs)


def main() -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    common.setup_django(default_db="bench_unseen", migrate=False)
    runs = [run for run in load_runs() if run.relevant and not run.unanswerable_kind]
    groups: dict[tuple[str, str], list] = defaultdict(list)
    for run in runs:
        groups[("choose" if run.fold in CHOOSE_FOLDS else "report",
                "written" if run.dataset == "own" else "public")].append(run)
    rows, chosen, best = [], 0.0, None
    for weight in WEIGHTS:
        written = figures(groups[("choose", "written")], weight=weight)
        public = figures(groups[("choose", "public")], weight=weight)
        rows.append([f"{weight:.2f}", *written[:2], *public[:2]])
        baseline_public = rows[0][4]
        if public[1] >= baseline_public and (best is None or written[1] > best):
            chosen, best = weight, written[1]
    print(common.table(["boost", "written hit@1", "written MRR", "public hit@1", "public MRR"], rows,
                       title=f"Choosing folds: written {len(groups[('choose', 'written')])}, public "
                             f"{len(groups[('choose', 'public')])} answerable questions"))
    print(f"\nchosen boost: {chosen:.2f}\n")
    report = []
    for weight in sorted({0.0, chosen}):
        for kind in ("written", "public"):
            hit1, mrr, n = figures(groups[("report", kind)], weight=weight)
            report.append([f"{weight:.2f}", kind, n, hit1, mrr])
    print(common.table(["boost", "businesses", "n", "hit@1", "MRR"], report, title="Report folds (not chosen on)"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
