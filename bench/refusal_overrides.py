"""What the refusal decision's rules add to the model, on the cached pools of bench/unseen_data.py.

    RATIBA_DB_NAME=bench_unseen .venv/bin/python bench/unseen_data.py          # first (cached after)
    RATIBA_DB_NAME=bench_unseen .venv/bin/python bench/refusal_overrides.py [--folds choose|report] [--show]

Every cached question is decided again by `relevance.decide` over the pool retrieval gave it. A rule answers
only where the model refused (`Decision.answered_by`: place_title, reach_detail, payment_method, about_title,
booking_title), so the model alone is the same run read with that rule's answers taken back: both columns come
from one process on the same pools. Rates as in bench/fit_refusal.py: false refusals of answerable questions,
refusals of near misses (labelled and synthetic) and of generic off-topic requests; per rule, how many
answerable and unanswerable questions it answered, and how many of those answerable ones have a labelled
snippet as the rule's pick.
"""
from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common, unseen_data  # noqa: E402
from bench.common import fmt, table  # noqa: E402
from bench.fit_refusal import refusal_rows  # noqa: E402

FOLD_SETS = {"choose": unseen_data.CHOOSE_FOLDS, "report": unseen_data.REPORT_FOLDS}
RULES = ("place_title", "reach_detail", "payment_method", "about_title", "booking_title")  # relevance.decide's answered_by besides "model"


def decide_all(runs) -> list:
    """The product's decision for every run, as retrieval would make it today."""
    from knowledge.retrieval.pipeline import prepare_query
    from knowledge.retrieval.relevance import decide

    decisions = []
    for run in runs:
        prepared = prepare_query(run.read_text or run.text)
        decisions.append(decide(run.pool, language=prepared.language.language, question=prepared.text,
                                words=prepared.english_words, read_text=prepared.embedding_text))
    return decisions


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folds", choices=sorted(FOLD_SETS), default="choose")
    parser.add_argument("--show", action="store_true", help="print every question a rule answered")
    args = parser.parse_args()
    common.setup_django(migrate=False)
    runs = [run for run in unseen_data.load_runs() if run.fold in FOLD_SETS[args.folds]]
    decisions = decide_all(runs)
    with_rules = [d.refusal_reason is not None for d in decisions]
    model_only = [d.refusal_reason is not None or d.answered_by != "model" for d in decisions]
    rows = []
    for label, refused in (("model alone", model_only), ("model + rules (product)", with_rules)):
        for scope, subset in (("written", lambda r: r.dataset != "public"), ("all", lambda r: True)):
            chosen = [i for i, run in enumerate(runs) if subset(run)]
            rates = refusal_rows([runs[i] for i in chosen], [refused[i] for i in chosen])
            rows.append([label, scope, rates["answerable"], fmt(rates["false_refusals"]),
                         fmt(rates["near_miss_labelled"]), fmt(rates["near_miss_synthetic"]), fmt(rates["generic"])])
    print(table(["decider", "businesses", "answerable", "false refusals", "near misses (labelled) refused",
                 "near misses (synthetic) refused", "generic refused"], rows,
                title=f"Refusal rules on folds {args.folds} ({common.git_revision()})"))
    fired: Counter = Counter()
    for run, decision in zip(runs, decisions):
        if decision.answered_by == "model":
            continue
        kind = "answerable" if run.answerable else (run.unanswerable_kind or "unanswerable")
        fired[(decision.answered_by, kind)] += 1
        if args.show:
            print(f"  {decision.answered_by:<12} {kind:<10} {run.business:<28} {run.text[:90]!r}")
    print(table(["rule", "answerable answered", "near misses answered (labelled)", "synthetic", "generic"],
                [[rule, fired[(rule, "answerable")], fired[(rule, "in_domain")], fired[(rule, "synthetic")],
                  fired[(rule, "generic")]] for rule in RULES]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
