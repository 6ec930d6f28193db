"""A message asking several questions: retrieval measures every snippet against each question (real embeddings)."""
from __future__ import annotations

import pytest
from retrieval_kb import embedder_down, kb, mode  # noqa: F401 (fixtures)

from knowledge.retrieval import fetch_snippets

pytestmark = pytest.mark.django_db

TWO = "Where are you, and is there parking?"


def _closest(result, piece: str) -> str:
    snippets = [s for s in result.snippets if piece in s.part_similarities]
    return max(snippets, key=lambda s: s.part_similarities[piece]).key


@pytest.mark.parametrize("retrieval_mode", ["hybrid", "inline"])
def test_each_question_of_a_message_is_measured_against_every_snippet(kb, mode, retrieval_mode):
    kb.spa()
    mode(retrieval_mode)
    result = fetch_snippets("other", query=TWO, channel="chat")
    assert result.snippets
    for snippet in result.snippets:
        assert set(snippet.part_similarities) == {"Where are you", "is there parking"}
    assert _closest(result, "Where are you") == "location"
    assert _closest(result, "is there parking") == "parking"


@pytest.mark.parametrize("retrieval_mode", ["hybrid", "inline"])
def test_a_single_question_carries_no_part_similarities(kb, mode, retrieval_mode):
    kb.spa()
    mode(retrieval_mode)
    result = fetch_snippets("other", query="Is there parking at the spa?", channel="chat")
    assert result.snippets and all(s.part_similarities == {} for s in result.snippets)


def test_a_question_no_snippet_reaches_the_threshold_for_is_left_out(kb, mode):
    kb.spa()
    mode("hybrid")
    result = fetch_snippets("other", query="Is there parking, and do you repair motorbike tyres?", channel="chat")
    # Nothing in a spa's knowledge is close to tyre repairs: one question is left, which needs no part sources.
    assert result.snippets and all(s.part_similarities == {} for s in result.snippets)
    mode("hybrid", similarity_threshold=0.0)
    result = fetch_snippets("other", query="Is there parking, and do you repair motorbike tyres?", channel="chat")
    assert all(set(s.part_similarities) == {"Is there parking", "do you repair motorbike tyres"}
               for s in result.snippets)


def test_a_swahili_message_is_measured_by_the_glossarys_reading_of_each_question(kb, mode):
    kb.spa()
    mode("hybrid")
    result = fetch_snippets("other", query="Mko wapi, na kuna maegesho?", channel="chat")
    assert _closest(result, "Mko wapi") == "location"
    assert _closest(result, "kuna maegesho") == "parking"


def test_when_the_parts_cannot_be_embedded_the_turn_still_retrieves(kb, mode, monkeypatch):
    kb.spa()
    mode("hybrid")
    monkeypatch.setattr("knowledge.retrieval.pipeline.embed_cached", embedder_down)
    result = fetch_snippets("other", query=TWO, channel="chat")
    assert result.snippets and all(s.part_similarities == {} for s in result.snippets)
