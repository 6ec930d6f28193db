"""POST /api/v1/chat/turns/: the JSON contract of docs/DESIGN.md §7, exactly."""
from __future__ import annotations

import pytest

from conversations.models import Session, Turn

TOP_KEYS = {"session_id", "turn_id", "intent", "answer", "citations", "refusal_reason", "meta"}
META_KEYS = {"mode", "provider", "model", "latency_ms", "retrieved_count", "prompt_tokens", "cost_usd",
             "language", "trivial"}
CITATION_KEYS = {"key", "version", "title", "score", "excerpt"}


def test_a_grounded_answer_has_the_documented_shape(chat):
    response = chat(message="Is there parking at the spa?")
    assert response.status_code == 200
    body = response.json()
    print(body)
    assert set(body) == TOP_KEYS
    assert META_KEYS <= set(body["meta"])
    assert body["intent"] == "other"
    assert body["refusal_reason"] is None
    assert body["citations"][0]["key"] == "parking"
    assert CITATION_KEYS <= set(body["citations"][0])
    assert body["citations"][0]["version"] == 1
    assert "basement of Mirage Tower" in body["answer"]
    assert body["meta"]["provider"] == "extractive"
    assert body["meta"]["mode"] in ("inline", "hybrid")
    assert body["meta"]["cost_usd"] == 0.0
    session = Session.objects.get(public_id=body["session_id"])
    turn = Turn.objects.get(public_id=body["turn_id"])
    assert turn.session == session and turn.answer == body["answer"] and turn.intent == "other"
