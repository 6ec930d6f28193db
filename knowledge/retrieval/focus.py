"""Sentence focus: how much of a question one sentence of a candidate says, as a ranking signal.

A snippet's vector and its keyword coverage read the whole text: "Every shave uses a new single-use razor blade" in a
hygiene snippet about clippers, combs and towels is as far from "Do you use a new razor blade for every shave?" as an
aftercare snippet that mentions razor bumps and shaves in different sentences. The focus is the rarity-weighted share
of the question's words that the candidate's best single sentence (with its title) holds; rarity is counted over the
candidates, so words every candidate shares weigh little.
"""
from __future__ import annotations

import math
from functools import lru_cache

from knowledge.retrieval.candidates import Candidate

# Added to a candidate's score per unit of focus. Chosen on the choosing folds from 0.1, 0.2 and 0.3 (first citation
# 0.899, 0.903, 0.897 against 0.895 without; docs/BENCHMARKS.md, issue 12, eighteenth sitting).
FOCUS_WEIGHT = 0.2
MIN_TERMS = 2


def add_focus(candidates: list[Candidate], *, question: str, weight: float = FOCUS_WEIGHT) -> None:
    """Add `weight` x the best sentence's share of the question's words to each candidate's score (in place)."""
    from knowledge.retrieval.sentences import content_terms, terms_match

    if not weight or len(candidates) < 2:
        return
    asked = content_terms(question)
    if not asked:
        return
    sentences = [_sentence_terms(c.title, c.body) for c in candidates]
    # Which of all the candidates' terms each question word matches, worked out once for the turn.
    everything = set().union(*(terms for sentence_terms in sentences for terms in sentence_terms))
    matching = {term: {t for t in everything if terms_match(term, t)} for term in asked}

    def held(terms: frozenset[str]) -> set[str]:
        return {term for term in asked if not matching[term].isdisjoint(terms)}

    found = [held(frozenset().union(*terms)) for terms in sentences]
    frequency = {term: sum(term in matched for matched in found) for term in asked}
    total = len(candidates)
    weights = {term: math.log(1 + (total + 1) / (frequency[term] + 0.5)) for term in asked}
    whole = sum(weights.values())
    for candidate, terms in zip(candidates, sentences):
        # One word in a sentence is what the whole snippet's keyword coverage says already ("Please come in the shoes
        # you will wear" is no answer to "Do you sell shoes?"): a sentence focuses when it holds two or more.
        best = max((sum(weights[t] for t in matched) for matched in map(held, terms) if len(matched) >= MIN_TERMS),
                   default=0.0)
        candidate.focus = best / whole
        candidate.score += weight * candidate.focus


@lru_cache(maxsize=4096)
def _sentence_terms(title: str, body: str) -> tuple[frozenset[str], ...]:
    """Each sentence's terms, read with the title; cached, since the same snippets come back turn after turn."""
    from knowledge.retrieval.sentences import content_terms, split_sentences

    return tuple(frozenset(content_terms(f"{title}. {sentence}")) for sentence in split_sentences(body) or [""])
