"""Trivial turns: SOP rules plus Swahili, and reuse of the session's last retrieval without any search."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from retrieval_kb import kb, mode  # noqa: F401 (fixtures)

from knowledge.retrieval import Retrieval, RetrievedSnippet, fetch_snippets, is_trivial, retrieval_to_dict


@pytest.mark.parametrize("message", ["ok", "Thanks!", "ok thanks", "Thank you so much!", "got it", "cheers",
                                     "asante", "Asante sana", "sawa", "Poa, asante sana", "Sawa, nimeelewa",
                                     "shukran", "Hi", "Habari za asubuhi", "yes please", "👍 ok"])
def test_it_recognises_trivial_turns(message):
    assert is_trivial(message) is True


@pytest.mark.parametrize("message", ["Is there parking?", "ok what time do you close", "thanks, how much is it",
                                     "ok cancel my booking", "asante, bei gani?", "sawa kesho", "where",
                                     "thanks for the info about parking and the deposit rules", "", "parking"])
def test_it_does_not_treat_questions_or_domain_terms_as_trivial(message):
    assert is_trivial(message) is False


def _last() -> Retrieval:
    snippet = RetrievedSnippet(key="parking", version=2, title="Parking", body="Free parking.", category="facility",
                               score=0.71, match_type="hybrid", token_count=12)
    return Retrieval(intent="other", query="Is there parking?", channel="chat", mode="hybrid", snippets=[snippet],
                     returned_count=1, empty=False, retrieved_tokens=12, embedding_ms=21.0, retrieval_ms=4.0)


@pytest.mark.parametrize("stored", ["object", "dict", "callable"])
def test_a_trivial_turn_reuses_the_last_retrieval_without_embedding_or_queries(stored, monkeypatch):
    # No database access is allowed in this test: a single query would raise.
    def no_embedding(text):
        raise AssertionError("a trivial turn must not embed")

    monkeypatch.setattr("knowledge.retrieval.pipeline.embed_query", no_embedding)
    last = _last()
    value = {"object": last, "dict": retrieval_to_dict(last), "callable": lambda: last}[stored]
    session = SimpleNamespace(last_retrieval=value)
    result = fetch_snippets("thanks", query="asante sana", channel="chat", session=session)
    assert result.trivial is True
    assert [(s.key, s.version, s.score) for s in result.snippets] == [("parking", 2, 0.71)]
    assert result.embedding_ms == 0.0
    assert result.query == "asante sana"
    assert result.intent == "thanks"
    assert result.debug == {"trivial": True, "reused_last_retrieval": True}


@pytest.mark.django_db
def test_a_trivial_turn_without_a_previous_retrieval_returns_nothing(tenant, monkeypatch):
    monkeypatch.setattr("knowledge.retrieval.pipeline.embed_query",
                        lambda text: (_ for _ in ()).throw(AssertionError("no embedding")))
    result = fetch_snippets("thanks", query="ok thanks", channel="chat", session=SimpleNamespace(last_retrieval={}))
    assert (result.trivial, result.snippets, result.empty, result.refusal_reason) == (True, [], True, None)
