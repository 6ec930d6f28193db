"""Would embedding a snippet's tags with its text help? Vector-only, on the written businesses' choosing folds.

    .venv/bin/python bench/tags_in_vectors.py [--folds choose|report]

For each written business, every retrieved snippet (drafts left out) is embedded twice with the product's
`embedding_text`: as stored today (title and body), and with a "Tags: ..." line of its owner's tags added. For
the English answerable questions: hit@1 of cosine over all snippets, and the mean cosine of the best relevant
snippet. For separating answerable from unanswerable: the ROC AUC of the relevant snippet's cosine against the
best cosine of each labelled English unanswerable question. No database is needed.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common  # noqa: E402


def _auc(positives: list[float], negatives: list[float]) -> float:
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives)) if positives and negatives else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folds", choices=("choose", "report"), default="choose")
    args = parser.parse_args()
    common.setup_django(default_db="bench_tags", migrate=False)
    import numpy as np
    import yaml

    from bench.unseen_data import BUSINESSES_DIR, CHOOSE_FOLDS, REPORT_FOLDS, load_own_businesses, written_folds
    from knowledge.embeddings import embed_texts
    from knowledge.services import embedding_text

    wanted = CHOOSE_FOLDS if args.folds == "choose" else REPORT_FOLDS
    fold_of = written_folds()
    found = {"as stored": ([], [], []), "with tags": ([], [], [])}  # hits, relevant cosines, unanswerable tops
    for business in load_own_businesses():
        if fold_of[business.schema] not in wanted:
            continue
        seed = yaml.safe_load((BUSINESSES_DIR / f"{business.family}.yaml").read_text())
        labelled = yaml.safe_load((BUSINESSES_DIR / f"{business.family}.eval.yaml").read_text())
        snippets = [s for s in seed["snippets"]
                    if s.get("role", "retrieved") == "retrieved" and s.get("status") != "draft"]
        keys = [s["key"] for s in snippets]
        texts = {
            "as stored": [embedding_text(title=s["title"], body=s["body"]) for s in snippets],
            "with tags": [embedding_text(title=s["title"], body=s["body"] + (
                "\nTags: " + ", ".join(s["tags"]) if s.get("tags") else "")) for s in snippets],
        }
        asked = [q for q in labelled["queries"] if q.get("relevant") and q.get("language") == "en"]
        unanswerable = [q["text"] for q in labelled.get("unanswerable", []) if q.get("language") == "en"]
        questions = np.array(embed_texts([q["text"] for q in asked]))
        off = np.array(embed_texts(unanswerable)) if unanswerable else None
        for variant, variant_texts in texts.items():
            vectors = np.array(embed_texts(variant_texts))
            hits, relevant, tops = found[variant]
            for row, question in zip(questions @ vectors.T, asked):
                right = [i for i, key in enumerate(keys) if key in question["relevant"]]
                if right:
                    hits.append(int(np.argmax(row)) in right)
                    relevant.append(float(max(row[i] for i in right)))
            if off is not None:
                tops += [float(top) for top in (off @ vectors.T).max(axis=1)]
    rows = [[variant, len(hits), sum(hits) / len(hits), float(np.mean(relevant)), float(np.mean(tops)),
             _auc(relevant, tops)] for variant, (hits, relevant, tops) in found.items()]
    print(common.table(["snippet vectors", "questions", "hit@1", "relevant cosine", "unanswerable top cosine",
                        "AUC"], rows, title=f"Written businesses, {args.folds} folds, English, vector only"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
