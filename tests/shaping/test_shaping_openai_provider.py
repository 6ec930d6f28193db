"""The OpenAI provider driven through the real `openai` client against a mocked Chat Completions API."""
from __future__ import annotations

import httpx2
import pytest
from django.test import override_settings

from conversations.prompting import assemble_prompt
from conversations.providers import (HostedProvider, ProviderError, ProviderNotConfigured, ProviderResult, TextDelta,
                                     get_provider)
from shaping_helpers import (CORE, OPENAI_MODEL, PARKING, MockServer, broken_stream, hosted, openai_chunks,
                             openai_completion, openai_error, raise_timeout, sse, stream_response)


@pytest.fixture
def prompt():
    return assemble_prompt(question="Is there parking?", language="en", channel="chat", snippets=[PARKING],
                           core_sections=list(CORE))


def provider_for(server: MockServer) -> HostedProvider:
    return hosted("openai", server, model="gpt-4o-mini")


def test_it_sends_system_then_user_and_returns_text_tokens_and_cost(prompt):
    server = MockServer([openai_completion("Parking is free [1].", prompt_tokens=1100, completion_tokens=40,
                                           cached=1024)])
    result = provider_for(server).generate(prompt)

    request = server.requests[0]
    assert request.url.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert server.body() == {"model": "gpt-4o-mini", "max_completion_tokens": 500,
                             "messages": [{"role": "system", "content": prompt.system},
                                          {"role": "user", "content": prompt.user}]}
    # gpt-4o-mini: $0.15/M input, $0.075/M cached input, $0.60/M output.
    assert result == ProviderResult(text="Parking is free [1].", provider="openai", model=OPENAI_MODEL,
                                    input_tokens=1100, output_tokens=40,
                                    cost_usd=round((76 * 0.15 + 1024 * 0.075 + 40 * 0.60) / 1e6, 8),
                                    cache_read_tokens=1024, stop_reason="stop")


def test_it_streams_chunks_until_done_with_usage(prompt):
    server = MockServer([stream_response(sse(openai_chunks(["Parking ", "is free ", "[1]."], prompt_tokens=900,
                                                           completion_tokens=7)))])
    items = list(provider_for(server).stream(prompt))

    body = server.body()
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert [item.text for item in items if isinstance(item, TextDelta)] == ["Parking ", "is free ", "[1]."]
    assert items[-1] == ProviderResult(text="Parking is free [1].", provider="openai", model=OPENAI_MODEL,
                                       input_tokens=900, output_tokens=7,
                                       cost_usd=round((900 * 0.15 + 7 * 0.60) / 1e6, 8), stop_reason="stop")


@pytest.mark.parametrize("status, code, retryable", [
    (500, "server_error", True), (503, "server_error", True), (429, "rate_limited", True), (529, "server_error", True),
    (400, "rejected", False), (401, "rejected", False),
])
def test_http_errors_become_provider_errors_that_say_whether_to_retry(prompt, status, code, retryable):
    server = MockServer([openai_error(status)])
    with pytest.raises(ProviderError) as caught:
        provider_for(server).generate(prompt)
    assert (caught.value.code, caught.value.retryable, caught.value.status_code) == (code, retryable, status)


def test_a_timeout_is_a_retryable_provider_error(prompt):
    server = MockServer([raise_timeout])
    with pytest.raises(ProviderError) as caught:
        provider_for(server).generate(prompt)
    assert (caught.value.code, caught.value.retryable) == ("timeout", True)


def test_a_stream_that_stalls_midway_is_a_timeout(prompt):
    first = sse(openai_chunks(["Parking "], finish=False, done=False))
    server = MockServer([lambda request: stream_response(
        broken_stream(first, httpx2.ReadTimeout("stalled", request=request)))])
    received = []
    with pytest.raises(ProviderError) as caught:
        for item in provider_for(server).stream(prompt):
            received.append(item)
    assert [item.text for item in received] == ["Parking "]
    assert caught.value.code == "timeout"


def test_a_stream_cut_before_a_finish_reason_is_malformed(prompt):
    server = MockServer([stream_response(sse(openai_chunks(["Parking is"], finish=False, done=False)))])
    with pytest.raises(ProviderError) as caught:
        list(provider_for(server).stream(prompt))
    assert caught.value.code == "malformed"


def test_a_stream_with_garbage_data_is_malformed(prompt):
    events = openai_chunks(["Parking "], finish=False, done=False) + [(None, "{not json at all")]
    server = MockServer([stream_response(sse(events))])
    with pytest.raises(ProviderError) as caught:
        list(provider_for(server).stream(prompt))
    assert caught.value.code == "malformed"


def test_an_error_object_inside_a_stream_is_a_provider_error(prompt):
    events = openai_chunks(["Parking "], finish=False, done=False) + [
        (None, {"error": {"message": "The server had an error", "type": "server_error"}})]
    server = MockServer([stream_response(sse(events))])
    with pytest.raises(ProviderError) as caught:
        list(provider_for(server).stream(prompt))
    assert caught.value.retryable is True


def test_a_stream_without_usage_is_charged_an_estimate(prompt):
    server = MockServer([stream_response(sse(openai_chunks(["Parking is free [1]."], with_usage=False)))])
    result = list(provider_for(server).stream(prompt))[-1]
    assert result.input_tokens == prompt.token_estimate and result.output_tokens > 0 and result.cost_usd > 0


def test_an_empty_reply_is_malformed(prompt):
    server = MockServer([openai_completion("")])
    with pytest.raises(ProviderError) as caught:
        provider_for(server).generate(prompt)
    assert caught.value.code == "malformed"


def test_without_a_key_the_provider_is_not_configured():
    with override_settings(OPENAI_API_KEY=""), pytest.raises(ProviderNotConfigured):
        get_provider("openai")


def test_an_unknown_provider_name_is_not_configured():
    with pytest.raises(ProviderNotConfigured, match="Unknown LLM_PROVIDER 'gemini'"):
        get_provider("gemini")
