"""The Anthropic provider driven through the real `anthropic` client against a mocked Messages API."""
from __future__ import annotations

import httpx2
import pytest
from django.test import override_settings

from conversations.prompting import assemble_prompt
from conversations.providers import (HostedProvider, ProviderError, ProviderNotConfigured, ProviderResult, TextDelta,
                                     get_provider)
from llm import sdk_client
from shaping_helpers import (ANTHROPIC_MODEL, CORE, PARKING, MockServer, anthropic_error, anthropic_events,
                             anthropic_message, broken_stream, hosted, raise_timeout, sse, stream_response)


@pytest.fixture
def prompt():
    return assemble_prompt(question="Is there parking?", language="en", channel="chat", snippets=[PARKING],
                           core_sections=list(CORE))


def provider_for(server: MockServer, **options) -> HostedProvider:
    return hosted("anthropic", server, api_key="sk-ant-test", model="claude-haiku-4-5", **options)


def test_it_sends_a_cached_system_block_and_returns_text_tokens_and_cost(prompt):
    server = MockServer([anthropic_message("Free parking is in the basement [1].", input_tokens=400,
                                           output_tokens=20, cache_read=1000, cache_write=0)])
    result = provider_for(server).generate(prompt)

    request = server.requests[0]
    assert request.url.path == "/v1/messages"
    assert "sk-ant-test" in (request.headers.get("x-api-key", "") + request.headers.get("authorization", ""))
    body = server.body()
    assert body["model"] == "claude-haiku-4-5"
    assert body["system"] == [{"type": "text", "text": prompt.system, "cache_control": {"type": "ephemeral"}}]
    assert body["messages"] == [{"role": "user", "content": prompt.user}]
    assert body["max_tokens"] == 500
    assert "stream" not in body or body["stream"] is False
    # haiku 4.5: $1/M input, $5/M output, $0.10/M cache reads.
    assert result == ProviderResult(text="Free parking is in the basement [1].", provider="anthropic",
                                    model=ANTHROPIC_MODEL, input_tokens=1400, output_tokens=20,
                                    cost_usd=round((400 * 1.0 + 20 * 5.0 + 1000 * 0.10) / 1e6, 8),
                                    cache_read_tokens=1000, cache_write_tokens=0, stop_reason="end_turn")
    assert result.cost_usd == 0.0006


def test_it_streams_text_deltas_then_a_result_with_usage(prompt):
    server = MockServer([stream_response(sse(anthropic_events(["Free ", "parking ", "[1]."], input_tokens=300,
                                                              output_tokens=9, cache_read=900)))])
    items = list(provider_for(server).stream(prompt))

    assert server.body()["stream"] is True
    assert server.body()["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert [item.text for item in items[:-1]] == ["Free ", "parking ", "[1]."]
    assert all(isinstance(item, TextDelta) for item in items[:-1])
    assert items[-1] == ProviderResult(text="Free parking [1].", provider="anthropic", model=ANTHROPIC_MODEL,
                                       input_tokens=1200, output_tokens=9,
                                       cost_usd=round((300 * 1.0 + 9 * 5.0 + 900 * 0.1) / 1e6, 8),
                                       cache_read_tokens=900, stop_reason="end_turn")


@pytest.mark.parametrize("status, error_type, code, retryable", [
    (500, "api_error", "server_error", True),
    (429, "rate_limit_error", "rate_limited", True),
    (529, "overloaded_error", "overloaded", True),
    (400, "invalid_request_error", "rejected", False),
    (401, "authentication_error", "rejected", False),
])
def test_http_errors_become_provider_errors_that_say_whether_to_retry(prompt, status, error_type, code, retryable):
    server = MockServer([anthropic_error(status, error_type)])
    with pytest.raises(ProviderError) as caught:
        provider_for(server).generate(prompt)
    assert (caught.value.code, caught.value.retryable, caught.value.status_code) == (code, retryable, status)
    assert caught.value.provider == "anthropic"


def test_errors_before_a_stream_starts_are_provider_errors(prompt):
    server = MockServer([anthropic_error(529, "overloaded_error")])
    with pytest.raises(ProviderError) as caught:
        list(provider_for(server).stream(prompt))
    assert (caught.value.code, caught.value.retryable) == ("overloaded", True)


def test_a_timeout_is_a_retryable_provider_error(prompt):
    server = MockServer([raise_timeout])
    with pytest.raises(ProviderError) as caught:
        provider_for(server).generate(prompt)
    assert (caught.value.code, caught.value.retryable) == ("timeout", True)


def test_the_client_is_built_with_the_configured_timeout_and_retries():
    with override_settings(ANTHROPIC_API_KEY="sk-ant-x", LLM_TIMEOUT_SECONDS=7.5, LLM_MAX_RETRIES=1):
        provider = get_provider("anthropic")
    client = sdk_client(provider.config)
    assert client.timeout == 7.5
    assert client.max_retries == 1


def test_a_retryable_error_is_retried_once_by_the_client(prompt):
    server = MockServer([anthropic_error(529, "overloaded_error", headers={"retry-after-ms": "1"}),
                         anthropic_message("Parking is free [1].")])
    result = hosted("anthropic", server, api_key="k", max_retries=1).generate(prompt)
    assert result.text == "Parking is free [1]." and len(server.requests) == 2


def test_a_stream_that_stalls_midway_is_a_timeout(prompt):
    first = sse(anthropic_events(["Free "], finish=False))
    server = MockServer([lambda request: stream_response(
        broken_stream(first, httpx2.ReadTimeout("stalled", request=request)))])
    received = []
    with pytest.raises(ProviderError) as caught:
        for item in provider_for(server).stream(prompt):
            received.append(item)
    assert [item.text for item in received] == ["Free "]
    assert (caught.value.code, caught.value.retryable) == ("timeout", True)


def test_a_stream_without_message_stop_is_malformed(prompt):
    server = MockServer([stream_response(sse(anthropic_events(["Free parking"], finish=False)))])
    with pytest.raises(ProviderError) as caught:
        list(provider_for(server).stream(prompt))
    assert caught.value.code == "malformed"


def test_a_stream_with_garbage_data_is_malformed(prompt):
    events = anthropic_events(["Free "], finish=False) + [("content_block_delta", "{not json")]
    server = MockServer([stream_response(sse(events))])
    with pytest.raises(ProviderError) as caught:
        list(provider_for(server).stream(prompt))
    assert caught.value.code == "malformed"


def test_an_error_event_inside_a_stream_is_a_provider_error(prompt):
    events = anthropic_events(["Free "], finish=False) + [
        ("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})]
    server = MockServer([stream_response(sse(events))])
    with pytest.raises(ProviderError) as caught:
        list(provider_for(server).stream(prompt))
    assert (caught.value.code, caught.value.retryable) == ("overloaded", True)


def test_an_empty_reply_is_malformed(prompt):
    server = MockServer([anthropic_message("")])
    with pytest.raises(ProviderError) as caught:
        provider_for(server).generate(prompt)
    assert caught.value.code == "malformed"


def test_without_a_key_the_provider_is_not_configured():
    with override_settings(ANTHROPIC_API_KEY=""), pytest.raises(ProviderNotConfigured) as caught:
        get_provider("anthropic")
    assert caught.value.retryable is False
