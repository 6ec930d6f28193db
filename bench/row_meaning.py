"""Would naming a services row by meaning help the facts? Measured on the choosing folds, printed for the report.

    .venv/bin/python bench/row_meaning.py

A price or duration question whose words name no row ("Cost of a new breaker box?" for "Consumer Unit
Replacement") is answered from the knowledge today. The idea tried here: take the row whose text is closest
to the question by meaning (the local embeddings; the glossary's reading for Swahili) when its cosine is at
least T and beats the next row by M. Over a grid of (T, M), per fold group:
- gained: labelled facts questions whose words name no row and whose closest row is a labelled one;
- wrong: the same questions answered from a row that is not labelled;
- synthetic: the labelled question asked of the table with its labelled rows taken out (a service the
  business does not offer), which must be answered from no row;
- near misses: labelled unanswerable questions that ask a price or duration and name no row.
Rows are read as "name. description" or as the name alone. No database is needed (the seed files' tables).

With --partial the questions are those whose words name rows without accounting for the question ("What's
the price for neutering my tomcat?" shares "neuter" with "Neuter (Cat)" but not "tomcat"): the closest of the
rows its words name is taken at the same kind of cut.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common  # noqa: E402

GRID_T = (0.4, 0.45, 0.5, 0.55)
GRID_M = (0.0, 0.05, 0.1)


def cases(folds: tuple[int, ...], *, partial: bool = False) -> list[dict]:
    """Every price or duration question of the written businesses in these folds, as a case per table."""
    import yaml

    from bench.intent_accuracy import services_of
    from bench.unseen_data import BUSINESSES_DIR, load_own_businesses, written_folds
    from conversations import facts

    fold_of = written_folds()
    found = []
    for business in load_own_businesses():
        if fold_of[business.schema] not in folds:
            continue
        table = services_of(BUSINESSES_DIR / f"{business.family}.yaml")
        labelled = yaml.safe_load((BUSINESSES_DIR / f"{business.family}.eval.yaml").read_text())
        asks = [(item["text"], (item.get("facts") or {}).get("services")) for item in labelled["queries"]
                if (item.get("facts") or {}).get("services")]
        asks += [(item["text"], None) for item in labelled.get("unanswerable", [])]
        for text, rows in asks:
            if not (facts.asks_price(text) or facts.asks_duration(text)):
                continue
            offered = [row for row in table if not rows or row.name not in rows]
            variants = [("labelled", table, rows), ("synthetic", offered, [])] if rows else [("near miss", table, [])]
            for kind, rows_left, gold in variants:
                mentioned = facts.match_services(text, rows_left)
                if partial and mentioned and not facts.named_services(text, rows_left):
                    # rows the words mention but do not account for the question: meaning picks among them
                    rows_left = [row for row in rows_left if row.name in mentioned]
                    found.append({"kind": kind, "text": text, "rows": rows_left, "gold": gold or []})
                elif not partial and not mentioned:  # words name no row: where meaning would step in
                    found.append({"kind": kind, "text": text, "rows": rows_left, "gold": gold or []})
    return found


def scored(found: list[dict], *, described: bool) -> list[tuple[dict, str, float, float]]:
    """(case, closest row, its cosine, its lead over the next row)."""
    from knowledge.embeddings import embed_cached, embed_query
    from knowledge.retrieval.language import detect_language, english_reading

    out = []
    for case in found:
        text = case["text"]
        read = (english_reading(text) or text) if detect_language(text).language == "sw" else text
        query = embed_query(read)
        names = [f"{row.name}. {row.description}" if described and row.description else row.name
                 for row in case["rows"]]
        cosines = sorted(((sum(a * b for a, b in zip(query, vector)), row.name)
                          for vector, row in zip(embed_cached(names), case["rows"])), reverse=True)
        lead = cosines[0][0] - (cosines[1][0] if len(cosines) > 1 else 0.0)
        out.append((case, cosines[0][1], cosines[0][0], lead))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partial", action="store_true",
                        help="questions whose words mention rows without accounting for the question")
    parser.add_argument("--folds", choices=("choose", "report", "both"), default="both")
    args = parser.parse_args()
    common.setup_django(default_db="bench_row_meaning", migrate=False)
    from bench.unseen_data import CHOOSE_FOLDS, REPORT_FOLDS

    for label, folds in (("choosing folds 0-2", CHOOSE_FOLDS), ("report folds 3-4", REPORT_FOLDS)):
        if args.folds != "both" and not label.startswith("choosing" if args.folds == "choose" else "report"):
            continue
        found = cases(folds, partial=args.partial)
        counts = {kind: sum(case["kind"] == kind for case in found) for kind in ("labelled", "synthetic", "near miss")}
        rows = []
        for described in (False, True):
            results = scored(found, described=described)
            for threshold in GRID_T:
                for margin in GRID_M:
                    taken = [(case, row) for case, row, cosine, lead in results
                             if cosine >= threshold and lead >= margin]
                    rows.append(["name. description" if described else "name", threshold, margin,
                                 sum(c["kind"] == "labelled" and row in c["gold"] for c, row in taken),
                                 sum(c["kind"] == "labelled" and row not in c["gold"] for c, row in taken),
                                 sum(c["kind"] == "synthetic" for c, _ in taken),
                                 sum(c["kind"] == "near miss" for c, _ in taken)])
        print(common.table(["row read as", "T", "M", "gained", "wrong", "synthetic answered", "near misses answered"],
                           rows, title=f"{label}: questions {'mentioning rows' if args.partial else 'naming no row'} by words: {counts['labelled']} labelled, "
                                       f"{counts['synthetic']} synthetic, {counts['near miss']} near misses"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
