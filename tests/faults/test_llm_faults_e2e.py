"""LLM faults through the chat API, JSON and SSE: timeouts, 500s, 429s and malformed or cut streams from the
real Anthropic/OpenAI clients (mocked HTTP) end in the extractive answer, a stored turn that says what failed,
a retrieval-log row and one provider_error event — never a 5xx."""
from __future__ import annotations

import json

import httpx2
import pytest

from conversations.models import Turn
from shaping_helpers import (MockServer, anthropic_error, anthropic_events, broken_stream, openai_chunks,
                             openai_error, raise_timeout, sse, stream_response)
from telemetry.models import Event, RetrievalLog

QUESTION = "Is there parking at the spa?"


def _garbage_json(request):
    return httpx2.Response(200, headers={"content-type": "application/json"}, content=b'{"id": "msg_01", "type"')


def _stalled(events_bytes: bytes):
    return lambda request: stream_response(broken_stream(events_bytes,
                                                         httpx2.ReadTimeout("stalled", request=request)))


FAILURES = {
    # (provider, failure name): (reply, expected ProviderError code)
    ("anthropic", "timeout"): (raise_timeout, "timeout"),
    ("anthropic", "500"): (anthropic_error(500, "api_error", "Internal server error"), "server_error"),
    ("anthropic", "429"): (anthropic_error(429, "rate_limit_error", "Number of requests exceeded"), "rate_limited"),
    ("anthropic", "malformed body"): (_garbage_json, "malformed"),
    ("openai", "timeout"): (raise_timeout, "timeout"),
    ("openai", "500"): (openai_error(500, "The server had an error"), "server_error"),
    ("openai", "429"): (openai_error(429, "Rate limit reached", code="rate_limit_exceeded"), "rate_limited"),
    ("openai", "malformed body"): (_garbage_json, "malformed"),
}

STREAM_FAILURES = {
    # (provider, failure name): (reply, expected code, whether LLM text had already been streamed)
    ("anthropic", "timeout"): (raise_timeout, "timeout", False),
    ("anthropic", "429"): (anthropic_error(429, "rate_limit_error"), "rate_limited", False),
    ("anthropic", "garbage event"): (stream_response(sse(anthropic_events(["Free "], finish=False)
                                                         + [("content_block_delta", "{not json")])), "malformed",
                                 False),
    ("anthropic", "cut before message_stop"): (stream_response(sse(anthropic_events(["Free parking is "],
                                                                                    finish=False))), "malformed",
                                            False),
    ("anthropic", "stalls mid-stream"): (_stalled(sse(anthropic_events(["Free parking for guests is in the "
                                                                         "basement of Mirage Tower, "],
                                                                        finish=False))), "timeout", True),
    ("openai", "500"): (openai_error(500), "server_error", False),
    ("openai", "garbage chunk"): (stream_response(sse(openai_chunks(["Free "], finish=False, done=False)
                                                      + [(None, "{not json")])), "malformed", False),
    ("openai", "cut before finish"): (stream_response(sse(openai_chunks(["Free parking "], finish=False,
                                                                        done=False))), "malformed", False),
}


@pytest.fixture
def llm(settings, monkeypatch):
    """llm(provider, reply) -> MockServer: the configured LLM answers through the real client with `reply`."""
    from llm import clients

    def configure(name: str, reply) -> MockServer:
        server = MockServer([reply])
        settings.LLM_PROVIDER = name
        settings.ANTHROPIC_API_KEY = "sk-ant-test" if name == "anthropic" else ""
        settings.OPENAI_API_KEY = "sk-test" if name == "openai" else ""
        settings.INTENT_CLASSIFIER = "offline"  # the answer is the only LLM call
        settings.LLM_MAX_RETRIES = 0
        monkeypatch.setattr(clients, "default_http_client", lambda config: server.client())
        clients.clients_clear()
        return server

    return configure


def _assert_recorded(body: dict, *, provider: str, code: str) -> Turn:
    assert body["meta"]["provider"] == "extractive"
    assert body["meta"]["fallback_reason"] == "provider_error"
    assert body["meta"]["requested_provider"] == provider
    assert "basement of Mirage Tower" in body["answer"]
    assert [c["key"] for c in body["citations"]][:1] == ["parking"]
    turn = Turn.objects.get(public_id=body["turn_id"])
    assert (turn.provider, turn.answer, turn.message) == ("extractive", body["answer"], QUESTION)
    assert turn.meta["provider_error"].startswith(f"{code}: ")
    assert turn.meta["fallback_reason"] == "provider_error"
    assert RetrievalLog.objects.filter(turn_id=body["turn_id"], provider="extractive").count() == 1
    events = list(Event.objects.filter(name="provider_error"))
    assert [(e.payload["code"], e.payload["requested_provider"]) for e in events] == [(code, provider)]
    return turn


@pytest.mark.parametrize("provider, failure", list(FAILURES), ids=[f"{p}-{f}" for p, f in FAILURES])
def test_a_failing_llm_answers_extractively_and_the_turn_is_recorded(chat, llm, provider, failure):
    reply, code = FAILURES[(provider, failure)]
    server = llm(provider, reply)
    response = chat(message=QUESTION)
    assert response.status_code == 200
    _assert_recorded(response.json(), provider=provider, code=code)
    assert len(server.requests) == 1


def _read_sse(response) -> tuple[list[str], dict]:
    text = b"".join(response.streaming_content).decode()
    deltas, final = [], None
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        if lines["event"] == "delta":
            deltas.append(json.loads(lines["data"])["text"])
        elif lines["event"] == "final":
            final = json.loads(lines["data"])
        else:
            raise AssertionError(f"unexpected SSE event: {block}")
    return deltas, final


@pytest.mark.parametrize("provider, failure", list(STREAM_FAILURES), ids=[f"{p}-{f}" for p, f in STREAM_FAILURES])
def test_a_failing_llm_stream_ends_in_a_final_extractive_answer(chat, llm, provider, failure):
    reply, code, replaced = STREAM_FAILURES[(provider, failure)]
    llm(provider, reply)
    response = chat(path="/api/v1/chat/turns/stream/", message=QUESTION)
    assert response.status_code == 200
    deltas, final = _read_sse(response)
    assert final is not None
    turn = _assert_recorded(final, provider=provider, code=code)
    assert final["replaces_streamed_text"] is replaced
    if replaced:
        # Part of the LLM's text had already gone out: the client is told to show the final answer instead.
        assert "".join(deltas) != final["answer"] and turn.meta.get("replaces_streamed_text") is True
    else:
        assert "".join(deltas) == final["answer"]
