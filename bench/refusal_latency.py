"""What the answer-or-refuse decision costs per turn, in process, against its similarity-only part.

    RATIBA_DB_NAME=bench_unseen .venv/bin/python bench/refusal_latency.py

Reads the pools cached by bench/unseen_data.py (the written businesses' questions) and times
`knowledge.retrieval.relevance.decide` on each: the whole decision, and in the same process on the same
pools the baseline, the similarity and keyword signals alone (no question words, no answer type, no
cross-encoder), and the first stage alone (everything but the cross-encoder's second stage). "Cold"
empties the word-vector cache before each question (a process that has never seen these words), "warm"
is every later question about a business whose words it has seen.
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common, unseen_data  # noqa: E402
from bench.common import percentile, table  # noqa: E402

SAMPLE_EVERY = 8  # every 8th question (~230): a cold lookup embeds some 200 words, ~0.3 s each time


def main() -> int:
    common.setup_django(migrate=False)
    from knowledge.retrieval import wordvec
    from knowledge.retrieval.pipeline import prepare_query
    from knowledge.retrieval import answerability
    from knowledge.retrieval.relevance import decide, load_model

    runs = [run for run in unseen_data.load_runs() if run.dataset in ("own", "dev")][::SAMPLE_EVERY]
    prepared = [prepare_query(run.text) for run in runs]
    model = load_model()
    first_only = {key: value for key, value in model.items() if key != "second_stage"}
    wordvec.warm()
    if model.get("second_stage"):
        answerability.warm()
    timings: dict[str, list[float]] = {"baseline: similarity signals only": [], "decision, cold word cache": [],
                                       "first stage alone, warm word cache": [], "decision, warm word cache": []}

    def timed(name, run, query, **kwargs):
        started = time.perf_counter()
        decide(run.pool, language=query.language.language, **kwargs)
        timings[name].append((time.perf_counter() - started) * 1000)

    def full(query):
        return {"question": query.text, "words": query.english_words, "read_text": query.embedding_text}

    for run, query in zip(runs, prepared):
        timed("baseline: similarity signals only", run, query, question="", words=[], model=first_only)
        wordvec._cache.clear()
        timed("decision, cold word cache", run, query, **full(query))
    for run, query in zip(runs, prepared):  # every question once, so each one's words are cached
        decide(run.pool, language=query.language.language, **full(query))
    for run, query in zip(runs, prepared):
        timed("first stage alone, warm word cache", run, query, **full(query), model=first_only)
        timed("decision, warm word cache", run, query, **full(query))
    base = statistics.median(timings["baseline: similarity signals only"])
    rows = [[name, len(values), statistics.median(values), percentile(values, 95), statistics.median(values) / base]
            for name, values in timings.items()]
    print(table(["per question", "n", "p50 ms", "p95 ms", "p50 / baseline"], rows,
                title=f"Answer-or-refuse decision cost ({len({r.business for r in runs})} written businesses)"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
