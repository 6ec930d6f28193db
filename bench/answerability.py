"""Where the bench keeps the answerability cross-encoder it trains (the model itself is product code).

`knowledge/retrieval/answerability.py` holds the model, its windows and the second stage;
`bench/train_answerability.py` writes new weights to WEIGHTS_PATH below, `bench/fit_refusal.py
--answerability` reports them as the refusal decision's second stage, and `--ship-answerability` copies them
next to the product's module. docs/BENCHMARKS.md has every try's figures.
"""
from __future__ import annotations

from pathlib import Path

WEIGHTS_PATH = Path(__file__).resolve().parent / "results" / "answerability.safetensors"
