"""Would the closest *sentence* help the refusal decision? Measured out of fold on the choosing folds.

    .venv/bin/python bench/unseen_data.py        # first: the cached pools
    .venv/bin/python bench/sentence_signal.py [--folds choose|report]

A short question about one thing a long snippet mentions in passing ("do u hv wifi" against a waiting-area
snippet that also covers the TV, tea and charging points) is far from the snippet's vector as a whole, and the
model refuses it. The signal tried: the highest cosine between the question's vector and any one sentence of
the best candidates by meaning (COVER_TOP, as word coverage reads them). Two models are fitted on the same
rows, the product's features with and without the signal, each out of fold (fit on two choosing folds, score
the third), and cut where each refuses FALSE_REFUSAL_TARGET of the answerable questions; printed: AUC
(answerable vs near misses) and the rates at that cut. With `--folds report` both are fitted on all choosing
folds and scored on the report folds, cut at the threshold the choosing folds gave.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common, unseen_data  # noqa: E402
from bench.common import fmt, table  # noqa: E402
from bench.fit_refusal import FALSE_REFUSAL_TARGET, features, fit_model, out_of_fold, threshold_at  # noqa: E402
from bench.train_answerability import auc  # noqa: E402

SIGNAL = "sentence_similarity"
POOL = "pool_uncovered"


def sentence_signal(runs) -> list[float]:
    """For each run: the best cosine of its question vector with one sentence of its COVER_TOP closest snippets."""
    import numpy as np

    from knowledge.embeddings import embed_cached
    from knowledge.retrieval.answerability import sentences
    from knowledge.retrieval.relevance import COVER_TOP

    out = []
    for run in runs:
        ranked = sorted((c for c in run.pool if c.similarity is not None),
                        key=lambda c: (-(c.similarity or 0.0), c.key))[:COVER_TOP]
        texts = [s for c in ranked for s in sentences(c.body)]
        if not texts or not run.query_vector:
            out.append(max((c.similarity or 0.0 for c in ranked), default=0.0))
            continue
        vectors = np.array(embed_cached(texts))
        out.append(float((vectors @ np.array(run.query_vector)).max()))
    return out


def pool_uncovered(runs) -> list[float]:
    """For each run: the salience-weighted share of its salient words that no candidate of the pool covers (the
    pool holds every keyword match, so a word no snippet of the business mentions, or anything close, shows)."""
    from knowledge.retrieval.pipeline import prepare_query
    from knowledge.retrieval.relevance import _word_cover, content_words, salient_words
    from knowledge.retrieval.wordvec import word_vectors

    out = []
    for run in runs:
        words = salient_words(prepare_query(run.read_text or run.text).english_words)
        vocabulary = sorted({w for c in run.pool for w in content_words(f"{c.title} {c.body}")})
        if not words or not vocabulary:
            out.append(0.0)
            continue
        # relevance's word coverage, read over the whole pool as one document: its uncovered share
        out.append(_word_cover(words, [vocabulary], word_vectors(words + vocabulary))[2])
    return out


def rates(scores, runs, cut) -> dict[str, float]:
    def rate(selected):
        chosen = [s for s, r in zip(scores, runs) if selected(r)]
        return sum(s < cut for s in chosen) / max(len(chosen), 1)

    return {"false": rate(lambda r: r.answerable),
            "false written": rate(lambda r: r.answerable and r.dataset in ("own", "dev")),
            "near": rate(lambda r: r.unanswerable_kind in ("in_domain", "synthetic")),
            "near labelled": rate(lambda r: r.unanswerable_kind == "in_domain"),
            "generic": rate(lambda r: r.unanswerable_kind == "generic")}


def auc_near(scores, runs) -> float:
    idx = [i for i, r in enumerate(runs) if r.answerable or r.unanswerable_kind in ("in_domain", "synthetic")]
    return auc([scores[i] for i in idx], [1 if runs[i].answerable else 0 for i in idx])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folds", choices=("choose", "report"), default="choose")
    args = parser.parse_args()
    common.setup_django()
    from knowledge.retrieval.relevance import FEATURES, probability

    runs = unseen_data.load_runs()
    choose = [r for r in runs if r.fold in unseen_data.CHOOSE_FOLDS]
    rows = features(choose)
    for row, value, uncovered in zip(rows, sentence_signal(choose), pool_uncovered(choose)):
        row[SIGNAL], row[POOL] = value, uncovered
    lines = []
    for label, names in (("product features", FEATURES), ("+ closest sentence", (*FEATURES, SIGNAL)),
                         ("+ words no snippet covers", (*FEATURES, POOL)),
                         ("+ both", (*FEATURES, SIGNAL, POOL))):
        scores, ordered = out_of_fold(rows, choose, names)
        cut = threshold_at(scores, ordered, FALSE_REFUSAL_TARGET)
        if args.folds == "report":
            model = fit_model(rows, choose, names)
            cut = threshold_at([probability(row, model) for row in rows], choose, FALSE_REFUSAL_TARGET)
            ordered = [r for r in runs if r.fold in unseen_data.REPORT_FOLDS]
            report_rows = features(ordered)
            for row, value, uncovered in zip(report_rows, sentence_signal(ordered), pool_uncovered(ordered)):
                row[SIGNAL], row[POOL] = value, uncovered
            scores = [probability(row, model) for row in report_rows]
        got = rates(scores, ordered, cut)
        lines.append([label, fmt(auc_near(scores, ordered)), *(fmt(got[k]) for k in got)])
        if label == "+ both" and args.folds == "choose":
            model = fit_model(rows, choose, names)
            print("coefficients:", dict(zip(names, model["coefficients"])))
    print(f"\nfolds: {args.folds} ({len(lines)} deciders, cut at {FALSE_REFUSAL_TARGET} false refusals "
          f"{'out of fold' if args.folds == 'choose' else 'on the choosing folds'})\n")
    print(table(["decider", "AUC answerable vs near", "false refusals", "false (written)", "near misses refused",
                 "labelled near misses", "generic refused"], lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
