"""Answer or refuse: a calibrated logistic model over retrieval signals.

The coefficients live in refusal_model.json, produced by `bench/fit_refusal.py` from the development
tenant's labelled questions (answerable vs unanswerable) and checked on the public tenants as held-out
data. Nothing here is tuned per question: the same signals feed one model for every tenant.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from knowledge.retrieval.candidates import Candidate

MODEL_PATH = Path(__file__).with_name("refusal_model.json")
REFUSAL_REASON = "no_relevant_context"
SPREAD_RANK = 5

# Used until a fitted model file exists: answers when the best similarity is clearly topical.
_FALLBACK_MODEL = {
    "features": ["top_similarity"], "coefficients": [12.0], "intercept": -4.8, "threshold": 0.5,
    "means": [0.0], "scales": [1.0], "source": "fallback (no fitted model)",
}

FEATURES = ("top_similarity", "top_coverage", "margin", "fts_hit", "swahili", "swahili_x_similarity",
            "top_heading", "top_spread")


@dataclass(frozen=True)
class Signals:
    """What the refusal decision looks at, for one query's candidates."""

    top_similarity: float
    top_coverage: float
    margin: float
    fts_hit: float
    swahili: float
    swahili_x_similarity: float
    top_heading: float
    top_spread: float = 0.0  # best similarity minus the fifth best: how far the best match stands out

    def as_dict(self) -> dict[str, float]:
        return {name: round(getattr(self, name), 4) for name in FEATURES}


def signals_for(candidates: list[Candidate], *, language: str) -> Signals:
    """Signals over the candidates (before threshold and packing, so packing never changes the decision)."""
    similarities = sorted((c.similarity for c in candidates if c.similarity is not None), reverse=True)
    # Margin and spread compare the best match with the field. A KB with fewer candidates has no one else
    # in the field: a missing competitor counts as an unrelated one (similarity 0).
    field = similarities + [0.0] * SPREAD_RANK
    top = field[0]
    margin = top - field[1]
    # A question the KB answers tends to have one match clearly above the field; a near-miss has several
    # similar, middling ones.
    spread = top - field[SPREAD_RANK - 1]
    ranked = sorted(candidates, key=lambda c: -(c.similarity or 0.0))[:3]
    coverage = max((_coverage(c) for c in ranked), default=0.0)
    # Keyword evidence anywhere counts too: a version without an embedding yet is found only this way.
    coverage = max(coverage, max((_coverage(c) for c in candidates if c.keyword_rank > 0), default=0.0))
    heading = max((c.heading_terms / c.query_terms for c in ranked if c.query_terms), default=0.0)
    swahili = 1.0 if language == "sw" else 0.0
    return Signals(top_similarity=top, top_coverage=coverage, margin=margin,
                   fts_hit=1.0 if any(c.keyword_rank > 0 for c in candidates) else 0.0,
                   swahili=swahili, swahili_x_similarity=swahili * top, top_heading=heading,
                   top_spread=spread)


def _coverage(candidate: Candidate) -> float:
    # Document chunks carry plain word coverage (their search has no IDF weights), as in fusion.
    return candidate.idf_coverage if candidate.source == "snippet" else candidate.coverage


@lru_cache(maxsize=1)
def load_model() -> dict:
    """The fitted model (or the fallback when the file is missing or unreadable)."""
    try:
        model = json.loads(MODEL_PATH.read_text())
        if len(model["features"]) != len(model["coefficients"]):
            raise ValueError("feature/coefficient count mismatch")
        return model
    except (OSError, ValueError, KeyError):
        return _FALLBACK_MODEL


def probability(signals: Signals, model: dict | None = None) -> float:
    """P(the retrieved context can answer the question)."""
    model = model or load_model()
    values = signals.as_dict()
    z = model["intercept"]
    for name, coefficient, mean, scale in zip(model["features"], model["coefficients"], model["means"],
                                              model["scales"], strict=True):
        z += coefficient * (values.get(name, 0.0) - mean) / (scale or 1.0)
    return 1.0 / (1.0 + math.exp(-max(min(z, 50.0), -50.0)))


@dataclass(frozen=True)
class Decision:
    probability: float
    threshold: float
    refusal_reason: str | None
    signals: Signals


def decide(candidates: list[Candidate], *, language: str, model: dict | None = None) -> Decision:
    """Refuse with `no_relevant_context` when the calibrated probability is below the model's threshold."""
    model = model or load_model()
    signals = signals_for(candidates, language=language)
    if not candidates:
        return Decision(probability=0.0, threshold=model["threshold"], refusal_reason=REFUSAL_REASON,
                        signals=signals)
    p = probability(signals, model)
    return Decision(probability=p, threshold=model["threshold"],
                    refusal_reason=None if p >= model["threshold"] else REFUSAL_REASON, signals=signals)
