"""Questions about the business itself, how to book, and its policies: answered from the snippet the owner titled
for them ("About ...", "How to book", "Returns and exchanges"), not from the one describing the product or service
the question names."""
from __future__ import annotations

import pytest

from tests.chat.test_chat_contact_and_place import TAILOR, _turn
from tests.retrieval.retrieval_kb import kb, mode  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db


@pytest.fixture
def tailor(kb, mode):
    mode("hybrid")
    return [kb(**item) for item in TAILOR]


@pytest.mark.parametrize("question, asks", [
    ("Who owns Madoa Laundry?", True), ("Who's behind the company?", True), ("Who started this place?", True),
    ("How long have you been in business?", True), ("Who actually runs the place, and do you deliver?", True),
    ("When was Madoa founded?", True), ("Mmiliki wa duka ni nani?", True), ("who is the owner", True),
    ("Who are the vets at your clinic?", True), ("who are your stylists", True),
    ("Who are the instructors for the night classes?", False),
    # about something else
    ("Who runs the Zumba class?", False), ("When did you start my repair?", False),
    ("Who do I call if my cat gets sick?", False), ("How long have you been waiting?", False),
    ("Who should not have a hot stone massage?", False),
])
def test_it_reads_a_question_about_who_runs_the_business(question, asks):
    from knowledge.retrieval.answer_types import asks_about_the_business

    assert asks_about_the_business(question) is asks


ABOUT = dict(key="about", title="About Zawadi Tailors",
             body="Zawadi Tailors was opened in 2009 by Mary Wambui, who trained at the Nairobi Fashion School. Today "
                  "six tailors work with her, and two of them have been here since the start.")


@pytest.mark.parametrize("question", ["Who's behind the company?", "How long have you been around?",
                                      "Who started this business, and how long have you been in the trade?"])
def test_who_runs_the_business_is_answered_from_the_snippet_titled_about_it(tailor, kb, question):
    kb(**ABOUT)
    result = _turn(question)
    assert result.refusal_reason is None and result.citations[0]["key"] == "about"
    assert "Mary Wambui" in result.answer or "2009" in result.answer


def test_who_works_here_is_answered_with_the_people_not_the_founding(tailor, kb):
    kb(**ABOUT)
    result = _turn("Who are the tailors at your shop?")
    assert result.refusal_reason is None and result.citations[0]["key"] == "about"
    assert "six tailors" in result.answer


def test_who_runs_something_else_is_not_sent_to_the_about_snippet(tailor, kb):
    from knowledge.retrieval import fetch_snippets

    kb(**ABOUT)
    kb(key="classes", title="Sewing classes", body="Our Saturday sewing class is run by Mama Njeri for beginners.")
    retrieval = fetch_snippets(intent="other", query="Who runs the sewing class?", channel="chat")
    assert retrieval.debug["refusal"]["answered_by"] != "about_title"
    assert retrieval.snippets and retrieval.snippets[0].key == "classes"


@pytest.mark.parametrize("question, asks", [
    ("How do I book interior detailing?", True), ("Do I need an appointment for alterations?", True),
    ("Do you accept walk-ins?", True), ("hw do i book a personal trainr", True),
    ("Nawezaje kubook usafi wa sofa?", True),
    ("Nataka kubook suti, nifanyeje?", True), ("Can I just come in without an appointment?", True),
    ("Msee, naweza kuingia tu ninyolewe bila booking?", True),
    # a request to book, or another question about booking
    ("Can I book a fitting for Saturday at 10?", False), ("I want to book a suit fitting tomorrow", False),
    ("How far ahead should I book?", False),
])
def test_it_reads_a_question_asking_how_to_book(question, asks):
    from knowledge.retrieval.answer_types import asks_how_to_book

    assert asks_how_to_book(question) is asks


BOOKING = dict(key="booking", title="Walk-ins and booking a measuring slot",
               body="Alterations and repairs need no appointment: just walk in with the garment. Measuring for a suit "
                    "or a kitenge outfit is booked: WhatsApp 0722 418 903 with the day you want.")
SUITS = dict(key="suits", title="Made-to-measure suits",
             body="Our made-to-measure 2-piece suit is cut by Otieno, who has made suits for 20 years. It includes "
                  "lining and buttons, and takes 2 to 3 weeks with two fittings.")


@pytest.mark.parametrize("question", ["How do I book a made-to-measure suit?", "Do I need an appointment for a suit?"])
def test_how_to_book_a_service_is_answered_from_the_snippet_titled_for_booking(tailor, kb, question):
    kb(**BOOKING)
    kb(**SUITS)
    result = _turn(question)
    assert result.refusal_reason is None and result.citations[0]["key"] == "booking"


def test_how_to_book_asked_in_any_part_finds_the_closest_snippet_titled_for_booking():
    from types import SimpleNamespace

    from knowledge.retrieval.relevance import how_to_book

    pool = [SimpleNamespace(key="suits", title="Made-to-measure suits", similarity=0.6),
            SimpleNamespace(key="groups", title="Group bookings for weddings", similarity=0.2),
            SimpleNamespace(key="booking", title="Walk-ins and booking a measuring slot", similarity=0.3)]
    assert how_to_book(pool, question="Who cuts the suits, and how do I book one?").key == "booking"
    assert how_to_book(pool, question="Who cuts the suits?") is None
    assert how_to_book(pool[:1], question="How do I book?") is None


def test_walk_ins_and_booking_each_get_their_own_title_and_changing_a_booking_answers_neither():
    from types import SimpleNamespace

    from knowledge.retrieval.relevance import how_to_book

    pool = [SimpleNamespace(key="cancel", title="Cancelling or moving an appointment", similarity=0.7),
            SimpleNamespace(key="walk_ins", title="Walk-ins and the queue", similarity=0.6),
            SimpleNamespace(key="how_to_book", title="How to book", similarity=0.4)]
    assert how_to_book(pool, question="How do I book an appointment?").key == "how_to_book"
    assert how_to_book(pool, question="do u acept walk ins or i must book").key == "walk_ins"
    assert how_to_book(pool, question="Can I come in without an appointment?").key == "walk_ins"
    assert how_to_book(pool[:1], question="How do I book an appointment?") is None  # not even as the only one
    titled_for_both = [SimpleNamespace(key="visits", title="Booking and moving a technician visit", similarity=0.3),
                       SimpleNamespace(key="deposits", title="Booking deposits", similarity=0.6)]
    assert how_to_book(titled_for_both, question="How do I book a site survey?").key == "visits"


@pytest.mark.parametrize("question, policies", [
    ("Can I return floor mats if they don't fit?", {"returns"}), ("Can I swap it for a bigger one?", {"returns"}),
    ("Can I get a refund if I cancel my membership?", {"returns", "cancel"}),
    ("How do I make a complaint?", {"complaints"}), ("Nikitaka kughairi fundi asije, nitalipishwa?", {"cancel"}),
    ("Do I have to pay a deposit for a suit?", {"deposit"}), ("Ni lazima nilipe amana nikishonewa suti?", {"deposit"}),
    ("If I cancel, do I lose my deposit?", {"cancel"}),  # what cancelling does to it: the cancellation terms
    ("How do I get my rent deposit back from the landlord?", set()),
    # no policy named
    ("When will you return my car?", set()), ("What if I'm not happy with my haircut?", set()),
])
def test_it_reads_the_policy_a_question_asks_about(question, policies):
    from knowledge.retrieval.answer_types import policies_asked

    assert policies_asked(question) == policies


RETURNS = dict(key="returns", title="Returns and exchanges",
               body="Ready-made items and unopened fabric can be exchanged within 7 days with the receipt. We do not "
                    "refund cash; you get another item or a credit note.")
UNIFORMS = dict(key="uniforms", title="School uniforms we stock",
                body="We stock sweaters, shirts, trousers and dresses for more than 20 Nakuru schools, from PP1 to "
                     "Form 4, in all sizes. Sweaters come in the school's own colours with the badge embroidered.")


def test_a_policy_asked_about_a_product_is_answered_from_the_snippet_titled_for_it(tailor, kb):
    kb(**RETURNS)
    kb(**UNIFORMS)
    result = _turn("Can I return a school sweater that is the wrong size?")
    assert result.refusal_reason is None and result.citations[0]["key"] == "returns"


def test_a_question_naming_no_policy_keeps_the_closest_snippet(tailor, kb):
    from knowledge.retrieval import fetch_snippets

    kb(**RETURNS)
    kb(**UNIFORMS)
    retrieval = fetch_snippets(intent="services", query="Do you stock sweaters for Menengai High?", channel="chat")
    assert retrieval.snippets[0].key == "uniforms" and "policy_lead" not in retrieval.debug


@pytest.mark.parametrize("question, urgent", [
    ("Water is pouring through my ceiling right now. Can someone come tonight?", True),
    ("Is a hot socket an emergency?", True), ("Nothing works since this morning. How fast can someone come?", True),
    ("Mbwa wangu amegongwa na gari usiku huu, nipigie nani?", True), ("Ni dharura?", True),
    ("do u have an emergancy plumber", True),
    # haste without anyone coming, or a call-out at an ordinary time
    ("Money is tight right now. Can I pay slowly?", False), ("I need my shirts washed by tonight.", False),
    ("Can someone come on Tuesday morning?", False), ("Mnauza collar zinazong'aa usiku?", False),
])
def test_it_reads_an_urgent_question(question, urgent):
    from knowledge.retrieval.answer_types import asks_urgently

    assert asks_urgently(question) is urgent


def test_a_request_finds_the_snippet_titled_for_it():
    from types import SimpleNamespace

    from knowledge.retrieval.relevance import for_the_request

    pool = [SimpleNamespace(key="deposits", title="Booking deposits", similarity=0.7),
            SimpleNamespace(key="orders", title="Cancelling an order", similarity=0.3),
            SimpleNamespace(key="fittings", title="Fitting appointments: changes", similarity=0.4),
            SimpleNamespace(key="night", title="Emergency repairs at night", similarity=0.2)]
    assert for_the_request(pool, request="reschedule", question="Can I push my fitting?").key == "fittings"
    assert for_the_request(pool, request="cancel", question="Cancel my order").key == "fittings"  # the closest
    assert for_the_request(pool, request="booking", question="A pipe burst, can someone come right now?").key == "night"
    assert for_the_request(pool, request="booking", question="Book me a fitting on Friday") is None
    assert for_the_request(pool[:1], request="cancel", question="Cancel my booking") is None  # deposits alone: no


CHANGES = dict(key="changes", title="Cancelling or moving a fitting",
               body="To move or cancel a fitting, WhatsApp us at least 12 hours before. Later changes lose the KES "
                    "500 booking fee.")
EMERGENCY = dict(key="emergency", title="Emergency alterations",
                 body="For a wedding-day emergency we send a tailor to you within two hours; the call-out is KES "
                      "1,500 on top of the work.")


def test_a_change_the_knowledge_cannot_place_is_handed_off_with_the_change_terms(tailor, kb):
    from conversations.models import HandoffRequest

    kb(**CHANGES)
    result = _turn("Something came up. Can I push my Saturday one to next Tuesday?")
    assert result.intent == "reschedule" and result.refusal_reason is None
    assert [c["key"] for c in result.citations] == ["changes"] and "12 hours" in result.answer
    assert HandoffRequest.objects.filter(kind="reschedule").count() == 1
    assert "passed your request" in result.answer


def test_an_urgent_booking_is_handed_off_with_the_emergency_snippet(tailor, kb):
    from conversations.models import HandoffRequest

    kb(**CHANGES)
    kb(**EMERGENCY)
    result = _turn("I need someone to come tonight, my zip broke.")
    assert result.intent == "booking" and result.refusal_reason is None
    assert result.citations[0]["key"] == "emergency" and "two hours" in result.answer
    assert HandoffRequest.objects.filter(kind="booking").count() == 1


def test_an_ordinary_booking_gets_neither(tailor, kb):
    kb(**CHANGES)
    kb(**EMERGENCY)
    result = _turn("I'd like to book a fitting for Saturday at 10.")
    assert result.intent == "booking"
    assert not {"changes", "emergency"} & {c["key"] for c in result.citations}


def test_an_urgent_question_leads_with_the_emergency_snippet(tailor, kb):
    from knowledge.retrieval import fetch_snippets

    kb(**EMERGENCY)
    kb(key="hems", title="Hemming trousers and dresses",
       body="We hem trousers, skirts and dresses by hand or machine; a hem takes two days and costs KES 300.")
    retrieval = fetch_snippets(intent="other", query="The hem of my trousers came down and the function is tonight. "
                                                      "How fast can someone come and fix the hem?", channel="chat")
    assert retrieval.refusal_reason is None and retrieval.snippets[0].key == "emergency"


def test_a_deposit_question_is_answered_from_the_snippet_titled_for_deposits(tailor, kb):
    kb(**SUITS)
    kb(key="deposits", title="Deposits",
       body="We ask for half the price before any fabric is cut; alterations are paid on collection.")
    kb(key="rent", title="Getting your rent deposit back",
       body="Our move-out clean leaves the house ready for the landlord's inspection.")
    result = _turn("Do I have to pay a deposit for a made-to-measure suit?")
    assert result.refusal_reason is None and result.citations[0]["key"] == "deposits"


def test_a_deposit_lost_by_cancelling_is_answered_from_the_cancellation_terms():
    from types import SimpleNamespace

    from knowledge.retrieval.relevance import policy_titled

    pool = [SimpleNamespace(key="deposits", title="Booking deposits", similarity=0.7),
            SimpleNamespace(key="cancel", title="Cancellation and rescheduling", similarity=0.5)]
    assert policy_titled(pool, question="Do I pay a deposit to book?").key == "deposits"
    assert policy_titled(pool, question="I need to cancel tomorrow. Will I lose my deposit?").key == "cancel"
