"""Chat turns through the real Anthropic and OpenAI clients against mocked HTTP transports:
LLM intent classification, LLM answers and their cost, provider errors (never a 5xx) and the cost ceiling."""
from __future__ import annotations

from decimal import Decimal

import pytest

from chat_llm import (FakeLlmServer, anthropic_error, anthropic_message, openai_completion, openai_error,
                      openai_stream)
from conversations import intents, services
from conversations.models import Session, Turn
from telemetry.models import Event


PARKING_ANSWER = "Free parking for guests is available in the basement of Mirage Tower [1]."


def test_an_anthropic_turn_classifies_and_answers_through_the_client_and_records_cost(chat, llm):
    server = llm("anthropic")
    server.replies = [anthropic_message('{"intent": "other"}', input_tokens=300, output_tokens=6),
                      anthropic_message(PARKING_ANSWER, input_tokens=1200, output_tokens=60)]
    body = chat(message="Is there parking at the spa?").json()
    assert body["intent"] == "other" and body["refusal_reason"] is None
    assert body["answer"] == PARKING_ANSWER
    assert body["meta"]["provider"] == "anthropic"
    assert body["meta"]["model"] == "claude-haiku-4-5-20251001"
    assert [c["key"] for c in body["citations"]] == ["parking"]
    intent_request = server.body(0)
    assert intent_request["system"][0]["text"] == intents.LLM_SYSTEM_PROMPT and intent_request["max_tokens"] == 20
    assert "Is there parking at the spa?" in intent_request["messages"][0]["content"]
    assert server.requests[1].url.path == "/v1/messages"
    turn = Turn.objects.get(public_id=body["turn_id"])
    assert turn.cost_usd > 0 and float(turn.cost_usd) == body["meta"]["cost_usd"]
    assert (turn.intent_source, turn.input_tokens, turn.output_tokens) == ("llm", 1200, 60)
    assert Session.objects.get(public_id=body["session_id"]).cost_usd == turn.cost_usd


def test_an_openai_turn_streams_through_the_sse_endpoint(chat, llm):
    server = llm("openai")
    server.replies = [openai_completion('{"intent":"other"}', prompt_tokens=250, completion_tokens=5),
                      openai_stream(["Free parking for guests is available ", "in the basement of ",
                                     "Mirage Tower [1]."])]
    response = chat(path="/api/v1/chat/turns/stream/", message="Is there parking at the spa?")
    assert response.status_code == 200
    text = b"".join(response.streaming_content).decode()
    final = text.rsplit("event: final\ndata: ", 1)[1]
    import json

    final = json.loads(final)
    deltas = [json.loads(line[len("data: "):])["text"] for line in text.splitlines()
              if line.startswith("data: ") and '"text"' in line and "session_id" not in line]
    assert "".join(deltas) == final["answer"] == PARKING_ANSWER
    assert final["meta"]["provider"] == "openai" and final["replaces_streamed_text"] is False
    assert server.body(1)["stream"] is True


@pytest.mark.parametrize("provider, failure", [
    ("anthropic", anthropic_error(529, "overloaded_error", "Overloaded")),
    ("anthropic", anthropic_error(401, "authentication_error", "invalid x-api-key")),
    ("openai", openai_error(500, "The server had an error")),
    ("openai", openai_error(429, "Rate limit reached", code="rate_limit_exceeded")),
])
def test_a_provider_error_is_answered_extractively_never_a_5xx(chat, llm, provider, failure):
    server = llm(provider)
    ok_intent = (anthropic_message('{"intent":"other"}') if provider == "anthropic"
                 else openai_completion('{"intent":"other"}'))
    server.replies = [ok_intent, failure]
    response = chat(message="Is there parking at the spa?")
    assert response.status_code == 200
    body = response.json()
    assert body["meta"]["provider"] == "extractive"
    assert body["meta"]["fallback_reason"] == "provider_error"
    assert body["meta"]["requested_provider"] == provider
    assert "basement of Mirage Tower" in body["answer"]
    assert body["citations"][0]["key"] == "parking"
    assert Event.objects.filter(name="provider_error").count() == 1


def test_a_failing_intent_call_falls_back_to_the_offline_classifier(chat, llm):
    server = llm("anthropic")
    server.replies = [anthropic_error(500, "api_error"), anthropic_message("How much is a Swedish massage? Sure",
                                                                          input_tokens=10, output_tokens=2)]
    # The answer call gets prose without a price: grounding passes (no figures), so the LLM text stands.
    body = chat(message="How much is a Swedish massage?").json()
    assert body["intent"] == "services"
    assert Turn.objects.get(public_id=body["turn_id"]).intent_source == "rules"


def test_an_unreadable_intent_reply_falls_back_to_the_offline_classifier(tenant, llm):
    server = llm("anthropic")
    server.replies = [anthropic_message("I think it is about booking, maybe?")]
    result = services.intent_classify(message="What time do you open on Sunday?")
    # Whatever the offline rules make of it (they change on their own), it is their answer, not the LLM's.
    assert len(server.requests) == 1
    assert result == intents.classify("What time do you open on Sunday?") and result.intent == "hours"


def test_past_the_hard_ceiling_no_llm_is_called_and_meta_says_extractive(chat, llm):
    server = llm("anthropic")
    session_id = chat(message="Hi").json()["session_id"]  # a greeting: rules only, no LLM call
    Session.objects.filter(public_id=session_id).update(cost_usd=Decimal("0.25"))
    first = chat(message="Is there parking at the spa?", session_id=session_id).json()
    second = chat(message="Do you take M-Pesa?", session_id=session_id).json()
    assert server.requests == []
    for body in (first, second):
        assert body["meta"]["provider"] == "extractive"
        assert body["meta"]["fallback_reason"] == "cost_ceiling"
        assert body["meta"]["cost_usd"] == 0.0
        assert body["refusal_reason"] is None
    assert "basement of Mirage Tower" in first["answer"]
    events = Event.objects.filter(name="cost_ceiling")
    assert [(e.payload["level"], e.payload["session_id"]) for e in events] == [("hard", session_id)]


def test_crossing_the_soft_ceiling_is_recorded_once(chat, llm, settings):
    settings.COST_SOFT_CEILING_USD = 0.001
    server = llm("anthropic")
    server.replies = [anthropic_message('{"intent":"other"}', input_tokens=100, output_tokens=5),
                      anthropic_message(PARKING_ANSWER, input_tokens=1200, output_tokens=60),
                      anthropic_message('{"intent":"other"}', input_tokens=100, output_tokens=5),
                      anthropic_message(PARKING_ANSWER, input_tokens=1200, output_tokens=60)]
    first = chat(message="Is there parking at the spa?").json()
    chat(message="Is there parking at the spa?", session_id=first["session_id"])
    events = list(Event.objects.filter(name="cost_ceiling"))
    assert [e.payload["level"] for e in events] == ["soft"]
    spent = Session.objects.get(public_id=first["session_id"]).cost_usd
    assert spent == sum(t.cost_usd for t in Turn.objects.all())


def test_a_refusal_makes_no_llm_call_even_with_an_llm_configured(chat, llm):
    server = llm("anthropic")
    server.replies = [anthropic_message('{"intent":"other"}')]
    body = chat(message="Who won the football world cup in 1998?").json()
    assert body["refusal_reason"] == "no_relevant_context"
    assert len(server.requests) == 1  # the intent call only; no answer call
    assert body["meta"]["provider"] == "none"


def test_an_unexpected_failure_inside_an_llm_answer_still_answers_extractively(chat, llm, monkeypatch):
    import conversations.shaping as shaping

    server = llm("anthropic")
    server.replies = [anthropic_message('{"intent":"other"}'), anthropic_message(PARKING_ANSWER)]

    def broken(**kwargs):
        raise RuntimeError("a bug in a check")

    monkeypatch.setattr(shaping, "check_grounding", broken)
    response = chat(message="Is there parking at the spa?")
    assert response.status_code == 200
    body = response.json()
    assert body["meta"]["provider"] == "extractive" and body["meta"]["fallback_reason"] == "provider_error"
    assert "basement of Mirage Tower" in body["answer"]
    assert Event.objects.get(name="provider_error").payload["code"] == "unexpected"
