"""Honest contracts: every refusal type a turn can carry is emitted for real, each text says what actually happens
(nothing is "passed to the team" when no hand-off exists), and every turn names the prompt version in force."""
from __future__ import annotations

import json
from decimal import Decimal

import pytest

from conversations import i18n
from conversations.models import Session, Turn
from conversations.prompting import load_prompt_template
from telemetry.models import Event, RetrievalLog


def _final(response) -> dict:
    body = b"".join(response.streaming_content).decode()
    return json.loads(body.split("event: final\ndata: ")[1].split("\n")[0])


@pytest.mark.parametrize("message", ["Is there parking at the spa?", "Hello", "Do you sell helicopters?"])
def test_every_turn_names_the_prompt_version_in_the_response_the_turn_and_the_log(chat, message):
    version = load_prompt_template().version
    body = chat(message=message).json()
    assert body["meta"]["prompt_version"] == version
    assert Turn.objects.get(public_id=body["turn_id"]).meta["prompt_version"] == version
    assert RetrievalLog.objects.get(turn_id=body["turn_id"]).prompt_version == version


def test_the_streamed_final_event_names_the_prompt_version(chat):
    final = _final(chat(path="/api/v1/chat/turns/stream/", message="Is there parking at the spa?"))
    assert final["meta"]["prompt_version"] == load_prompt_template().version


@pytest.mark.parametrize("message", ["???", "…", "🙏🙏", "?!"])
def test_a_message_without_words_is_an_empty_message_refusal_and_no_gap(chat, message, llm):
    server = llm("anthropic")
    body = chat(message=message).json()
    assert body["refusal_reason"] == "empty_message"
    assert body["answer"] == "Could you tell me a little more about what you'd like to know?"
    assert (body["meta"]["provider"], body["citations"], server.requests) == ("none", [], [])
    assert Event.objects.get(name="refusal").payload["reason"] == "empty_message"
    assert not Event.objects.filter(name="knowledge_gap_candidate").exists()


def test_a_blank_message_is_still_a_400(chat):
    response = chat(message="   ")
    assert response.status_code == 400 and not Turn.objects.exists()


def test_a_refusal_promises_no_hand_off_in_either_language(chat):
    from conversations.models import HandoffRequest

    english = chat(message="Do you sell helicopters?").json()
    swahili = chat(message="Do you sell helicopters?", language="sw").json()
    assert english["refusal_reason"] == swahili["refusal_reason"] == "no_relevant_context"
    # "us", not "reception": a car wash or a plumber has no reception desk
    assert english["answer"] == ("I'm sorry, I don't have an answer to that yet. Please call or message us and the "
                                 "team will help you.")
    assert swahili["answer"] == ("Samahani, sina jibu la swali hilo kwa sasa. Tafadhali tupigie simu au tutumie "
                                 "ujumbe na timu yetu itakusaidia.")
    assert not HandoffRequest.objects.exists()


def test_no_customer_text_claims_a_hand_off_or_a_call_back():
    texts = [text for table in (i18n._DEFLECTIONS, i18n._PHRASES) for language in table.values()
             for text in language.values()]
    for claim in ("passed your question", "get back to you", "check with the team", "Nimewapa wenzangu swali",
                  "nitakujibu"):
        assert not [text for text in texts if claim.lower() in text.lower()], claim


def test_each_refusal_reason_emitted_has_its_own_text_and_no_other_is_documented():
    assert i18n.REFUSAL_REASONS == ("no_relevant_context", "empty_message", "cost_ceiling")
    for language in ("en", "sw"):
        table = i18n._DEFLECTIONS[language]
        assert set(table) == {*i18n.REFUSAL_REASONS, "default"}
        assert len({table[reason] for reason in i18n.REFUSAL_REASONS}) == 3


def test_synthetic_telemetry_uses_only_refusal_reasons_the_product_emits(tenant):
    from telemetry.synthetic import REFUSALS, synthetic_telemetry_write

    assert {reason for reason, _weight in REFUSALS} <= set(i18n.REFUSAL_REASONS)
    synthetic_telemetry_write(turns=400, days=3, seed=3)
    written = set(RetrievalLog.objects.exclude(refusal_reason="").values_list("refusal_reason", flat=True))
    assert written and written <= set(i18n.REFUSAL_REASONS)


@pytest.fixture
def nothing_to_quote(monkeypatch):
    """The free extractive provider finds no sentence to quote (relevant snippets, but none it can use)."""
    from conversations.providers.extractive import ExtractiveProvider

    monkeypatch.setattr(ExtractiveProvider, "select", lambda self, prompt: [])


def _past_the_ceiling(chat) -> str:
    session_id = chat(message="Hi").json()["session_id"]
    Session.objects.filter(public_id=session_id).update(cost_usd=Decimal("0.25"))
    return session_id


def test_past_the_ceiling_with_nothing_to_quote_the_turn_is_a_cost_ceiling_refusal(chat, llm, nothing_to_quote):
    server = llm("anthropic")
    session_id = _past_the_ceiling(chat)
    body = chat(message="Is there parking at the spa?", session_id=session_id).json()
    assert server.requests == []
    assert body["refusal_reason"] == "cost_ceiling"
    assert body["answer"] == i18n.deflection("cost_ceiling", language="en")
    assert (body["meta"]["refused_by"], body["meta"]["fallback_reason"], body["citations"]) == (
        "cost_ceiling", "cost_ceiling", [])
    assert Turn.objects.get(public_id=body["turn_id"]).refusal_reason == "cost_ceiling"
    assert Event.objects.get(name="refusal").payload["reason"] == "cost_ceiling"
    assert not Event.objects.filter(name="knowledge_gap_candidate").exists()  # the knowledge is not the gap


def test_past_the_ceiling_a_streamed_turn_replaces_what_it_streamed(chat, llm, nothing_to_quote):
    llm("anthropic")
    session_id = _past_the_ceiling(chat)
    final = _final(chat(path="/api/v1/chat/turns/stream/", message="Is there parking at the spa?",
                        session_id=session_id))
    assert final["refusal_reason"] == "cost_ceiling" and final["replaces_streamed_text"] is True
    assert final["answer"] == i18n.deflection("cost_ceiling", language="en")


def test_without_an_llm_nothing_to_quote_is_no_cost_ceiling_refusal(chat, nothing_to_quote):
    body = chat(message="Is there parking at the spa?").json()
    assert body["refusal_reason"] is None and "fallback_reason" not in body["meta"]
