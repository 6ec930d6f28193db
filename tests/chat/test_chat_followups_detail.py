"""A short follow-up asking about a detail of what the last answer quoted ("what deposit do I leave?" after a
hire question) is read with that topic, not alone."""
from __future__ import annotations

import pytest

from conversations import followups
from conversations.models import Turn
from tests.retrieval.retrieval_kb import kb, mode  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db

HIRE = [
    dict(key="tool_hire", title="Tool hire",
         body="We hire out concrete mixers for KES 3,500 per day and ladders for KES 600 per day. You leave your ID "
              "and a refundable deposit of KES 10,000 for a mixer, paid back when it comes back clean."),
    dict(key="special_orders", title="Special orders and deposits",
         body="Special orders need a 50% deposit and most arrive within 3 to 10 working days."),
    dict(key="delivery", title="Delivery",
         body="We deliver cement, sand and steel within 10 km of the shop the same day."),
]


def _session(*messages: str):
    from conversations import services

    results, session_id = [], None
    for message in messages:
        result = services.turn_run(services.TurnInput(message=message, channel="chat", session_id=session_id))
        results.append(result)
        session_id = result.session_id
    return results


@pytest.fixture
def hardware(kb, mode):
    mode("hybrid")
    return [kb(**item) for item in HIRE]


def test_a_detail_of_the_last_answer_is_read_with_its_topic(hardware):
    first, second = _session("Do you hire out concrete mixers?", "what deposit do I leave?")
    assert [c["key"] for c in first.citations] == ["tool_hire"]
    assert second.refusal_reason is None and second.citations[0]["key"] == "tool_hire"
    assert "10,000" in second.answer
    meta = Turn.objects.get(public_id=second.turn_id).meta
    assert meta["followup"]["reasons"] == ["detail_of_topic"]


def test_the_same_words_asked_first_are_read_alone(hardware):
    (result,) = _session("what deposit do I leave?")
    assert result.citations[0]["key"] == "special_orders"


def test_a_question_naming_what_the_last_answer_did_not_say_is_read_alone(hardware):
    _, second = _session("Do you hire out concrete mixers?", "Do you deliver sand?")
    assert second.citations[0]["key"] == "delivery"
    assert "followup" not in Turn.objects.get(public_id=second.turn_id).meta


def _topic(cited=(("tool_hire", 1),), refused=False):
    return followups.PriorTurn(message="Do you hire out concrete mixers?", answer="We hire out concrete mixers.",
                               intent="services", read_as="Do you hire out concrete mixers?", refused=refused,
                               handoff_id=None, cited=cited)


@pytest.mark.parametrize("message, detail", [
    ("what deposit do I leave?", True),
    ("do I need to leave my ID?", True),  # asking verbs name no topic
    ("Deposits?", True),  # a plural is its singular
    ("what deposit do I leave for the ladder per day?", False),  # more than a few words of its own
    ("Do you deliver sand?", False),  # a word the sources do not hold
    ("Who owns the shop?", False),  # about the business, whatever came before
    ("Nilipe amana ngapi?", False),  # Swahili words are not the English sources' words
])
def test_which_messages_ask_a_detail_of_the_topic(hardware, message, detail):
    assert followups.asks_a_detail(message, _topic()) is detail


def test_a_refused_or_uncited_topic_has_no_details(hardware):
    assert not followups.asks_a_detail("what deposit do I leave?", _topic(refused=True))
    assert not followups.asks_a_detail("what deposit do I leave?", _topic(cited=()))
