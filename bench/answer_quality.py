"""Answer quality on the written businesses: real chat turns with the extractive answerer.

    RATIBA_DB_NAME=bench_answers .venv/bin/python bench/answer_quality.py [--folds report|choose|all]
        [--baseline FILE.json] [--show-misses] [--reseed]

Every business in bench/businesses/ is seeded with `seed_knowledge` (bench/common.py seed_tenant), pinned
to hybrid retrieval as bench/unseen_data.py pins it, and each question of its *.eval.yaml is sent as a
new chat session through `conversations.services.turn_run` (LLM_PROVIDER=extractive, offline intent
classifier). Figures are per fold set: `report` (folds 3-4 of bench/unseen_data.py, never used to choose
anything; the default), `choose` (folds 0-2) or `all`.

- first citation relevant: answerable questions (labelled `relevant` keys) that were answered, whose
  first citation is one of those keys;
- citation precision: of everything those answers cite, the share that is a relevant key (micro);
- multi-part questions citing every labelled source: answered `multi` questions (one labelled key per
  question they ask, as a rule) whose citations include all of their relevant keys;
- answers giving the kind of answer asked: answered English questions that ask a price, time, duration or
  place (`answer_types`) and are answered from the knowledge with a relevant first citation, whose answer
  holds that kind of answer (`gives_type`), e.g. an address for "where are you?";
- facts from the right rows: `structured` questions answered from the facts with exactly the labelled
  services (`Name: KES ...` lines) or, for an hours question, from the opening hours and no service row;
- answers quoting metadata: answers (to any question) containing a `Keywords:` authoring line;
- turns recording a hand-off: how many questions filed a booking, cancellation or move request for staff;
- framed in the question's language: answers opening with a framing phrase ("Here is what I found:",
  "Hiki ndicho nilichopata:") in the question's labelled language;
- Swahili in Swahili: Swahili questions one of whose relevant snippets has an owner-approved Swahili
  version, answered with text that reads as Swahili (the framing phrase and markers left out); and the
  same share among Swahili answers that cite a snippet with a Swahili version (what retrieval found).

With `--baseline FILE` (this script's JSON from another checkout) each figure is shown beside it.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common  # noqa: E402
from bench.unseen_data import BUSINESSES_DIR, CHOOSE_FOLDS, REPORT_FOLDS  # noqa: E402

FOLD_SETS = {"report": REPORT_FOLDS, "choose": CHOOSE_FOLDS, "all": tuple(range(5))}
_METADATA = re.compile(r"\bkeywords\s*:", re.I)
_MARKERS = re.compile(r"\[\d+(?:\s*,\s*\d+)*\]")


@dataclass
class Asked:
    """One question, how it was answered and what it should have been answered from."""

    business: str
    fold: int
    group: str  # answerable | structured | unanswerable
    kind: str
    language: str
    text: str
    relevant: list[str]
    facts: dict
    has_sw_version: bool  # one of the relevant snippets has an owner-approved Swahili version
    cites_sw_version: bool = False  # the answer cites a snippet that has one
    intent: str = ""
    refused: bool = False
    cited: list[str] = field(default_factory=list)
    answer: str = ""
    handoff: str = ""  # the kind of hand-off the turn recorded, if any


def load_business(seed_path: Path) -> tuple[common.TenantData, list[dict], set[str], list[str]]:
    """(tenant to seed, labelled questions, keys with a Swahili version, every service name)."""
    import yaml

    seed = yaml.safe_load(seed_path.read_text())
    evaluation = yaml.safe_load(seed_path.with_name(seed_path.stem + ".eval.yaml").read_text())
    block = seed["tenant"]
    tenant = common.TenantData(schema="own_" + block["schema"][:50], name=block["name"],
                               domain=f"own-{block['domain']}", dataset="own", family=block["schema"],
                               seed_yaml=seed_path)
    swahili = {s["key"] for s in seed.get("snippets", []) if ((s.get("translations") or {}).get("sw") or {}).get("body")}
    names = [s["name"] for s in seed.get("services", [])]
    items = [dict(q, group="structured" if q.get("kind") == "structured" else "answerable")
             for q in evaluation.get("queries", []) if q.get("relevant") or q.get("kind") == "structured"]
    items += [dict(u, group="unanswerable", kind="unanswerable", relevant=[])
              for u in evaluation.get("unanswerable", [])]
    return tenant, items, swahili, names


def ask_business(seed_path: Path, fold: int, *, reseed: bool) -> tuple[list[Asked], list[str]]:
    from django.db import connection

    from conversations import services
    from conversations.models import HandoffRequest, Session

    tenant, items, swahili, names = load_business(seed_path)
    row, _how = common.seed_tenant(tenant, reseed=reseed)
    common.pin_mode(row, "hybrid")
    connection.set_tenant(row)
    asked: list[Asked] = []
    try:
        HandoffRequest.objects.all().delete()
        Session.objects.all().delete()
        for item in items:
            relevant = list(item.get("relevant") or [])
            result = services.turn_run(services.TurnInput(message=item["text"], channel="chat"))
            asked.append(Asked(
                business=tenant.family, fold=fold, group=item["group"], kind=item.get("kind", ""),
                language=item.get("language", "en"), text=item["text"], relevant=relevant,
                facts=item.get("facts") or {}, has_sw_version=bool(set(relevant) & swahili),
                intent=result.intent, refused=result.refusal_reason is not None,
                cited=[c["key"] for c in result.citations], answer=result.answer,
                cites_sw_version=any(c["key"] in swahili for c in result.citations),
                handoff=(result.meta.get("handoff") or {}).get("kind", "")))
    finally:
        connection.set_schema_to_public()
    return asked, names


# ----------------------------------------------------------------------------- scoring


def services_named(answer: str, names: list[str]) -> set[str]:
    """Service rows an answer quotes: the facts line starts `Name: ` (longest names first, no double count)."""
    found = set()
    remaining = answer
    for name in sorted(names, key=len, reverse=True):
        if f"{name}:" in remaining:
            found.add(name)
            remaining = remaining.replace(f"{name}:", " ")
    return found


def answer_body(answer: str) -> str:
    """The answer without its framing phrase (everything up to the first colon) and citation markers."""
    from conversations import i18n

    text = answer
    for language in i18n.SUPPORTED_LANGUAGES:
        for name in ("found", "found_facts"):
            text = text.replace(i18n.phrase(name, language=language), " ")
        note = i18n.phrase("source_language_note", language=language)
        if note:
            text = text.replace(note, " ")
    return _MARKERS.sub(" ", text)


def facts_ok(item: Asked, names: list[str]) -> bool:
    if item.refused:
        return False
    expected = item.facts.get("services")
    if expected:
        return "facts:services" in item.cited and services_named(item.answer, names) == set(expected)
    return "facts:hours" in item.cited and not services_named(item.answer, names)


def score(asked: list[Asked], names: dict[str, list[str]]) -> dict:
    from conversations import i18n
    from knowledge.retrieval.answer_types import answer_types, gives_type

    answerable = [a for a in asked if a.group == "answerable"]
    answered = [a for a in answerable if not a.refused]
    first_ok = sum(1 for a in answered if a.cited and a.cited[0] in a.relevant)
    cited_total = sum(len(a.cited) for a in answered)
    cited_ok = sum(1 for a in answered for key in a.cited if key in a.relevant)
    structured = [a for a in asked if a.group == "structured"]
    swahili = [a for a in answerable if a.language == "sw" and a.has_sw_version]
    in_swahili = [a for a in swahili if not a.refused and i18n.detect_language(answer_body(a.answer)) == "sw"]
    quoting = [a for a in asked if not a.refused and _METADATA.search(a.answer)]
    citing = [a for a in asked if a.language == "sw" and not a.refused and a.cites_sw_version]
    citing_in_swahili = [a for a in citing if i18n.detect_language(answer_body(a.answer)) == "sw"]
    multi_cited = sum(1 for a in answered if len(a.cited) > 1)
    multi_part = [a for a in answered if a.kind == "multi"]
    typed = [(a, answer_types(a.text)) for a in answered if a.language == "en" and a.cited
             and a.cited[0] in a.relevant and not a.cited[0].startswith("facts:")]
    typed = [(a, types) for a, types in typed if types]
    framed = [(a, framing_language(a.answer)) for a in asked if not a.refused]
    framed = [(a, language) for a, language in framed if language]
    return {
        "n_answerable": len(answerable),
        "answered": len(answered) / len(answerable) if answerable else None,
        "first_citation_relevant": first_ok / len(answered) if answered else None,
        "citation_precision": cited_ok / cited_total if cited_total else None,
        "answers_citing_more_than_one": multi_cited / len(answered) if answered else None,
        "n_multi_part": len(multi_part),
        "multi_part_every_source_cited": (sum(1 for a in multi_part if set(a.relevant) <= set(a.cited))
                                          / len(multi_part) if multi_part else None),
        "n_typed": len(typed),
        "typed_answer_given": (sum(1 for a, types in typed if all(gives_type(answer_body(a.answer), name)
                                                                   for name in types)) / len(typed)
                               if typed else None),
        "n_structured": len(structured),
        "facts_from_right_rows": (sum(1 for a in structured if facts_ok(a, names[a.business])) / len(structured)
                                  if structured else None),
        "n_turns": len(asked),
        "answers_quoting_metadata": len(quoting),
        "turns_recording_a_handoff": sum(1 for a in asked if a.handoff),
        "n_swahili_with_version": len(swahili),
        "swahili_answered_in_swahili": len(in_swahili) / len(swahili) if swahili else None,
        "n_swahili_citing_version": len(citing),
        "swahili_citing_version_in_swahili": len(citing_in_swahili) / len(citing) if citing else None,
        "n_framed": len(framed),
        "framed_in_question_language": (sum(1 for a, language in framed if language == a.language) / len(framed)
                                        if framed else None),
    }


def framing_language(answer: str) -> str | None:
    """The language of the phrase an answer opens with ("Here is what I found:"), if it opens with one."""
    from conversations import i18n

    for language in i18n.SUPPORTED_LANGUAGES:
        if any(answer.startswith(i18n.phrase(name, language=language)) for name in ("found", "found_facts")):
            return language
    return None


def scores_by_scope(asked: list[Asked], names: dict[str, list[str]]) -> dict[str, dict]:
    """Figures for the report folds, the choose folds (whichever were run) and each business."""
    scopes: dict[str, dict] = {}
    for label, folds in (("report folds 3-4", REPORT_FOLDS), ("choose folds 0-2", CHOOSE_FOLDS)):
        items = [a for a in asked if a.fold in folds]
        if items:
            scopes[f"{label}: {', '.join(sorted({a.business for a in items}))}"] = score(items, names)
    by_business = defaultdict(list)
    for item in asked:
        by_business[item.business].append(item)
    scopes.update({name: score(items, names) for name, items in sorted(by_business.items())})
    return scopes


ROWS = [
    ("answerable questions (n)", "n_answerable"),
    ("answered", "answered"),
    ("first citation relevant (answered)", "first_citation_relevant"),
    ("citation precision (answered)", "citation_precision"),
    ("answers citing more than one source", "answers_citing_more_than_one"),
    ("multi-part questions answered (n)", "n_multi_part"),
    ("... citing every labelled source", "multi_part_every_source_cited"),
    ("questions asking a price, time, duration or place (n)", "n_typed"),
    ("... answered with that kind of answer", "typed_answer_given"),
    ("facts questions (n)", "n_structured"),
    ("facts questions answered from the right rows", "facts_from_right_rows"),
    ("turns (n)", "n_turns"),
    ("answers quoting metadata (count)", "answers_quoting_metadata"),
    ("turns recording a hand-off (count)", "turns_recording_a_handoff"),
    ("Swahili questions with a Swahili version (n)", "n_swahili_with_version"),
    ("... answered in Swahili", "swahili_answered_in_swahili"),
    ("Swahili answers citing a snippet with a Swahili version (n)", "n_swahili_citing_version"),
    ("... in Swahili", "swahili_citing_version_in_swahili"),
    ("answers opening with a framing phrase (n)", "n_framed"),
    ("... framed in the question's language", "framed_in_question_language"),
]


def print_tables(report: dict, baseline: dict | None) -> None:
    for scope, figures in report["scores"].items():
        headers = ["figure", "this code"] + (["today (baseline)"] if baseline else [])
        rows = []
        for label, name in ROWS:
            row = [label, figures.get(name)]
            if baseline:
                row.append(baseline["scores"].get(scope, {}).get(name))
            rows.append(row)
        print(common.table(headers, rows, title=f"{scope} ({report['revision']}"
                           + (f" vs {baseline['revision']})" if baseline else ")")))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folds", choices=sorted(FOLD_SETS), default="report")
    parser.add_argument("--baseline", type=Path, help="this script's JSON from another checkout, shown beside")
    parser.add_argument("--show-misses", action="store_true")
    parser.add_argument("--reseed", action="store_true", help="drop and re-seed each business first")
    args = parser.parse_args()
    os.environ.setdefault("RATIBA_DB_NAME", "bench_answers")
    os.environ["LLM_PROVIDER"] = "extractive"
    os.environ["INTENT_CLASSIFIER"] = "offline"
    common.setup_django()
    started = time.perf_counter()
    from bench.unseen_data import written_folds

    folds = written_folds()
    wanted = FOLD_SETS[args.folds]
    asked: list[Asked] = []
    names: dict[str, list[str]] = {}
    for seed_path in sorted(BUSINESSES_DIR.glob("*.yaml")):
        if seed_path.name.endswith(".eval.yaml"):
            continue
        tenant, *_ = load_business(seed_path)
        fold = folds[tenant.schema]
        if fold not in wanted:
            continue
        business_asked, names[tenant.family] = ask_business(seed_path, fold, reseed=args.reseed)
        asked.extend(business_asked)
        print(f"{tenant.family:<20} fold {fold}  {len(business_asked):>4} turns", flush=True)
    by_business = defaultdict(list)
    for item in asked:
        by_business[item.business].append(item)
    report = {"revision": common.git_revision(), "folds": args.folds,
              "businesses": sorted(by_business), "seconds": round(time.perf_counter() - started, 1),
              "scores": scores_by_scope(asked, names),
              "turns": [asdict(a) for a in asked]}
    baseline = json.loads(args.baseline.read_text()) if args.baseline else None
    print_tables(report, baseline)
    if args.show_misses:
        print_misses(asked, names)
    path = common.write_result(f"answer_quality-{args.folds}", report)
    print(f"\nwritten {path.relative_to(common.ROOT)} in {report['seconds']} s")
    return 0


def print_misses(asked: list[Asked], names: dict[str, list[str]]) -> None:
    print("\nMisses\n")
    for a in asked:
        problems = []
        if a.group == "answerable" and not a.refused:
            if not a.cited or a.cited[0] not in a.relevant:
                problems.append("first citation")
            if any(key not in a.relevant for key in a.cited):
                problems.append("imprecise")
        if a.group == "structured" and not facts_ok(a, names[a.business]):
            problems.append("facts")
        if not a.refused and _METADATA.search(a.answer):
            problems.append("metadata")
        if problems:
            print(f"[{a.business}/{a.kind}/{','.join(problems)}] {a.text!r} intent={a.intent} cited={a.cited} "
                  f"relevant={a.relevant or a.facts}\n    {a.answer[:400]!r}")


if __name__ == "__main__":
    raise SystemExit(main())
