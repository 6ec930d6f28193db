"""What the intent means and what it may cost: services questions put to the business, orders and enrolments
read as bookings, a named service row, and retrieval that never narrows by intent (inline or hybrid)."""
from __future__ import annotations

import pytest

from chat_http import ask
from conversations import intents
from conversations.models import HandoffRequest
from knowledge.models import RetrievalSettings
from telemetry.models import Event


def pin_mode(value: str) -> None:
    row = RetrievalSettings.objects.order_by("pk").first() or RetrievalSettings()
    row.mode = value
    row.save()


# ----------------------------------------------------------------------------- what each intent means


@pytest.mark.parametrize("message", [
    "Do you fix cracked tablet screens?",
    "can u alter a wedding dress",
    "Could your technician look at a noisy fridge?",
    "Mnashona nguo za harusi?",
    "Which facial is best for oily skin?",
    "The kitchen tap won't stop leaking water.",
])
def test_a_question_about_what_the_business_does_is_services(message):
    assert intents.rule_scores(message).get("services") == intents.ASKS_THE_BUSINESS_WEIGHT
    assert intents.classify(message, embed=False).intent == "services"


@pytest.mark.parametrize("message", [
    "Do you accept M-Pesa?",
    "Do you have Wi-Fi?",
    "Can you send the receipt to my e-mail?",
    "Do you accept walk-ins?",
    "My tap is leaking, what should I check first?",
])
def test_payment_place_policy_and_self_help_stay_other(message):
    assert "services" not in intents.rule_scores(message)
    assert intents.classify(message, embed=False).intent == "other"


@pytest.mark.parametrize("message", [
    "I'd like to order a chocolate cake for Friday",
    "We want to enrol for the evening class",
    "Can I pre-order two loaves for tomorrow?",
    "Please sign me up for the weekend course",
    "Can someone come tonight to look at it?",
    "Nataka kuagiza keki ya kilo mbili",
    "Ningependa kujiandikisha kwa kozi ya jioni",
    "I'd like 60 bags of cement delivered to Langas tomorrow morning",  # an order by what it asks for
    "We need 20 chairs sent to the venue by Friday.",
    "I need a 10,000 litre water bowser on Saturday.",  # a want with its day, told rather than asked
    "We want food for 200 guests in December",
    "Nahitaji fundi kesho asubuhi",
])
def test_ordering_enrolling_and_asking_for_a_visit_are_bookings(message):
    assert intents.classify(message, embed=False).intent == "booking"


@pytest.mark.parametrize("message", [
    "Will I get an SMS when my order is ready?",
    "Is there a minimum weight per order?",
    "I'd like to know if you can have it delivered to Karen?",
    "I need my order delivered today, is that possible?",
    "I need a water bowser on Saturday, do you deliver to Lanet?",
    "I would like to know if you are open on Saturday",
    "Nahitaji fundi kesho, mnapatikana?",
    "I want my money back. The plumber never came on Monday.",  # the day is in another sentence
    "I like the braids I got on Saturday", "I'd like to enquire about Saturday",
    "I need to speak to the manager today", "Ningependa kuuliza kuhusu jumamosi",
])
def test_an_order_mentioned_in_passing_is_no_booking(message):
    assert intents.classify(message, embed=False).intent != "booking"


@pytest.mark.parametrize("message", ["can we push it to January instead?", "Please move my fitting to Friday",
                                     "Tunaomba kuhamisha miadi yetu hadi wiki ijayo"])
def test_moving_a_booking_to_a_day_or_a_month_is_a_reschedule(message):
    assert intents.classify(message, embed=False).intent == "reschedule"


def test_naming_a_service_row_makes_a_question_about_it_services_unless_it_is_about_paying():
    assert intents.classify("Tell me about the bridal glow package", embed=False).intent == "services"
    named = intents.classify("Tell me more about the Aura thing", embed=False, names_service=True)
    assert (named.intent, named.source) == ("services", "service_named")
    assert intents.classify("Tell me more about the Aura thing", embed=False).intent == "other"
    assert intents.classify("Can I pay for the Aura facial by card?", embed=False, names_service=True).intent == "other"


def test_a_turn_naming_a_service_row_is_a_services_turn(chat):
    (body,) = ask(chat, "Tell me more about the Signature Aura Facial")
    assert body["intent"] == "services"
    assert "signature_facial_details" in [c["key"] for c in body["citations"]]


# ----------------------------------------------------------------------------- an order asks for the number


def test_an_order_is_handed_off_and_the_number_sent_next_reaches_it(chat):
    first, second = ask(chat, "I'd like to order a spa pedicure gift for my mum on Saturday", "0712 345 678")
    assert first["intent"] == "booking"
    assert "Please share your phone number" in first["answer"]
    assert second["refusal_reason"] is None
    handoff = HandoffRequest.objects.get()
    assert (handoff.kind, handoff.contact, handoff.what) == ("booking", "0712 345 678", "Spa Pedicure")


# ----------------------------------------------------------------------------- a wrong intent never costs the answer


@pytest.mark.parametrize("mode", ["inline", "hybrid"])
def test_a_services_question_a_policy_snippet_answers_is_answered_in_either_mode(chat, mode, monkeypatch):
    from knowledge import retrieval

    pin_mode(mode)
    calls = []
    original = retrieval.fetch_snippets
    monkeypatch.setattr(retrieval, "fetch_snippets",
                        lambda intent, **kw: calls.append(intent) or original(intent, **kw))
    (body,) = ask(chat, "How much do you charge for a late cancellation?")
    assert body["intent"] == "services"
    assert body["meta"]["mode"] == mode
    assert body["refusal_reason"] is None
    assert body["citations"][0]["key"] == "cancellation_policy"
    assert calls == ["services"]  # one search, not a narrowed one and then a wider one


def test_a_services_question_the_knowledge_lacks_is_a_gap_for_the_owner(chat):
    (body,) = ask(chat, "Do you repair leather car seats?")
    assert body["intent"] == "services"
    assert body["refusal_reason"] == "no_relevant_context"
    gap = Event.objects.get(name="knowledge_gap_candidate")
    assert gap.payload["question"] == "Do you repair leather car seats?" and gap.payload["refused"] is True


def test_a_price_the_facts_answer_alone_is_no_gap(chat):
    (body,) = ask(chat, "How much is a Swedish massage?")
    assert body["intent"] == "services" and "facts:services" in [c["key"] for c in body["citations"]]
    assert not Event.objects.filter(name="knowledge_gap_candidate").exists()


@pytest.mark.parametrize("message, cancel", [
    ("I can't make it tomorrow", True),
    ("Something came up and I can't make tomorrow morning. Will I be charged?", True),
    ("I can't come to my appointment on Friday", True),
    ("I cannot come to the session today", True),
    # not coming to the premises asks for another way to be served, not to cancel anything
    ("I travel a lot for work and can't come to Thika myself. Is there a way you get the car and return it?", False),
    ("I can't come in person, can you deliver?", False),
])
def test_not_being_able_to_come_cancels_only_a_booking(message, cancel):
    assert (intents.classify(message, embed=False).intent == "cancel") is cancel
