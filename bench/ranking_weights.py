"""Choose the ranking's keyword weight and answer-type boost on the choosing folds; report on the others.

    RATIBA_DB_NAME=bench_unseen .venv/bin/python bench/ranking_weights.py

Reads the pools of bench/unseen_data.py (run it first). Each answerable question's candidates are fused again
with the product's own `fuse` and `rank`, for every keyword weight and answer-type boost of the grid (a
candidate holding the kind of answer the question asks for, a price for "how much", a place for "where":
knowledge.retrieval.answer_types, is lifted by the boost). Chosen: the pair with the best MRR on the
choosing folds' written businesses whose MRR on the choosing folds' public tenants stays within
PUBLIC_SLACK of the previous weights' (keyword 0.1, no boost). The report folds are printed for the chosen
pair and the previous one; they were not used to choose. Run of 2026-11-24 (docs/BENCHMARKS.md): the boost
(0.08) is `fusion.ANSWER_TYPE_BOOST`; the keyword weight it chose (0.2) did not carry over to the report
folds and the default stays 0.1.
"""
from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common  # noqa: E402
from bench.unseen_data import CHOOSE_FOLDS, load_runs  # noqa: E402

KEYWORD_WEIGHTS = (0.1, 0.15, 0.2, 0.25, 0.3)
TYPE_BOOSTS = (0.0, 0.04, 0.08)
PREVIOUS = (0.1, 0.0)
PUBLIC_SLACK = 0.002  # MRR the public FAQ tenants may lose for the written businesses' gain


def reranked(run, *, keyword: float, boost: float) -> list[str]:
    """The run's candidates fused and ranked as the product does, with this keyword weight and type boost."""
    from knowledge.retrieval.answer_types import answer_types
    from knowledge.retrieval.candidates import Candidate
    from knowledge.retrieval.fusion import Weights, fuse, rank

    candidates = [Candidate(id=i, key=p.key, version=1, title=p.title, body=p.body, category=p.category,
                            status=p.status, token_count=1, similarity=p.similarity,
                            title_similarity=p.title_similarity, keyword_rank=p.keyword_rank,
                            matched_terms=p.matched_terms, heading_terms=p.heading_terms, query_terms=p.query_terms,
                            idf_coverage=p.idf_coverage, source=p.source) for i, p in enumerate(run.pool)]
    fuse(candidates, Weights(keyword=keyword), types=answer_types(run.read_text or run.text), type_boost=boost)
    return list(dict.fromkeys(c.key for c in rank(candidates)))


def figures(runs, *, keyword: float, boost: float) -> tuple[float, float, int]:
    """(hit@1, MRR, n) over the answerable runs."""
    hits, reciprocal = 0, 0.0
    for run in runs:
        order = reranked(run, keyword=keyword, boost=boost)
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
    rows, scores = [], {}
    for keyword in KEYWORD_WEIGHTS:
        for boost in TYPE_BOOSTS:
            written = figures(groups[("choose", "written")], keyword=keyword, boost=boost)
            public = figures(groups[("choose", "public")], keyword=keyword, boost=boost)
            scores[(keyword, boost)] = (written[1], public[1])
            rows.append([f"{keyword:.2f}", f"{boost:.2f}", *written[:2], *public[:2]])
    floor = scores[PREVIOUS][1] - PUBLIC_SLACK
    chosen = max((pair for pair, (_, public) in scores.items() if public >= floor), key=lambda pair: scores[pair][0])
    print(common.table(["keyword", "type boost", "written hit@1", "written MRR", "public hit@1", "public MRR"], rows,
                       title=f"Choosing folds: written {len(groups[('choose', 'written')])}, public "
                             f"{len(groups[('choose', 'public')])} answerable questions"))
    print(f"\nchosen: keyword weight {chosen[0]:.2f}, answer-type boost {chosen[1]:.2f}\n")
    report = []
    for keyword, boost in (PREVIOUS, chosen):
        for kind in ("written", "public"):
            hit1, mrr, n = figures(groups[("report", kind)], keyword=keyword, boost=boost)
            report.append([f"{keyword:.2f}", f"{boost:.2f}", kind, n, hit1, mrr])
    print(common.table(["keyword", "type boost", "businesses", "n", "hit@1", "MRR"], report,
                       title="Report folds (not chosen on)"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
