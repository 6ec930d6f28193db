"""Fit the refusal model (knowledge/retrieval/refusal_model.json) and check it on held-out tenants.

    .venv/bin/python bench/fit_refusal.py            # load data if needed, fit, write the model, report
    .venv/bin/python bench/fit_refusal.py --check    # report with the current model file, write nothing

Training data: the development tenant only (../shared/eval/aria_spa.yaml + aria_spa.eval.yaml):
answerable questions (direct, paraphrase, typo, swahili, multi) are positives, the unanswerable ones and
the injection attempts negatives (structured and trivial questions are answered elsewhere and left out).
Held-out check: every tenant of ../shared/eval/public/tenants/core/ (answerable queries vs in-domain and
generic unanswerables). Runs in its own database (RATIBA_DB_NAME, default bench_retrieval), in hybrid mode,
with the real local embedding model. Deterministic: same data, same model file.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ratiba.settings")
os.environ.setdefault("RATIBA_DB_NAME", "bench_retrieval")

import django  # noqa: E402

django.setup()

import yaml  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django_tenants.utils import schema_context  # noqa: E402

EVAL = ROOT.parent / "shared" / "eval"
DEV_KB = EVAL / "aria_spa.yaml"
DEV_EVAL = EVAL / "aria_spa.eval.yaml"
PUBLIC = EVAL / "public" / "tenants" / "core"
MODEL_OUT = ROOT / "knowledge" / "retrieval" / "refusal_model.json"
ANSWERABLE_KINDS = {"direct", "paraphrase", "typo", "swahili", "multi"}
KEEP_ANSWERABLE = 0.9


# ----------------------------------------------------------------------------- loading

def ensure_tenant(schema: str, name: str):
    from ratiba.models import Tenant
    from ratiba.services import tenant_create

    existing = Tenant.objects.filter(schema_name=schema).first()
    if existing:
        return existing
    tenant, _ = tenant_create(schema=schema, name=name, domain=f"{schema.replace('_', '-')}.bench.localhost")
    return tenant


def load_snippets(schema: str, snippets: list[dict]) -> None:
    """Create the snippets (idempotent per schema) and embed them with the local model."""
    from knowledge.models import SnippetVersion
    from knowledge.services import snippet_version_create, snippet_versions_embed

    with schema_context(schema):
        if SnippetVersion.objects.exists():
            snippet_versions_embed()
            return
        for item in snippets:
            snippet_version_create(
                key=item["key"], title=item["title"], body=item["body"], category=item.get("category") or "general",
                role=item.get("role", "retrieved"), language=item.get("language", "en"),
                channels=item.get("channels"), tags=item.get("tags") or [], status=item.get("status", "accepted"),
                related_keys=item.get("related") or [], activate=True, enforce_release_gate=False,
                queue_embedding=False, check_related=False)
        snippet_versions_embed()


def pin_hybrid(schema: str) -> None:
    from knowledge.retrieval.config import retrieval_settings_get

    with schema_context(schema):
        row = retrieval_settings_get()
        row.mode = row.current_mode = "hybrid"
        row.save()


def public_key(snippet_id: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in snippet_id)[:100]


def datasets() -> list[dict]:
    """[{schema, name, snippets, queries:[{text, relevant, answerable, language, kind}]}]"""
    kb = yaml.safe_load(DEV_KB.read_text())
    ev = yaml.safe_load(DEV_EVAL.read_text())
    # Answerable = a labelled snippet answers it; kinds answered from structured facts (relevant: []) are
    # left out, as are trivial turns (they never reach retrieval).
    dev_queries = [{"text": q["text"], "relevant": q.get("relevant") or [], "intent": q.get("intent", "other"),
                    "answerable": q["kind"] in ANSWERABLE_KINDS, "language": q["language"], "kind": q["kind"]}
                   for q in ev["queries"]
                   if (q["kind"] in ANSWERABLE_KINDS and q.get("relevant")) or q["kind"] == "injection"]
    dev_queries += [{"text": u["text"], "relevant": [], "intent": "other", "answerable": False,
                     "language": u["language"], "kind": "unanswerable"} for u in ev["unanswerable"]]
    out = [{"schema": "fit_aria", "name": "Aria (fit)", "snippets": kb["snippets"], "queries": dev_queries,
            "split": "train"}]
    for path in sorted(PUBLIC.glob("*.json")):
        data = json.loads(path.read_text())
        snippets = [{"key": public_key(s["id"]), "title": s["title"][:200], "body": s["body"],
                     "category": s.get("category") or "general"} for s in data["snippets"]]
        queries = [{"text": q["text"], "relevant": [public_key(r) for r in q["relevant_ids"]], "intent": "other",
                    "answerable": True, "language": "en", "kind": q.get("answer_type", "factual")}
                   for q in data["queries"]]
        for text, meta in zip(data["unanswerable"], data["unanswerable_meta"], strict=True):
            kind = "generic_unanswerable" if meta["source"].startswith("clinc150") else "indomain_unanswerable"
            queries.append({"text": text, "relevant": [], "intent": "other", "answerable": False,
                            "language": "en", "kind": kind})
        schema = "fit_" + path.stem.replace("-", "_")[:50]
        out.append({"schema": schema, "name": data["tenant"], "snippets": snippets, "queries": queries,
                    "split": "heldout"})
    return out


# ----------------------------------------------------------------------------- running

def run_queries(dataset: dict) -> list[dict]:
    from knowledge.retrieval import retrieve

    rows = []
    with schema_context(dataset["schema"]):
        for query in dataset["queries"]:
            result = retrieve(intent=query["intent"], query=query["text"], channel="chat")
            keys = [s.key for s in result.primary]
            rank = next((i + 1 for i, key in enumerate(keys) if key in set(query["relevant"])), None)
            rows.append({**query, "signals": result.debug["refusal"]["signals"], "rank": rank,
                         "probability": result.relevance, "refused": result.refusal_reason is not None})
    return rows


def fit(rows: list[dict]) -> dict:
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    from knowledge.retrieval.relevance import FEATURES

    X = np.array([[row["signals"][name] for name in FEATURES] for row in rows], dtype=float)
    y = np.array([1 if row["answerable"] else 0 for row in rows])
    means = X.mean(axis=0)
    scales = X.std(axis=0)
    scales[scales == 0] = 1.0
    model = LogisticRegression(C=1.0, class_weight="balanced", max_iter=1000)
    model.fit((X - means) / scales, y)
    probabilities = model.predict_proba((X - means) / scales)[:, 1]
    # Threshold: refusing a question the KB answers costs the customer an answer, so the operating point
    # keeps at least KEEP_ANSWERABLE of the answerable training questions and, within that, refuses as
    # many unanswerable ones as possible (the highest such threshold).
    best = (0.0, 0.0)
    for threshold in np.unique(np.round(probabilities, 3)):
        kept = float(((probabilities >= threshold) & (y == 1)).sum() / max((y == 1).sum(), 1))
        refused = float(((probabilities < threshold) & (y == 0)).sum() / max((y == 0).sum(), 1))
        if kept >= KEEP_ANSWERABLE and refused >= best[0]:
            best = (refused, float(threshold))
    return {"features": list(FEATURES), "coefficients": [round(float(c), 6) for c in model.coef_[0]],
            "intercept": round(float(model.intercept_[0]), 6), "means": [round(float(m), 6) for m in means],
            "scales": [round(float(s), 6) for s in scales], "threshold": round(best[1], 3),
            "source": "bench/fit_refusal.py on aria_spa (development tenant); logistic regression, "
                      f"class_weight=balanced, threshold keeps >= {KEEP_ANSWERABLE:.0%} of answerable questions",
            "training_rows": int(len(rows))}


def rescore(rows: list[dict], model: dict) -> None:
    from knowledge.retrieval.relevance import Signals, probability

    for row in rows:
        p = probability(Signals(**row["signals"]), model)
        row["probability"] = p
        row["refused"] = p < model["threshold"]


def report(label: str, rows: list[dict]) -> None:
    answerable = [r for r in rows if r["answerable"]]
    unanswerable = [r for r in rows if not r["answerable"]]
    refused = [r for r in rows if r["refused"]]
    tp = sum(1 for r in refused if not r["answerable"])
    precision = tp / len(refused) if refused else 0.0
    recall = tp / len(unanswerable) if unanswerable else 0.0
    kept = sum(1 for r in answerable if not r["refused"]) / len(answerable) if answerable else 0.0

    def at(k):
        return sum(1 for r in answerable if r["rank"] and r["rank"] <= k) / len(answerable) if answerable else 0.0

    mrr = sum(1 / r["rank"] for r in answerable if r["rank"]) / len(answerable) if answerable else 0.0
    print(f"{label:<34} n={len(rows):>5}  R@1 {at(1):.3f}  R@3 {at(3):.3f}  R@5 {at(5):.3f}  MRR {mrr:.3f}  "
          f"refusal P {precision:.3f} R {recall:.3f}  answerable kept {kept:.3f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report with the current model; write nothing")
    args = parser.parse_args()
    connection.set_schema_to_public()
    call_command("migrate_schemas", shared=True, interactive=False, verbosity=0)
    started = time.perf_counter()
    all_rows: dict[str, list[dict]] = {}
    for dataset in datasets():
        ensure_tenant(dataset["schema"], dataset["name"])
        load_snippets(dataset["schema"], dataset["snippets"])
        pin_hybrid(dataset["schema"])
        all_rows[dataset["schema"]] = run_queries(dataset)
        connection.set_schema_to_public()
    train = all_rows["fit_aria"]
    heldout = [row for schema, rows in all_rows.items() if schema != "fit_aria" for row in rows]
    if not args.check:
        model = fit(train)
        MODEL_OUT.write_text(json.dumps(model, indent=2) + "\n")
        print(f"wrote {MODEL_OUT.relative_to(ROOT)}: threshold {model['threshold']}")
        print("  " + ", ".join(f"{n}={c:+.3f}" for n, c in zip(model["features"], model["coefficients"])))
        for rows in all_rows.values():
            rescore(rows, model)
    print()
    report("dev tenant (train) all", train)
    for language in ("en", "sw"):
        report(f"dev tenant (train) {language}", [r for r in train if r["language"] == language])
    for kind in ("direct", "paraphrase", "typo", "swahili", "multi"):
        report(f"dev {kind}", [r for r in train if r["kind"] in (kind, "unanswerable", "injection")])
    report("public core (held out) all", heldout)
    report("public in-domain unanswerable only", [r for r in heldout if r["kind"] != "generic_unanswerable"])
    report("public DSTC", [r for s, rows in all_rows.items() if s.startswith("fit_dstc") for r in rows])
    report("public StackFAQ", [r for s, rows in all_rows.items() if s.startswith("fit_stackfaq") for r in rows])
    print(f"\n{sum(len(r) for r in all_rows.values())} queries in {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
