"""Score fusion, threshold and token-budget packing: pure functions over candidates.

fused = vector_weight * similarity + keyword_weight * keyword + heading_weight * heading
similarity = (1 - title_weight) * whole-snippet cosine + title_weight * title cosine
  (for a Swahili question and a Swahili snippet, each cosine is the better of the glossary's English reading
  and the question as written less NATIVE_OFFSET)
score = fused + canonical_boost (canonical) + answer-type boost - deprecated_penalty (deprecated)

- similarity: cosine similarity of the whole snippet, blended with its title's alone (a question an owner
  wrote as the title often matches a customer's wording better than title + body; 0 when the version has
  no embedding yet);
- keyword: IDF-weighted coverage: the share of the query's content words found in the candidate, each
  word weighted by its rarity in the tenant's KB (a BM25-like signal Postgres' ts_rank_cd lacks; on the
  development tenant it beat ts_rank_cd scaled by the best rank, see docs/adr/0007-retrieval-fusion-graduation-refusal.md);
- heading: share of the query's content words found in the title / key (or a chunk's heading path);
- answer type: a question asking for a price, time, duration or place lifts the candidates that hold one.

The defaults (0.8 / 0.1 / 0.0) make the ranking vector-first: full keyword coverage is worth 0.125 of
cosine similarity, so keyword evidence reorders near-ties and lifts keyword-only finds, but no longer
outweighs a clearly better semantic match (docs/adr/0007-retrieval-fusion-graduation-refusal.md, §1).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from knowledge.retrieval.answer_types import gives_type
from knowledge.retrieval.candidates import Candidate
from knowledge.tokens import token_estimate

# A candidate under the similarity threshold is kept while it is within this margin of the best one:
# when every match is weak (a paraphrase the model scores low) the cut follows the best match down
# instead of emptying the result. Whether to answer at all is the refusal model's decision.
THRESHOLD_MARGIN = 0.15
# Added to a candidate that holds the kind of answer the question asks for (a price for "how much", a place
# for "where"): chosen on the choosing folds by bench/ranking_weights.py.
ANSWER_TYPE_BOOST = 0.08
# A Swahili question is embedded as the glossary's English, which an owner's Swahili snippet is far from; the
# question as written is compared with Swahili snippets too, less this offset (two Swahili texts share
# function words whatever they say). Chosen on the choosing folds (docs/BENCHMARKS.md, issue 12, seventh sitting:
# 0.2), re-chosen on twenty-two of them by bench/native_offset.py (twenty-first sitting): an owner's Swahili-only
# snippet drew Swahili questions it does not answer, and the glossary's English reading now carries most of them.
NATIVE_OFFSET = 0.35
# An owner's Swahili snippet is also read through the glossary into English and compared with the question's
# vector (English as asked, or a Swahili question's English reading), less this offset: the English-only encoder
# reads a Swahili text poorly, so the glossary's reading is the only view of its meaning it has. Chosen on the
# choosing folds (docs/BENCHMARKS.md, issue 12, tenth sitting).
READING_OFFSET = 0.1
# Packing cuts a result that does not fit down to an excerpt instead of skipping it: always the first
# result, and the next ones of the top TRUNCATE_TOP while at least MIN_EXCERPT_TOKENS are left.
TRUNCATE_TOP = 3
MIN_EXCERPT_TOKENS = 150
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


@dataclass(frozen=True)
class Weights:
    vector: float = 0.8
    keyword: float = 0.1
    heading: float = 0.0
    title: float = 0.3
    canonical_boost: float = 0.05
    deprecated_penalty: float = 0.15

    @classmethod
    def from_settings(cls, row) -> Weights:
        return cls(vector=row.vector_weight, keyword=row.keyword_weight, heading=row.heading_weight,
                   title=row.title_weight,
                   canonical_boost=row.canonical_boost, deprecated_penalty=row.deprecated_penalty)


def fuse(candidates: list[Candidate], weights: Weights, *, types: set[str] | frozenset[str] = frozenset(),
         type_boost: float = ANSWER_TYPE_BOOST) -> None:
    """Fill each candidate's component scores, boost/penalty and final score (in place). `types`: the answer
    types the question asks for (answer_types); a candidate giving all of them gets `type_boost`."""
    for candidate in candidates:
        candidate.vector_score = max(_blended(candidate, weights.title), 0.0)
        # Document chunks come with plain coverage only (their search module has no IDF weights).
        coverage = candidate.idf_coverage if candidate.source == "snippet" else candidate.coverage
        candidate.keyword_score = min(max(coverage, 0.0), 1.0)
        candidate.heading_score = (candidate.heading_terms / candidate.query_terms
                                   if candidate.query_terms else 0.0)
        candidate.fused = (weights.vector * candidate.vector_score + weights.keyword * candidate.keyword_score
                           + weights.heading * candidate.heading_score)
        candidate.boost = weights.canonical_boost if candidate.status == "canonical" else 0.0
        candidate.penalty = weights.deprecated_penalty if candidate.status == "deprecated" else 0.0
        candidate.type_boost = type_boost if types and _gives_all(candidate, types) else 0.0
        candidate.score = candidate.fused + candidate.boost + candidate.type_boost - candidate.penalty


def meaning(candidate: Candidate) -> tuple[float | None, float | None]:
    """(snippet, title) similarity by meaning as ranking reads it: for a Swahili snippet, the better of the
    stored vector, the native reading (a Swahili question as written) less NATIVE_OFFSET and the snippet's
    English reading less READING_OFFSET."""
    similarity, title = candidate.similarity, candidate.title_similarity
    for other, offset in ((candidate.native_similarity, NATIVE_OFFSET),
                          (candidate.reading_similarity, READING_OFFSET)):
        if other is not None:
            similarity = max(similarity or 0.0, other - offset)
    for other, offset in ((candidate.native_title_similarity, NATIVE_OFFSET),
                          (candidate.reading_title_similarity, READING_OFFSET)):
        if other is not None:
            title = max(title or 0.0, other - offset)
    return similarity, title


def _blended(candidate: Candidate, title_weight: float) -> float:
    return blend(*meaning(candidate), title_weight)


def blend(similarity: float | None, title: float | None, title_weight: float) -> float:
    """The whole-snippet and title cosines as ranking weighs them (the whole alone when there is no title)."""
    if title is None:
        return similarity or 0.0
    return (1 - title_weight) * (similarity or 0.0) + title_weight * title


def _gives_all(candidate: Candidate, types: set[str] | frozenset[str]) -> bool:
    text = f"{candidate.title}. {candidate.body}"
    return all(gives_type(text, name) for name in types)


def rank(candidates: list[Candidate]) -> list[Candidate]:
    """Best score first; a smaller snippet first on ties (it packs more easily), then by key."""
    return sorted(candidates, key=lambda c: (-round(c.score, 9), c.token_count, c.key, c.id))


@dataclass
class ThresholdResult:
    kept: list[Candidate]
    dropped: list[Candidate]
    fallback_used: bool
    cut: float = 0.0  # the similarity actually required (threshold, or best - margin when lower)


def apply_threshold(candidates: list[Candidate], *, threshold: float,
                    margin: float = THRESHOLD_MARGIN) -> ThresholdResult:
    """Drop low-similarity noise: candidates below both the threshold and (best similarity - margin). A
    candidate whose title is that close stays too.

    The best vector match is never dropped, so the threshold alone never empties a result (answer or
    refuse is decided by the calibrated refusal model). A version still waiting for its embedding stays
    when keyword search found it. When no candidate reaches the threshold itself, the keyword matches are
    kept as well (the SOP's FTS fallback, `fallback_used`); without any vector candidate they are all.
    """
    similarities = [c.similarity for c in candidates if c.similarity is not None]
    best = max(similarities) if similarities else None
    fallback = best is None or best < threshold
    cut = threshold if best is None else min(threshold, best - margin)
    kept: list[Candidate] = []
    for candidate in candidates:
        if candidate.similarity is not None and _closeness(candidate) >= cut:
            candidate.match_type = "hybrid" if candidate.keyword_rank > 0 else "vector"
        elif candidate.keyword_rank > 0 and (candidate.similarity is None or fallback):
            candidate.match_type = "keyword"
        else:
            continue
        kept.append(candidate)
    kept_ids = {c.id for c in kept}
    return ThresholdResult(kept=kept, dropped=[c for c in candidates if c.id not in kept_ids],
                           fallback_used=fallback and bool(kept), cut=cut)


def _closeness(candidate: Candidate) -> float:
    # The snippet's or its title's similarity: "How to book a technician" is no noise to "How do I book a
    # plumber?" however little of its long body (numbers, channels) the question's vector shares.
    similarity, title = meaning(candidate)
    return max(similarity or 0.0, title or 0.0)


@dataclass
class Packing:
    packed: list[Candidate]
    skipped: list[tuple[Candidate, str]]  # (candidate, why)
    used_tokens: int


def pack(candidates: list[Candidate], *, budget: int, k: int, used_tokens: int = 0,
         truncate_top: int = 0) -> Packing:
    """Take ranked candidates until k are packed, skipping any that would exceed the token budget and
    continuing with the next (smaller ones may still fit: the SOP's CONTINUE, not STOP).

    Within the first `truncate_top` places a result that does not fit is cut to an excerpt of what is
    left instead (always the first one; later ones while MIN_EXCERPT_TOKENS are left): a top result
    longer than the whole budget would otherwise never be returned.
    """
    packed: list[Candidate] = []
    skipped: list[tuple[Candidate, str]] = []
    used = used_tokens
    for candidate in candidates:
        if len(packed) >= k:
            skipped.append((candidate, f"beyond top {k}"))
            continue
        if used + candidate.token_count > budget:
            left = budget - used
            if len(packed) < truncate_top and (not packed or left >= MIN_EXCERPT_TOKENS) and \
                    truncate_to(candidate, max_tokens=left):
                packed.append(candidate)
                used += candidate.token_count
                continue
            skipped.append((candidate, f"needs {candidate.token_count} tokens, {left} left of {budget}"))
            continue
        packed.append(candidate)
        used += candidate.token_count
    return Packing(packed=packed, skipped=skipped, used_tokens=used)


def truncate_to(candidate: Candidate, *, max_tokens: int) -> bool:
    """Cut the candidate's body to whole sentences (or words) that fit `max_tokens` with its title; mark
    it truncated. False when not even a few words fit."""
    original = candidate.token_count
    pieces = [p for p in _SENTENCE_END.split(candidate.body) if p.strip()]
    if len(pieces) <= 1:
        pieces = candidate.body.split()
    body = _longest_prefix(candidate.title, pieces, max_tokens)
    if not body:
        body = _longest_prefix(candidate.title, candidate.body.split(), max_tokens)
    if not body:
        return False
    candidate.body = body
    candidate.token_count = token_estimate(f"{candidate.title}\n{body}")
    candidate.truncated = True
    candidate.citation = {**candidate.citation, "truncated": True, "full_tokens": original}
    return True


def _longest_prefix(title: str, pieces: list[str], max_tokens: int) -> str:
    """The longest prefix of `pieces` that, with the title and an ellipsis, fits `max_tokens`."""
    low, high = 0, len(pieces)
    while low < high:  # binary search: token_estimate grows with the prefix
        middle = (low + high + 1) // 2
        if token_estimate(f"{title}\n{' '.join(pieces[:middle])} …") <= max_tokens:
            low = middle
        else:
            high = middle - 1
    return f"{' '.join(pieces[:low])} …" if low else ""
