"""Follow-up conversations through real chat turns: does a turn that only makes sense with the earlier ones get
answered as the customer meant it?

    RATIBA_DB_NAME=bench_followups .venv/bin/python bench/followups.py [--show-errors] [--label NAME]
        [--folds choose|report|all]

For every written business (bench/businesses/*.eval.yaml) each `followups` case is sent, turn by turn, in ONE chat
session through `conversations.services.turn_run` (extractive answerer, offline intent classifier, retrieval
pinned to hybrid as in the fold harness). Only the LAST turn is scored, by what its case expects:

- `relevant: [keys]`: answered (no refusal) and a cited key is among them (first citation relevant shown too);
- `facts: {services: [names]}`: answered from the facts (a `facts:services` citation) with exactly those rows:
  every expected name is in the answer and no other service name of the business is;
- `facts: {hours: true}`: a `facts:hours` citation, and every day the last turn names is in the answer;
- `handoff_contact: "<phone>"`: the session's hand-off carries that number and the turn is not a refusal.

A guard beside it, on the same businesses: every labelled unanswerable question asked alone (new session),
asked right after an answerable question (same session), and asked right after the business's first follow-up
case that opens with a statement ("We run a hotel in Nakuru town."; businesses with none are left out of that
column). Reading turns together must not turn a refusal into an answer, so the later columns should not be lower
than the first.

Businesses are reported by fold (bench/unseen_data.py): folds 3-4 (phone_repair, physio_clinic, bakery_shop) were
never used to choose anything; folds 0-2 are where the follow-up rule was looked at.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common  # noqa: E402
from bench.answer_quality import services_named  # noqa: E402
from bench.unseen_data import BUSINESSES_DIR, REPORT_FOLDS, load_own_businesses, written_folds  # noqa: E402


def load_cases(family: str) -> tuple[list[dict], list[dict], list[dict]]:
    """(follow-up cases, unanswerable questions, answerable `direct` questions) of one written business."""
    import yaml

    data = yaml.safe_load((BUSINESSES_DIR / f"{family}.eval.yaml").read_text())
    direct = [q for q in data.get("queries", []) if q.get("kind") == "direct" and q.get("relevant")]
    return data.get("followups", []), data.get("unanswerable", []), direct


def _digits(text: str) -> str:
    return re.sub(r"\D", "", text or "")


def score_case(case: dict, result, *, service_names: list[str], handoff_contacts: list[str]) -> tuple[bool, str]:
    """(passed, why not) for the last turn of one case."""
    from conversations.facts import format_date, resolve_dates, tenant_today

    expect = case["expect"]
    refused = result.refusal_reason is not None
    cited = [c["key"] for c in result.citations]
    if "handoff_contact" in expect:
        want = _digits(expect["handoff_contact"])
        attached = any(want and want in _digits(contact) for contact in handoff_contacts)
        if not attached:
            return False, f"contact not on a hand-off (contacts {handoff_contacts})"
        return (not refused), ("" if not refused else f"refused: {result.refusal_reason}")
    if refused:
        return False, f"refused: {result.refusal_reason}"
    if "relevant" in expect:
        ok = bool(set(expect["relevant"]) & set(cited))
        return ok, "" if ok else f"cited {cited}, expected one of {expect['relevant']}"
    facts = expect["facts"]
    if facts.get("services"):
        if "facts:services" not in cited:
            return False, f"no facts:services citation (cited {cited})"
        # rows quoted as bench/answer_quality.py counts them (`Name: ...` lines): a row's description that
        # mentions another row ("A Men's Haircut plus a beard trim") does not quote that row
        quoted = services_named(result.answer, service_names)
        expected = set(facts["services"])
        if quoted != expected:
            return False, f"rows {sorted(quoted)}, expected {sorted(expected)}"
        return True, ""
    if facts.get("hours"):
        if "facts:hours" not in cited:
            return False, f"no facts:hours citation (cited {cited})"
        days = resolve_dates(case["turns"][-1], today=tenant_today())
        missing = [label for day, label in days if format_date(day) not in result.answer]
        return (not missing), ("" if not missing else f"days {missing} not in the answer")
    return False, f"unknown expectation {expect}"


def run(*, show_errors: bool, reseed: bool, mode: str, only: str = "all") -> dict:
    from django.db import connection

    from conversations import followups, services
    from conversations.models import HandoffRequest, Session
    from knowledge.models import Service

    folds = written_folds()
    per_business: dict[str, dict] = {}
    totals: dict[str, Counter] = defaultdict(Counter)
    errors: list[str] = []
    latencies: list[float] = []
    for business in load_own_businesses():
        fold = folds[business.schema]
        group = "report" if fold in REPORT_FOLDS else "choose"
        if only != "all" and group != only:
            continue
        row, how = common.seed_tenant(business, reseed=reseed)
        if mode != "auto":
            common.pin_mode(row, mode)
        connection.set_tenant(row)
        try:
            # Each run starts from no conversations, so the figures describe this run only.
            HandoffRequest.objects.all().delete()
            Session.objects.all().delete()
            services.turn_run(services.TurnInput(message="warm up the model"))
            names = list(Service.objects.values_list("name", flat=True))
            cases, unanswerable, direct = load_cases(business.family)
            counts: Counter = Counter()
            for case in cases:
                session_id = None
                result = None
                for text in case["turns"]:
                    started = time.perf_counter()
                    result = services.turn_run(services.TurnInput(message=text, session_id=session_id))
                    latencies.append((time.perf_counter() - started) * 1000)
                    session_id = result.session_id
                contacts = list(HandoffRequest.objects.filter(session__public_id=session_id)
                                .values_list("contact", flat=True))
                ok, why = score_case(case, result, service_names=names, handoff_contacts=contacts)
                kind = next(iter(case["expect"]))
                kind = next(iter(case["expect"]["facts"])) if kind == "facts" else kind  # services | hours
                first_relevant = bool(result.citations) and result.citations[0]["key"] in set(
                    case["expect"].get("relevant", []))
                for bucket in (counts, totals[group], totals[f"{group}:{kind}"], totals["all"], totals[f"all:{kind}"]):
                    bucket["n"] += 1
                    bucket["passed"] += int(ok)
                    if kind == "relevant":
                        bucket["n_relevant"] += 1
                        bucket["first_relevant"] += int(first_relevant)
                if ok and kind == "relevant" and not first_relevant:
                    errors.append(f"[{business.family}/{group}] {case['turns']} -> first citation "
                                  f"{result.citations[0]['key']!r} not among {case['expect']['relevant']}")
                if not ok:
                    errors.append(f"[{business.family}/{group}] {case['turns']} -> intent={result.intent} "
                                  f"refusal={result.refusal_reason}: {why}\n      answer: {result.answer[:220]!r}")
            # The guard: an unanswerable question alone, right after an answerable one, and right after the first
            # statement that opens one of the business's follow-up cases ("We run a hotel in Nakuru town.").
            topic = direct[0]["text"] if direct else None
            statement = next((case["turns"][0] for case in cases
                              if not followups.asks_something(case["turns"][0])), None)
            for item in unanswerable:
                alone = services.turn_run(services.TurnInput(message=item["text"]))
                counts["unanswerable"] += 1
                counts["refused_alone"] += int(alone.refusal_reason is not None)
                if topic is not None:
                    first = services.turn_run(services.TurnInput(message=topic))
                    after = services.turn_run(services.TurnInput(message=item["text"], session_id=first.session_id))
                    counts["refused_after_topic"] += int(after.refusal_reason is not None)
                    if alone.refusal_reason is not None and after.refusal_reason is None:
                        errors.append(f"[{business.family}/{group}] guard: {topic!r} then {item['text']!r} answered "
                                      f"(refused alone), cited {[c['key'] for c in after.citations]}")
                if statement is not None:
                    told = services.turn_run(services.TurnInput(message=statement))
                    after = services.turn_run(services.TurnInput(message=item["text"], session_id=told.session_id))
                    counts["after_statement"] += 1
                    counts["refused_after_statement"] += int(after.refusal_reason is not None)
                    if alone.refusal_reason is not None and after.refusal_reason is None:
                        errors.append(f"[{business.family}/{group}] guard: {statement!r} then {item['text']!r} "
                                      f"answered (refused alone), cited {[c['key'] for c in after.citations]}")
            for key in ("unanswerable", "refused_alone", "refused_after_topic", "after_statement",
                        "refused_after_statement"):
                totals[group][key] += counts[key]
                totals["all"][key] += counts[key]
            per_business[business.family] = {"fold": fold, "group": group, "seeded": how, **dict(counts)}
            print(f"{business.family:<18} fold {fold} ({group}): follow-ups {counts['passed']}/{counts['n']}, "
                  f"unanswerable refused alone {counts['refused_alone']}/{counts['unanswerable']}, after a topic "
                  f"{counts['refused_after_topic']}/{counts['unanswerable']}", flush=True)
        finally:
            connection.set_schema_to_public()

    def share(bucket: str, field: str = "passed", n: str = "n") -> float | None:
        c = totals[bucket]
        return round(c[field] / c[n], 4) if c[n] else None

    latencies.sort()
    report = {
        "mode": mode,
        "groups": {group: {"n": totals[group]["n"], "pass_rate": share(group),
                           "first_citation_relevant": share(group, "first_relevant", "n_relevant"),
                           "by_kind": {kind.split(":", 1)[1]: {"n": totals[kind]["n"], "pass_rate": share(kind)}
                                       for kind in sorted(totals) if kind.startswith(f"{group}:")},
                           "unanswerable": totals[group]["unanswerable"],
                           "refused_alone": share(group, "refused_alone", "unanswerable"),
                           "refused_after_topic": share(group, "refused_after_topic", "unanswerable"),
                           "after_statement": totals[group]["after_statement"],
                           "refused_after_statement": share(group, "refused_after_statement", "after_statement")}
                   for group in ("report", "choose", "all")},
        "businesses": per_business,
        "turn_ms": {"p50": common.percentile(latencies, 50), "p95": common.percentile(latencies, 95)},
        "revision": common.git_revision(),
    }
    print_report(report)
    if show_errors:
        print("\nMisses\n")
        print("\n".join(errors))
    return report


def print_report(r: dict) -> None:
    print(f"\nFollow-up cases through real chat turns (extractive, offline intent, retrieval {r['mode']}; "
          f"turn p50 {r['turn_ms']['p50']:.0f} ms, p95 {r['turn_ms']['p95']:.0f} ms; revision {r['revision']})")
    labels = {"report": "report folds 3-4 (never chosen on)", "choose": "choosing folds 0-2", "all": "all eight"}
    print(common.table(
        ["businesses", "cases", "pass rate", "relevant", "facts: services", "facts: hours", "handoff contact",
         "first citation relevant"],
        [[labels[g], v["n"], v["pass_rate"], *(v["by_kind"].get(k, {}).get("pass_rate")
                                               for k in ("relevant", "services", "hours", "handoff_contact")),
          v["first_citation_relevant"]] for g, v in r["groups"].items()]))
    print(common.table(["guard: unanswerable questions", "n", "refused alone", "refused after a topic",
                        "n after a statement", "refused after a statement"],
                       [[labels[g], v["unanswerable"], v["refused_alone"], v["refused_after_topic"],
                         v.get("after_statement"), v.get("refused_after_statement")]
                        for g, v in r["groups"].items()]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reseed", action="store_true", help="drop and re-seed every business first")
    parser.add_argument("--show-errors", action="store_true")
    parser.add_argument("--mode", choices=["hybrid", "inline", "auto"], default="hybrid")
    parser.add_argument("--label", default="followups", help="result file name (bench/results/<label>.json)")
    parser.add_argument("--folds", choices=["choose", "report", "all"], default="all",
                        help="run the choosing or the report businesses only (choose a setting on the first)")
    args = parser.parse_args()
    os.environ.setdefault("RATIBA_DB_NAME", "bench_followups")
    os.environ["LLM_PROVIDER"] = "extractive"
    os.environ["INTENT_CLASSIFIER"] = "offline"
    common.setup_django()
    report = run(show_errors=args.show_errors, reseed=args.reseed, mode=args.mode, only=args.folds)
    path = common.write_result(args.label, report)
    print(f"\nwritten {path.relative_to(common.ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
