"""The one path to the LLM (`llm.complete` / `llm.stream`) through the real Anthropic and OpenAI clients on
mocked transports: one client per configuration, per-call timeouts, typed retryable/permanent errors, and
every reply priced into a meter (no meter, or a meter at its limit: no call at all)."""
from __future__ import annotations

from decimal import Decimal

import pytest

import llm
from llm import clients
from shaping_helpers import (MockServer, anthropic_error, anthropic_events, anthropic_message, openai_completion,
                             openai_error, raise_timeout, sse, stream_response)

REQUEST = llm.LlmRequest(system="You rewrite queries.", user="Je, kuna maegesho?", max_tokens=60, purpose="rewrite")
MODELS = {"anthropic": "claude-haiku-4-5", "openai": "gpt-4o-mini"}


def config(name: str, server: MockServer | None = None, **options) -> llm.LlmConfig:
    return llm.LlmConfig(provider=name, api_key=options.pop("api_key", "sk-test"), model=MODELS[name],
                         max_retries=options.pop("max_retries", 0),
                         http_client=server.client() if server is not None else None, **options)


def ok_reply(name: str, text: str = "car parking"):
    return (anthropic_message(text, input_tokens=40, output_tokens=4) if name == "anthropic"
            else openai_completion(text, prompt_tokens=40, completion_tokens=4))


@pytest.fixture
def transports(monkeypatch):
    """Configurations without an HTTP client of their own get `server`'s; records each client built."""
    built: list[llm.LlmConfig] = []
    server = MockServer([])

    def transport(cfg):
        built.append(cfg)
        return server.client()

    monkeypatch.setattr(clients, "default_http_client", transport)
    return server, built


# ----------------------------------------------------------------------------- one client per configuration


def test_one_client_is_built_per_configuration_and_reused(transports):
    server, built = transports
    server.replies = [ok_reply("anthropic"), ok_reply("anthropic"), ok_reply("anthropic")]
    first, same, other_key = config("anthropic"), config("anthropic"), config("anthropic", api_key="sk-other")
    for cfg in (first, same):
        llm.complete(REQUEST, config=cfg, meter=llm.Meter())
    assert len(built) == 1 and llm.sdk_client(first) is llm.sdk_client(same)
    llm.complete(REQUEST, config=other_key, meter=llm.Meter())
    assert len(built) == 2 and clients.clients_count() == 2
    assert [r.headers["authorization"] for r in server.requests] == ["Bearer sk-test"] * 2 + ["Bearer sk-other"]


def test_a_model_or_output_budget_change_reuses_the_client(transports):
    server, built = transports
    server.replies = [ok_reply("openai"), ok_reply("openai")]
    llm.complete(REQUEST, config=config("openai"), meter=llm.Meter())
    llm.complete(REQUEST, config=llm.LlmConfig(provider="openai", api_key="sk-test", model="gpt-4.1-mini",
                                               max_retries=0, max_tokens=20), meter=llm.Meter())
    assert len(built) == 1
    assert [server.body(i)["model"] for i in (0, 1)] == ["gpt-4o-mini", "gpt-4.1-mini"]


def test_a_per_call_timeout_applies_to_that_call_only(transports):
    server, built = transports
    server.replies = [ok_reply("anthropic"), ok_reply("anthropic")]
    cfg = config("anthropic", timeout=20.0)
    llm.complete(REQUEST, config=cfg, meter=llm.Meter())
    llm.complete(llm.LlmRequest(system="s", user="u", max_tokens=5, timeout=4.0), config=cfg, meter=llm.Meter())
    assert [r.extensions["timeout"]["read"] for r in server.requests] == [20.0, 4.0]
    assert len(built) == 1


# ----------------------------------------------------------------------------- typed errors


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_a_timeout_is_a_retryable_error(name):
    server = MockServer([raise_timeout])
    with pytest.raises(llm.LlmError) as caught:
        llm.complete(REQUEST, config=config(name, server), meter=llm.Meter())
    assert (caught.value.code, caught.value.retryable, caught.value.provider) == ("timeout", True, name)


@pytest.mark.parametrize("name", ["anthropic", "openai"])
@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_a_4xx_is_a_permanent_error(name, status):
    reply = (anthropic_error(status, "invalid_request_error") if name == "anthropic"
             else openai_error(status, code="invalid_request_error"))
    server = MockServer([reply])
    meter = llm.Meter()
    with pytest.raises(llm.LlmError) as caught:
        llm.complete(REQUEST, config=config(name, server), meter=meter)
    assert (caught.value.code, caught.value.retryable, caught.value.status_code) == ("rejected", False, status)
    assert meter.calls == []  # a rejected request is not billed


@pytest.mark.parametrize("name, reply", [
    ("anthropic", anthropic_error(429, "rate_limit_error")), ("anthropic", anthropic_error(500, "api_error")),
    ("anthropic", anthropic_error(529, "overloaded_error")), ("openai", openai_error(429)),
    ("openai", openai_error(503)),
])
def test_429_and_5xx_are_retryable_errors(name, reply):
    with pytest.raises(llm.LlmError) as caught:
        llm.complete(REQUEST, config=config(name, MockServer([reply])), meter=llm.Meter())
    assert caught.value.retryable is True and caught.value.code in {"rate_limited", "server_error", "overloaded"}


def test_without_a_key_the_configuration_is_not_built(settings):
    settings.OPENAI_API_KEY = ""
    with pytest.raises(llm.LlmNotConfigured) as caught:
        llm.config_from_settings("openai")
    assert (caught.value.code, caught.value.retryable) == ("not_configured", False)


# ----------------------------------------------------------------------------- pricing and the meter


def test_each_reply_is_priced_into_the_meter_with_its_purpose():
    server = MockServer([anthropic_message('{"intent": "other"}', input_tokens=300, output_tokens=6),
                         anthropic_message("car parking", input_tokens=40, output_tokens=4)])
    meter = llm.Meter()
    cfg = config("anthropic", server)
    llm.complete(llm.LlmRequest(system="s", user="u", max_tokens=20, purpose="intent"), config=cfg, meter=meter)
    llm.complete(REQUEST, config=cfg, meter=meter)
    # claude-haiku-4-5: $1/M input, $5/M output.
    assert [(c.purpose, c.completion.cost_usd) for c in meter.calls] == [
        ("intent", round((300 + 6 * 5) / 1e6, 8)), ("rewrite", round((40 + 4 * 5) / 1e6, 8))]
    assert meter.spent_usd == Decimal("0.00039")


def test_without_a_meter_no_call_is_made():
    server = MockServer([ok_reply("openai")])
    with pytest.raises(llm.LlmCallRefused) as caught:
        llm.complete(REQUEST, config=config("openai", server))
    assert (caught.value.code, caught.value.retryable) == ("unmetered", False)
    assert server.requests == []


def test_the_current_meter_prices_a_call_made_without_one():
    server = MockServer([ok_reply("openai")])
    meter = llm.Meter()
    with llm.metering(meter):
        llm.complete(REQUEST, config=config("openai", server))
    assert [c.purpose for c in meter.calls] == ["rewrite"] and llm.current_meter() is None


def test_a_meter_at_its_limit_refuses_every_call():
    server = MockServer([ok_reply("anthropic")])
    meter = llm.Meter(limit_usd=Decimal("0.0001"))
    llm.complete(REQUEST, config=config("anthropic", server), meter=meter)  # 0.00006: under the limit
    assert meter.allows_call()
    meter.record("answer", llm.Completion(text="x", provider="anthropic", model="m", cost_usd=0.00005))
    for call in (lambda: llm.complete(REQUEST, config=config("anthropic", server), meter=meter),
                 lambda: list(llm.stream(REQUEST, config=config("anthropic", server), meter=meter))):
        with pytest.raises(llm.LlmCallRefused) as caught:
            call()
        assert caught.value.code == "cost_ceiling"
    assert len(server.requests) == 1


def test_a_stream_read_to_the_end_is_priced_from_its_usage():
    server = MockServer([stream_response(sse(anthropic_events(["car ", "parking"], input_tokens=40,
                                                              output_tokens=4)))])
    meter = llm.Meter()
    items = list(llm.stream(REQUEST, config=config("anthropic", server), meter=meter))
    assert [i.text for i in items[:-1]] == ["car ", "parking"] and items[-1].cost_usd == round(60 / 1e6, 8)
    assert [(c.completion.cost_usd, c.estimated) for c in meter.calls] == [(items[-1].cost_usd, False)]


def test_a_stream_abandoned_midway_is_charged_an_estimate():
    pieces = ["Free parking ", "is in the basement ", "for guests."]
    server = MockServer([stream_response(sse(anthropic_events(pieces, input_tokens=40)))])
    meter = llm.Meter()
    stream = llm.stream(llm.LlmRequest(system="s", user="u", max_tokens=60, input_estimate=400),
                        config=config("anthropic", server), meter=meter)
    assert next(stream).text == "Free parking "
    stream.close()
    [call] = meter.calls
    assert call.estimated and (call.completion.input_tokens, call.completion.output_tokens) == (400, 4)
    assert call.completion.cost_usd == round((400 + 4 * 5) / 1e6, 8)
