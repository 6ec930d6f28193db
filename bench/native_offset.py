"""Choose the Swahili native-reading offset on the choosing folds' written businesses; report on the others.

    RATIBA_DB_NAME=bench_answers .venv/bin/python bench/native_offset.py

A Swahili question is compared, as written, with the owner's Swahili snippets, less `fusion.NATIVE_OFFSET`
(two Swahili texts share function words whatever they say). The offset was chosen in the seventh sitting on
the pools of the businesses written then; an owner's Swahili-only snippet can since be seen drawing Swahili
questions it does not answer. Only Swahili questions read the offset, so only they are asked: every Swahili
question of each written business (answerable ones and labelled unanswerable ones), through real chat turns
as bench/answer_quality.py asks them (extractive answerer, offline intent, hybrid retrieval), once per offset of
the grid, the offset set on the module for the run. Per offset: answerable questions answered with a relevant
first citation (refusals count as misses) and unanswerable ones refused. Chosen: the offset with the most
first citations on folds 0-2 whose unanswerable refusals there do not fall; folds 3-4 are printed for the
chosen offset and the current one, and were not used to choose.
"""
from __future__ import annotations

import argparse
import os
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common  # noqa: E402
from bench.answer_quality import BUSINESSES_DIR, load_business  # noqa: E402
from bench.unseen_data import REPORT_FOLDS, written_folds  # noqa: E402

OFFSETS = (0.2, 0.25, 0.3, 0.35, 0.4)


def swahili_questions(seed_path: Path) -> tuple[common.TenantData, list[dict]]:
    """A business and its Swahili questions (answerable and unanswerable), as answer_quality loads them."""
    tenant, items, _swahili, _names = load_business(seed_path)
    return tenant, [item for item in items if item.get("language") == "sw"
                    and (item.get("relevant") or item["group"] == "unanswerable")]


def ask_all(businesses: list[tuple[common.TenantData, list[dict]]], offset: float) -> dict[str, list[tuple]]:
    """Per business, (relevant keys, unanswerable?, refused, first cited key) for each Swahili question."""
    from django.db import connection

    from conversations import services
    from conversations.models import HandoffRequest, Session
    from knowledge.retrieval import fusion

    fusion.NATIVE_OFFSET = offset
    out: dict[str, list[tuple]] = {}
    for tenant, items in businesses:
        row, _how = common.seed_tenant(tenant, reseed=False)
        common.pin_mode(row, "hybrid")
        connection.set_tenant(row)
        try:
            HandoffRequest.objects.all().delete()
            Session.objects.all().delete()
            answers = []
            for item in items:
                result = services.turn_run(services.TurnInput(message=item["text"], channel="chat"))
                cited = [c["key"] for c in result.citations]
                answers.append((frozenset(item.get("relevant") or ()), item["group"] == "unanswerable",
                                result.refusal_reason is not None, cited[0] if cited else None))
            out[tenant.family] = answers
        finally:
            connection.set_schema_to_public()
    return out


def figures(answers: list[tuple]) -> tuple[float, float, int, int]:
    """(first citation relevant over answerable, unanswerable refused, n answerable, n unanswerable)."""
    answerable = [a for a in answers if not a[1]]
    unanswerable = [a for a in answers if a[1]]
    first = sum(1 for relevant, _, refused, key in answerable if not refused and key in relevant)
    refused = sum(1 for _, _, was_refused, _ in unanswerable if was_refused)
    return (first / max(len(answerable), 1), refused / max(len(unanswerable), 1), len(answerable),
            len(unanswerable))


def main() -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    os.environ.setdefault("RATIBA_DB_NAME", "bench_answers")
    os.environ["LLM_PROVIDER"] = "extractive"
    os.environ["INTENT_CLASSIFIER"] = "offline"
    common.setup_django()
    from knowledge.retrieval import fusion

    current = fusion.NATIVE_OFFSET
    folds = written_folds()
    groups: dict[str, list] = defaultdict(list)
    for seed_path in sorted(BUSINESSES_DIR.glob("*.yaml")):
        if seed_path.name.endswith(".eval.yaml"):
            continue
        tenant, items = swahili_questions(seed_path)
        groups["report" if folds[tenant.schema] in REPORT_FOLDS else "choose"].append((tenant, items))

    def pooled(per_business: dict[str, list[tuple]]) -> list[tuple]:
        return [answer for answers in per_business.values() for answer in answers]

    rows, chosen_scores = [], {}
    for offset in OFFSETS:
        first, refused, n, n_un = figures(pooled(ask_all(groups["choose"], offset)))
        chosen_scores[offset] = (first, refused)
        rows.append([f"{offset:.2f}", n, first, n_un, refused])
    print(common.table(["offset", "answerable", "first citation relevant", "unanswerable", "refused"], rows,
                       title=f"Choosing folds 0-2: Swahili questions of {len(groups['choose'])} businesses"))
    floor = chosen_scores[current][1]
    chosen = max((o for o, (_, refused) in chosen_scores.items() if refused >= floor),
                 key=lambda o: (chosen_scores[o][0], -abs(o - current)))
    print(f"\nchosen: {chosen:.2f} (current {current:.2f})\n")
    report = []
    for offset in dict.fromkeys((current, chosen)):
        first, refused, n, n_un = figures(pooled(ask_all(groups["report"], offset)))
        report.append([f"{offset:.2f}", n, first, n_un, refused])
    print(common.table(["offset", "answerable", "first citation relevant", "unanswerable", "refused"], report,
                       title=f"Report folds 3-4 (not chosen on): {len(groups['report'])} businesses"))
    fusion.NATIVE_OFFSET = current
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
