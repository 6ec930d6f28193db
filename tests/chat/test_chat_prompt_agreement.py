"""The prompt assembly API decides as a chat turn does: same intent, same refusal, and byte for byte the prompt the
turn hands its answer shaper (retrieval, structured facts and what an LLM reads come from one function)."""
from __future__ import annotations

import json

import pytest

from conversations import shaping

QUESTIONS = [
    "Is there parking?",  # knowledge
    "How much is the hot stone massage?",  # the services table alone answers a price
    "How long is a spa pedicure and do I need to arrive early?",  # facts beside knowledge
    "Are you open on Christmas Eve?",  # hours, a special day
    "What time do you open on Sunday?",
    "Mnafungua saa ngapi Jumapili?",  # Swahili: the rules classify without an embedding
    "Do you sell helicopters?",  # nothing relevant: refused
    "Can I pay with M-Pesa?",
]


@pytest.fixture
def turn_prompts(monkeypatch):
    """Every prompt the chat turn's answer shaper assembles."""
    sent = []
    original = shaping.prepare_prompt

    def spy(**kwargs):
        sent.append(original(**kwargs))
        return sent[-1]

    monkeypatch.setattr(shaping, "prepare_prompt", spy)
    return sent


@pytest.mark.parametrize("message", QUESTIONS)
def test_the_prompt_api_assembles_what_the_chat_turn_sends(chat, api_client, turn_prompts, message):
    client, headers = api_client
    turn = chat(message=message, channel="whatsapp").json()
    sent = list(turn_prompts)  # the turn's only: the prompt API may be imported after the spy went in
    assembled = client.post("/api/v1/prompts/assemble/", data=json.dumps({"channel": "whatsapp", "message": message}),
                            content_type="application/json", **headers).json()
    assert (assembled["intent"], assembled["refusal_reason"]) == (turn["intent"], turn["refusal_reason"])
    if turn["refusal_reason"] is None:
        assert len(sent) == 1
        assert assembled["prompt"] == sent[0].to_dict()
    else:
        assert (sent, assembled["retrieved_sections"]) == ([], [])


def test_the_questions_cover_answers_from_knowledge_from_facts_alone_and_refusals(chat, turn_prompts):
    """Guards the list above: the agreement is checked on each kind of decision."""
    kinds = set()
    for message in QUESTIONS:
        before = len(turn_prompts)
        turn = chat(message=message, channel="whatsapp").json()
        if turn["refusal_reason"]:
            kinds.add("refused")
            continue
        data = turn_prompts[before].to_dict()["messages"][0]["content"]
        kinds.add("knowledge" if turn_prompts[before].knowledge_sources else "facts alone")
        assert data
    assert kinds == {"knowledge", "facts alone", "refused"}
