"""Intent accuracy on labelled `intent` fields, per language and per intent.

    .venv/bin/python bench/intent_accuracy.py [--eval PATH] [--show-errors]
    .venv/bin/python bench/intent_accuracy.py --businesses [--folds choose|report|all] [--show-errors]

By default the development tenant's aria_spa.eval.yaml. With `--businesses`, the written businesses of
bench/businesses/ by fold (bench/unseen_data.py): `report` (folds 3-4, never used to choose anything),
`choose` (folds 0-2, where rules and prototypes may be looked at) or `all`.

Compares, in one run on the same questions: the product classifier as a turn runs it (rules + nearest
prototype on the local embeddings + whether the question names a row of that business's services table,
read from its seed file with the product's own name matching), the same without the services table, rules
alone, prototypes alone, and the majority-class baseline (`other`). With an LLM provider configured
(LLM_PROVIDER=anthropic|openai and its key) the LLM classifier is measured too. No database is needed.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_EVAL = Path(os.environ.get("RATIBA_EVAL_DIR", ROOT.parent / "shared" / "eval")) / "aria_spa.eval.yaml"


def setup() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ratiba.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    django.setup()


def load(path: Path) -> list[dict]:
    import yaml

    data = yaml.safe_load(path.read_text())
    services = services_of(path.with_name(path.name.replace(".eval.yaml", ".yaml")))
    return [dict(item, services=services) for item in data["queries"] if item.get("intent")]


def services_of(seed_path: Path) -> list:
    """The business's services table as the product reads it (facts.ServiceFact), from its seed file."""
    import yaml

    from conversations.facts import ServiceFact

    if not seed_path.exists():
        return []
    rows = yaml.safe_load(seed_path.read_text()).get("services") or []
    return [ServiceFact(name=row["name"], description=row.get("description", ""),
                        duration_minutes=row.get("duration_minutes"), price=str(row.get("price", "")),
                        currency=row.get("currency", "KES"), price_text="") for row in rows]


def load_businesses(folds: str) -> tuple[list[dict], str]:
    """Labelled questions of the written businesses in the chosen folds, and a label naming them."""
    from bench.unseen_data import BUSINESSES_DIR, CHOOSE_FOLDS, REPORT_FOLDS, load_own_businesses, written_folds

    fold_of = written_folds()
    wanted = {"choose": CHOOSE_FOLDS, "report": REPORT_FOLDS, "all": CHOOSE_FOLDS + REPORT_FOLDS}[folds]
    chosen = [b for b in load_own_businesses() if fold_of[b.schema] in wanted]
    items = []
    for business in chosen:
        items += [dict(item, business=business.family)
                  for item in load(BUSINESSES_DIR / f"{business.family}.eval.yaml")]
    return items, f"{folds} folds ({', '.join(b.family for b in chosen)})"


def table(headers: list[str], rows: list[list]) -> str:
    cells = [[f"{c:.3f}" if isinstance(c, float) else str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    out = ["| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths)) + " |",
           "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += ["| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |" for row in cells]
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval", type=Path, default=DEFAULT_EVAL)
    parser.add_argument("--businesses", action="store_true", help="the written businesses instead of --eval")
    parser.add_argument("--folds", choices=["choose", "report", "all"], default="report")
    parser.add_argument("--show-errors", action="store_true")
    args = parser.parse_args()
    setup()
    from django.conf import settings

    from conversations import intents
    from conversations.facts import named_services
    from conversations.i18n import detect_language
    from knowledge.embeddings import embed_query

    if args.businesses:
        items, source = load_businesses(args.folds)
    else:
        items, source = load(args.eval), args.eval.name
    embed_query("warm up")  # model load is not classification time
    intents.classify("warm up")

    def rules_only(text: str) -> str:
        scores = intents.rule_scores(text)
        return max(scores, key=scores.get) if scores else "other"

    def prototypes_only(text: str) -> str:
        scores = intents.prototype_scores(query_vector=embed_query(text))
        best = max(scores, key=scores.get)
        return best if scores[best] >= intents.PROTOTYPE_MIN_SIMILARITY else "other"

    methods = {
        # As a turn runs it: Swahili messages are left to the rules (the prototypes are English), and a
        # question naming a row of the services table is about that service.
        "product (rules + prototype + services table)": lambda item: intents.classify(
            item["text"], embed=detect_language(item["text"]) != "sw",
            names_service=bool(named_services(item["text"], item["services"]))).intent,
        "rules + prototype (no services table)": lambda item: intents.classify(
            item["text"], embed=detect_language(item["text"]) != "sw").intent,
        "rules only": lambda item: rules_only(item["text"]),
        "prototypes only": lambda item: prototypes_only(item["text"]),
        "majority class (other)": lambda item: "other",
    }
    if settings.LLM_PROVIDER in ("anthropic", "openai"):
        from conversations.services import intent_classify

        methods[f"LLM ({settings.LLM_PROVIDER})"] = lambda item: intent_classify(message=item["text"]).intent

    rows, errors, per_intent = [], [], {}
    for name, method in methods.items():
        correct, total = Counter(), Counter()
        by_intent_correct, by_intent_total = Counter(), Counter()
        elapsed = []
        for item in items:
            started = time.perf_counter()
            predicted = method(item)
            elapsed.append((time.perf_counter() - started) * 1000)
            ok = predicted == item["intent"]
            for bucket in ("all", item.get("language", "en")):
                total[bucket] += 1
                correct[bucket] += int(ok)
            by_intent_total[item["intent"]] += 1
            by_intent_correct[item["intent"]] += int(ok)
            if not ok and name.startswith("product"):
                errors.append((item["intent"], predicted, item.get("language"), item["text"]))
        per_intent[name] = {intent: (by_intent_correct[intent], by_intent_total[intent]) for intent in by_intent_total}
        elapsed.sort()
        rows.append([name, correct["all"] / total["all"], correct["en"] / max(total["en"], 1),
                     correct["sw"] / max(total["sw"], 1), total["all"], total["en"], total["sw"],
                     f"{elapsed[len(elapsed) // 2]:.2f}"])
    print(f"\nIntent accuracy on {source} ({len(items)} labelled queries)\n")
    print(table(["method", "accuracy", "en", "sw", "n", "n_en", "n_sw", "p50 ms"], rows))
    intents_seen = sorted({item["intent"] for item in items})
    print("\nPer-intent recall (correct/total)\n")
    print(table(["method"] + intents_seen,
                [[name] + [f"{c}/{t}" for c, t in (scores.get(i, (0, 0)) for i in intents_seen)]
                 for name, scores in per_intent.items()]))
    confusion = Counter((gold, predicted) for gold, predicted, _, _ in errors)
    print("\nProduct classifier confusions (gold -> predicted: count)\n")
    print(", ".join(f"{g}->{p}: {n}" for (g, p), n in confusion.most_common()) or "none")
    if args.show_errors:
        print()
        for gold, predicted, language, text in errors:
            print(f"  [{language}] {gold:>10} -> {predicted:<10} {text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
