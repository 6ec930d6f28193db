"""An LLM that finds no grounded answer refuses with a typed refusal (a gap), never its own "I don't know":
through the real Anthropic and OpenAI clients on mocked transports, JSON and streaming."""
from __future__ import annotations

import json

import pytest

from chat_llm import anthropic_message, anthropic_stream, openai_completion, openai_stream
from conversations import i18n
from conversations.models import Turn
from conversations.prompting import load_prompt_template
from telemetry.models import Event

QUESTION = "Is there parking at the spa?"  # retrieval finds the parking snippet, so the LLM is asked


def _intent_reply(provider: str):
    return (anthropic_message('{"intent": "other"}', input_tokens=300, output_tokens=6) if provider == "anthropic"
            else openai_completion('{"intent":"other"}', prompt_tokens=250, completion_tokens=5))


def _assert_recorded_as_gap(body: dict) -> None:
    turn = Turn.objects.get(public_id=body["turn_id"])
    assert turn.refusal_reason == "no_relevant_context"
    assert turn.answer == i18n.deflection("no_relevant_context", language="en")
    refusal = Event.objects.get(name="refusal", payload__turn_id=body["turn_id"])
    assert refusal.payload["reason"] == "no_relevant_context" and refusal.payload["question"] == QUESTION
    gap = Event.objects.get(name="knowledge_gap_candidate", payload__turn_id=body["turn_id"])
    assert gap.payload["refused"] is True and gap.payload["cited"] == []
    assert turn.cost_usd > 0  # the LLM call that refused is still paid for


def test_the_answer_shaper_prompt_asks_for_the_refusal_marker():
    assert "reply with exactly [[NO_ANSWER]] and nothing else" in " ".join(load_prompt_template().system_message.split())


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_an_llm_refusal_is_a_typed_refusal_in_json(chat, llm, provider):
    server = llm(provider)
    reply = anthropic_message("[[NO_ANSWER]]", output_tokens=5) if provider == "anthropic" else \
        openai_completion("[[NO_ANSWER]]", completion_tokens=5)
    server.replies = [_intent_reply(provider), reply]
    body = chat(message=QUESTION).json()
    assert body["refusal_reason"] == "no_relevant_context"
    assert body["answer"] == i18n.deflection("no_relevant_context", language="en")
    assert "NO_ANSWER" not in body["answer"] and body["citations"] == []
    assert body["meta"]["provider"] == provider and body["meta"]["refused_by"] == "llm"
    _assert_recorded_as_gap(body)


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_an_llm_refusal_streams_the_deflection_and_never_the_marker(chat, llm, provider):
    server = llm(provider)
    pieces = ["[[NO_", "ANS", "WER]]"]
    server.replies = [_intent_reply(provider),
                      anthropic_stream(pieces) if provider == "anthropic" else openai_stream(pieces)]
    response = chat(path="/api/v1/chat/turns/stream/", message=QUESTION)
    assert response.status_code == 200
    text = b"".join(response.streaming_content).decode()
    final = json.loads(text.rsplit("event: final\ndata: ", 1)[1])
    deltas = [json.loads(line[len("data: "):])["text"] for line in text.splitlines()
              if line.startswith("data: ") and '"text"' in line and "session_id" not in line]
    assert "".join(deltas) == final["answer"] == i18n.deflection("no_relevant_context", language="en")
    assert not any("[[" in delta or "NO_" in delta for delta in deltas)
    assert final["refusal_reason"] == "no_relevant_context" and final["replaces_streamed_text"] is False
    assert final["meta"]["refused_by"] == "llm"
    _assert_recorded_as_gap(final)


def test_a_swahili_llm_refusal_is_deflected_in_swahili(chat, llm):
    server = llm("openai")
    # A Swahili question: the query rewrite is a call of its own, between the intent and the answer.
    server.replies = [openai_completion('{"intent":"other"}'), openai_completion("car parking"),
                      openai_completion("[[NO_ANSWER]]")]
    body = chat(message="Je, kuna maegesho ya magari?", language="sw").json()
    assert [call["purpose"] for call in body["meta"]["llm_calls"]] == ["intent", "rewrite", "answer"]
    assert body["refusal_reason"] == "no_relevant_context"
    assert body["answer"] == i18n.deflection("no_relevant_context", language="sw")
