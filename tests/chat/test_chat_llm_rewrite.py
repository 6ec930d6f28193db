"""The Swahili query rewrite goes down the one LLM path: priced into the turn and the session, never made past
the hard ceiling, never made by a run no customer started (smoke tests, re-answering, the retrieve API), and
sharing one client with the turn's other calls. Real Anthropic/OpenAI clients on mocked transports."""
from __future__ import annotations

from decimal import Decimal

import pytest

from chat_llm import anthropic_message, openai_completion
from conversations.models import Session, Turn
from knowledge.retrieval.rewrite import INSTRUCTION, REWRITE_TIMEOUT_SECONDS
from llm import clients

SWAHILI = "Je, kuna maegesho ya magari?"
ANSWER = "Free parking for guests is available in the basement of Mirage Tower [1]."


def _replies(provider: str) -> list:
    if provider == "anthropic":
        return [anthropic_message('{"intent": "other"}', input_tokens=300, output_tokens=6),
                anthropic_message("car parking", input_tokens=50, output_tokens=3),
                anthropic_message(ANSWER, input_tokens=1200, output_tokens=60)]
    return [openai_completion('{"intent":"other"}', prompt_tokens=250, completion_tokens=5),
            openai_completion("car parking", prompt_tokens=45, completion_tokens=3),
            openai_completion(ANSWER, prompt_tokens=1100, completion_tokens=50)]


# claude-haiku-4-5: $1/M input, $5/M output; gpt-4o-mini: $0.15/M input, $0.60/M output.
EXPECTED = {
    "anthropic": [("intent", (300 + 6 * 5) / 1e6), ("rewrite", (50 + 3 * 5) / 1e6), ("answer", (1200 + 60 * 5) / 1e6)],
    "openai": [("intent", (250 * 0.15 + 5 * 0.6) / 1e6), ("rewrite", (45 * 0.15 + 3 * 0.6) / 1e6),
               ("answer", (1100 * 0.15 + 50 * 0.6) / 1e6)],
}


@pytest.fixture
def network(monkeypatch):
    """Requests that left through a real HTTP transport (an SDK client built outside the LLM path): refused."""
    import httpx2

    escaped: list[str] = []

    def refuse(self, request):
        escaped.append(str(request.url))
        raise httpx2.ConnectError("no network in tests", request=request)

    monkeypatch.setattr(httpx2.HTTPTransport, "handle_request", refuse)
    return escaped


def _rewrite_request(server, index: int = 1) -> dict:
    body = server.body(index)
    system = body["system"][0]["text"] if "system" in body else body["messages"][0]["content"]
    assert system == INSTRUCTION
    return body


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_swahili_turn_prices_the_rewrite_into_the_turn_and_the_session(chat, llm, provider):
    server = llm(provider)
    server.replies = _replies(provider)
    body = chat(message=SWAHILI, language="sw").json()

    rewrite = _rewrite_request(server)
    assert SWAHILI in str(rewrite["messages"]) and len(server.requests) == 3
    calls = [(call["purpose"], call["cost_usd"]) for call in body["meta"]["llm_calls"]]
    assert calls == [(purpose, round(cost, 8)) for purpose, cost in EXPECTED[provider]]
    total = Decimal(str(sum(cost for _, cost in EXPECTED[provider]))).quantize(Decimal("0.000001"))
    turn = Turn.objects.get(public_id=body["turn_id"])
    assert (turn.cost_usd, body["meta"]["cost_usd"]) == (total, float(total))
    assert Session.objects.get(public_id=body["session_id"]).cost_usd == total
    assert turn.meta["llm_calls"] == body["meta"]["llm_calls"]


def test_a_misspelt_word_in_a_swahili_question_is_read_without_a_second_rewrite(chat, llm):
    import llm as llm_layer
    from knowledge.retrieval.pipeline import prepare_query, with_spelling

    server = llm("anthropic")
    server.replies = _replies("anthropic")
    body = chat(message="Je, kuna parkin ya magari?", language="sw").json()
    assert len(server.requests) == 3  # intent, one rewrite, answer
    assert [call["purpose"] for call in body["meta"]["llm_calls"]] == ["intent", "rewrite", "answer"]
    server.replies = [anthropic_message("car parking", input_tokens=50, output_tokens=3)]
    with llm_layer.metering(llm_layer.Meter()) as meter:
        prepared = with_spelling(prepare_query("Je, kuna parkin ya magari?"))
    assert prepared.spelling == ("parking",) and "parking" in prepared.embedding_text.split()
    assert [call.purpose for call in meter.calls] == ["rewrite"]


def test_the_rewrite_has_its_own_short_timeout_and_no_retry(chat, llm):
    server = llm("anthropic")
    server.replies = _replies("anthropic")
    chat(message=SWAHILI, language="sw")
    timeouts = [request.extensions["timeout"]["read"] for request in server.requests]
    assert timeouts == [20.0, REWRITE_TIMEOUT_SECONDS, 20.0]
    assert _rewrite_request(server)["max_tokens"] == 60


def test_a_turn_s_calls_share_one_client_and_the_next_turn_reuses_it(chat, llm, monkeypatch):
    server = llm("anthropic")
    built = []
    transport = clients.default_http_client
    monkeypatch.setattr(clients, "default_http_client", lambda config: built.append(config) or transport(config))
    server.replies = _replies("anthropic") + _replies("anthropic")
    first = chat(message=SWAHILI, language="sw").json()
    chat(message=SWAHILI, language="sw", session_id=first["session_id"])
    assert len(server.requests) == 6 and len(built) == 1 and clients.clients_count() == 1


def test_a_failing_rewrite_is_skipped_and_the_turn_still_answers(chat, llm):
    from chat_llm import anthropic_error

    server = llm("anthropic")
    intent, _, answer = _replies("anthropic")
    server.replies = [intent, anthropic_error(500, "api_error"), answer]
    body = chat(message=SWAHILI, language="sw").json()
    assert body["meta"]["provider"] == "anthropic" and body["answer"] == ANSWER
    assert [call["purpose"] for call in body["meta"]["llm_calls"]] == ["intent", "answer"]


def test_past_the_hard_ceiling_a_swahili_turn_makes_no_call_at_all(chat, llm, network):
    server = llm("anthropic")
    session_id = chat(message="Hi").json()["session_id"]  # a greeting: rules only, no LLM call
    Session.objects.filter(public_id=session_id).update(cost_usd=Decimal("0.50"))
    body = chat(message=SWAHILI, language="sw", session_id=session_id).json()
    assert server.requests == [] and network == []
    assert (body["meta"]["provider"], body["meta"]["fallback_reason"], body["meta"]["cost_usd"]) == (
        "extractive", "cost_ceiling", 0.0)
    assert "llm_calls" not in body["meta"]
    assert Session.objects.get(public_id=session_id).cost_usd == Decimal("0.50")


def test_a_turn_whose_intent_call_reaches_the_ceiling_makes_no_rewrite_or_answer_call(chat, llm, settings,
                                                                                     network):
    settings.COST_HARD_CEILING_USD = 0.0003  # the intent call alone costs $0.00033
    server = llm("anthropic")
    server.replies = _replies("anthropic")
    body = chat(message=SWAHILI, language="sw").json()
    assert len(server.requests) == 1 and server.body(0)["max_tokens"] == 20 and network == []
    assert (body["meta"]["provider"], body["meta"]["fallback_reason"]) == ("extractive", "cost_ceiling")
    assert body["meta"]["cost_usd"] == 0.00033
    assert Session.objects.get(public_id=body["session_id"]).cost_usd == Decimal("0.000330")


def test_runs_no_customer_started_make_no_llm_call(chat, llm, api_client, network):
    from knowledge.models import SmokeTest
    from knowledge.retrieval import fetch_snippets
    from knowledge.selectors import smoke_tests_run
    from telemetry.knowledge_reads import reanswer

    server = llm("anthropic")  # no replies queued: any request would be recorded and fail
    SmokeTest.objects.create(query=SWAHILI, expected_keys=["parking"])
    [result] = smoke_tests_run()
    assert result.top_keys[0] == "parking"
    assert reanswer(question=SWAHILI).answered
    assert fetch_snippets("other", query=SWAHILI, channel="chat").snippets
    client, headers = api_client
    response = client.post("/api/v1/retrieve/", data={"query": SWAHILI}, content_type="application/json",
                           **headers)
    assert response.status_code == 200 and response.json()["results"][0]["key"] == "parking"
    assert server.requests == [] and network == []


def test_the_rewrite_joins_the_search_text_of_a_turn(tenant, llm):
    import llm as llm_layer
    from knowledge.retrieval import prepare_query

    server = llm("openai")
    server.replies = [openai_completion("where can I park my car", prompt_tokens=45, completion_tokens=6)]
    with llm_layer.metering(llm_layer.Meter()) as meter:
        prepared = prepare_query(SWAHILI)
    assert prepared.rewrite == "where can I park my car"
    assert "park" in prepared.embedding_text.split() and [c.purpose for c in meter.calls] == ["rewrite"]
    assert prepare_query(SWAHILI).rewrite is None  # outside a turn: no meter, no call
    assert len(server.requests) == 1


def test_a_streamed_answer_the_client_abandons_is_still_priced_into_the_turn(spa, llm):
    from chat_llm import anthropic_stream
    from conversations import services

    server = llm("anthropic")
    words = [f"word{index} " for index in range(40)]
    server.replies = [anthropic_message('{"intent": "other"}', input_tokens=300, output_tokens=6),
                      anthropic_stream(words, input_tokens=1200, output_tokens=40)]
    stream = services.turn_stream(services.TurnInput(message="Is there parking at the spa?"))
    first = next(stream)
    assert first.text.startswith("word0 ")
    stream.close()  # the client went away after the first delta

    turn = Turn.objects.get(message="Is there parking at the spa?")
    calls = [(call["purpose"], call["estimated"]) for call in turn.meta["llm_calls"]]
    assert turn.meta["stream_aborted"] is True and calls == [("intent", False), ("answer", True)]
    answer_cost = turn.meta["llm_calls"][1]["cost_usd"]
    assert answer_cost > 0
    assert turn.cost_usd == Decimal(str((300 + 6 * 5) / 1e6 + answer_cost)).quantize(Decimal("0.000001"))
    assert Session.objects.get(pk=turn.session_id).cost_usd == turn.cost_usd
