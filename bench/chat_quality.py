"""Chat answer quality on the development tenant: every eval question through the real turn pipeline.

    .venv/bin/python bench/chat_quality.py [--reseed] [--show-errors]

Seeds aria_spa.yaml with `seed_knowledge` into its own database (RATIBA_DB_NAME, default bench_chat),
then sends each question of aria_spa.eval.yaml as a new chat session through `conversations.services
.turn_run` (extractive provider, offline intent classifier) and reports:

- answerable questions (labelled `relevant` keys): share answered with a correct citation (a cited key
  among the relevant ones), share answered at all, false refusals;
- structured questions (services / hours): share answered from the facts (a `facts:*` citation);
- unanswerable questions: refusal precision and recall (precision counts every refused answerable,
  structured and unanswerable question);
- language: share of turns answered in the customer's language (the turn's language, which frames the
  answer and picks the deflection), and share whose answer *text* reads as that language (the extractive
  provider quotes snippets as written, so English snippets stay English inside a Swahili frame);
- intent accuracy per language.

Baseline, same run, same retrieval: "top-1 retrieved, never refuse" (answer every question with the
highest-ranked snippet of `fetch_snippets`), to show what the refusal decision and dispatch add.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import common  # noqa: E402


def drop_bench_database(name: str) -> None:
    """Start from an empty bench database (only ever one named bench_*; never the dev or a test database)."""
    if not name.startswith("bench_"):
        raise SystemExit(f"refusing to drop {name!r}: only bench_* databases are dropped")
    import psycopg

    from ratiba.embedded_db import ensure_server

    server = ensure_server()
    with psycopg.connect(host=server.socket_dir, port=server.port, user="postgres", dbname="postgres",
                         autocommit=True) as conn:
        conn.execute(f'drop database if exists "{name}" with (force)')


def load_eval() -> tuple[list[dict], list[dict]]:
    import yaml

    data = yaml.safe_load((common.EVAL_DIR / "aria_spa.eval.yaml").read_text())
    return data["queries"], data["unanswerable"]


def run(show_errors: bool, reseed: bool, mode: str) -> dict:
    from django.db import connection

    from conversations import i18n, services
    from conversations.models import HandoffRequest, Session
    from knowledge.retrieval import fetch_snippets

    tenant_data, _ = common.load_dev_tenant()
    started = time.perf_counter()
    row, how = common.seed_tenant(tenant_data, reseed=reseed)
    seed_seconds = time.perf_counter() - started
    if mode != "auto":
        # The owner's admin setting. A 44-snippet KB overflows the inline caps, so an auto tenant graduates
        # to hybrid after a few turns: pinning measures one mode, not a run that switches half-way.
        common.pin_mode(row, mode)
    connection.set_tenant(row)
    # Each run starts from no conversations, so the numbers describe this run only.
    HandoffRequest.objects.all().delete()
    Session.objects.all().delete()
    services.turn_run(services.TurnInput(message="warm up the model"))

    queries, unanswerable = load_eval()
    items = [dict(q, group="structured" if q.get("kind") == "structured" else
                  "trivial" if q.get("kind") == "trivial" else
                  "injection" if q.get("kind") == "injection" else
                  "answerable" if q.get("relevant") else "structured") for q in queries]
    items += [dict(u, group="unanswerable", kind="unanswerable", relevant=[]) for u in unanswerable]

    counts: dict[str, Counter] = defaultdict(Counter)
    modes_used: Counter = Counter()
    errors: list[str] = []
    latencies: list[float] = []
    for item in items:
        language = item.get("language", "en")
        t0 = time.perf_counter()
        result = services.turn_run(services.TurnInput(message=item["text"], channel="chat"))
        latencies.append((time.perf_counter() - t0) * 1000)
        refused = result.refusal_reason is not None
        modes_used[result.meta.get("mode") or "none"] += 1
        cited = [c["key"] for c in result.citations]
        relevant = set(item.get("relevant") or [])
        group = item["group"]
        for bucket in (group, f"{group}:{language}"):
            c = counts[bucket]
            c["n"] += 1
            c["refused"] += int(refused)
            c["answered"] += int(not refused)
            c["correct_citation"] += int(not refused and bool(relevant & set(cited)))
            c["facts_citation"] += int(not refused and any(k.startswith("facts:") for k in cited))
        # Baseline: the top retrieved snippet, whatever its relevance.
        baseline = fetch_snippets("other", query=item["text"], channel="chat")
        top = [s.key for s in baseline.primary[:1]]
        counts[f"baseline:{group}"]["n"] += 1
        counts[f"baseline:{group}"]["correct_citation"] += int(bool(relevant & set(top)))
        # Language: the turn's language (frame / deflection) and the answer text itself.
        for bucket in ("language", f"language:{language}"):
            counts[bucket]["n"] += 1
            counts[bucket]["turn_language_ok"] += int(result.meta["language"] == language)
            counts[bucket]["text_language_ok"] += int(i18n.detect_language(result.answer) == language)
        if item.get("intent"):
            for bucket in ("intent", f"intent:{language}"):
                counts[bucket]["n"] += 1
                counts[bucket]["ok"] += int(result.intent == item["intent"])
        wrong = ((group == "answerable" and not (not refused and relevant & set(cited)))
                 or (group == "unanswerable" and not refused)
                 or (group == "structured" and refused))
        if wrong:
            errors.append(f"[{group}/{language}] {item['text']!r} -> intent={result.intent} "
                          f"refusal={result.refusal_reason} cited={cited} expected={sorted(relevant)}")

    def share(bucket: str, field: str) -> float | None:
        c = counts[bucket]
        return c[field] / c["n"] if c["n"] else None

    refused_should_answer = sum(counts[g]["refused"] for g in ("answerable", "structured"))
    refused_unanswerable = counts["unanswerable"]["refused"]
    precision = (refused_unanswerable / (refused_unanswerable + refused_should_answer)
                 if refused_unanswerable + refused_should_answer else None)
    latencies.sort()
    report = {
        "seed": {"how": how, "seconds": round(seed_seconds, 2)},
        "mode": mode,
        "modes_used": dict(modes_used),
        "answerable": {lang: {"n": counts[f"answerable{s}"]["n"],
                              "answered_with_correct_citation": share(f"answerable{s}", "correct_citation"),
                              "answered": share(f"answerable{s}", "answered"),
                              "false_refusal": share(f"answerable{s}", "refused"),
                              "baseline_top1_correct": share(f"baseline:answerable", "correct_citation")
                              if not s else None}
                       for lang, s in (("all", ""), ("en", ":en"), ("sw", ":sw"))},
        "structured": {"n": counts["structured"]["n"], "answered_from_facts": share("structured", "facts_citation"),
                       "refused": share("structured", "refused")},
        "unanswerable": {"n": counts["unanswerable"]["n"], "refusal_recall": share("unanswerable", "refused"),
                         "refusal_recall_en": share("unanswerable:en", "refused"),
                         "refusal_recall_sw": share("unanswerable:sw", "refused"),
                         "refusal_precision": precision},
        "language": {lang: {"turn_language": share(b, "turn_language_ok"), "answer_text": share(b, "text_language_ok"),
                            "n": counts[b]["n"]}
                     for lang, b in (("all", "language"), ("en", "language:en"), ("sw", "language:sw"))},
        "intent_accuracy": {lang: share(b, "ok") for lang, b in (("all", "intent"), ("en", "intent:en"),
                                                                  ("sw", "intent:sw"))},
        "turn_ms": {"p50": common.percentile(latencies, 50), "p95": common.percentile(latencies, 95)},
        "revision": common.git_revision(),
    }
    print_report(report)
    if show_errors:
        print("\nMisses\n")
        print("\n".join(errors))
    return report


def print_report(r: dict) -> None:
    print(f"\nChat quality on aria_spa (retrieval mode {r['mode']}, turns by mode {r['modes_used']}; "
          f"tenant {r['seed']['how']} in {r['seed']['seconds']} s; "
          f"turn p50 {r['turn_ms']['p50']:.0f} ms, p95 {r['turn_ms']['p95']:.0f} ms)")
    print(common.table(["answerable questions", "n", "answered + correct citation", "answered", "false refusal"],
                       [[lang, v["n"], v["answered_with_correct_citation"], v["answered"], v["false_refusal"]]
                        for lang, v in r["answerable"].items()]))
    print(common.table(["baseline (same run)", "correct citation"],
                       [["top-1 retrieved, never refuse", r["answerable"]["all"]["baseline_top1_correct"]],
                        ["pipeline (above)", r["answerable"]["all"]["answered_with_correct_citation"]]]))
    u = r["unanswerable"]
    print(common.table(["refusal", "n unanswerable", "precision", "recall", "recall en", "recall sw"],
                       [["pipeline", u["n"], u["refusal_precision"], u["refusal_recall"], u["refusal_recall_en"],
                         u["refusal_recall_sw"]], ["baseline (never refuses)", u["n"], None, 0.0, 0.0, 0.0]]))
    s = r["structured"]
    print(common.table(["structured (services/hours)", "n", "answered from facts", "refused"],
                       [["pipeline", s["n"], s["answered_from_facts"], s["refused"]]]))
    print(common.table(["customer's language", "n", "turn language", "answer text language"],
                       [[lang, v["n"], v["turn_language"], v["answer_text"]] for lang, v in r["language"].items()]))
    print(common.table(["intent accuracy", "all", "en", "sw"],
                       [["pipeline (offline classifier)", r["intent_accuracy"]["all"], r["intent_accuracy"]["en"],
                         r["intent_accuracy"]["sw"]]]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reseed", action="store_true", help="drop and re-create the tenant first")
    parser.add_argument("--show-errors", action="store_true")
    parser.add_argument("--fresh-db", action="store_true", help="drop and re-create the bench database first")
    parser.add_argument("--mode", choices=["hybrid", "inline", "auto"], default="hybrid",
                        help="retrieval mode to pin for the run (default hybrid; auto leaves the tenant's own)")
    args = parser.parse_args()
    os.environ.setdefault("RATIBA_DB_NAME", "bench_chat")
    os.environ["LLM_PROVIDER"] = "extractive"
    os.environ["INTENT_CLASSIFIER"] = "offline"
    if args.fresh_db:
        drop_bench_database(os.environ["RATIBA_DB_NAME"])
    common.setup_django()
    report = run(args.show_errors, args.reseed, args.mode)
    path = common.write_result("chat_quality", report)
    print(f"\nwritten {path.relative_to(common.ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
