"""A customer asking how to reach the business gets the number the owner wrote, wherever it is written; one
asking where it is, beside another question, gets the address too."""
from __future__ import annotations

import pytest

from tests.retrieval.retrieval_kb import kb, mode  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db

TAILOR = [
    dict(key="location", title="Where to find us",
         body="We are on the second floor of Mama Ngina House, Shop 12, along Moi Avenue in Nairobi CBD, next to "
              "the Bata shop. Call or WhatsApp us on 0722 418 903 if you get lost and we will guide you up."),
    dict(key="payment", title="Paying for your order",
         body="We take M-Pesa Buy Goods till 5523108 and cash. A 50% deposit is paid when you order; the rest "
              "when you collect."),
    dict(key="turnaround", title="How long alterations take",
         body="Hemming and zips take two days. A suit takes 2 to 3 weeks including two fittings."),
    dict(key="own_fabric", title="Bringing your own fabric",
         body="You are welcome to bring your own kitenge or suit fabric. We tell you how many metres to buy."),
    dict(key="delivery", title="Delivery",
         body="Within Nairobi a boda delivers finished clothes for KES 300. Outside Nairobi we send through "
              "Easy Coach at your cost. We don't pick up clothes from homes."),
    dict(key="fittings", title="Fittings",
         body="Made-to-measure clothes have one or two fittings. Please come in the shoes you will wear."),
]


@pytest.fixture
def tailor(kb, mode):
    mode("hybrid")
    return [kb(**item) for item in TAILOR]


def _turn(message: str):
    from conversations import services

    return services.turn_run(services.TurnInput(message=message, channel="chat"))


@pytest.mark.parametrize("question, kind", [
    ("What is your phone number?", "phone"), ("whats ur numba", "phone"), ("How can I contact you?", "phone"),
    ("Do you have WhatsApp?", "phone"), ("Namba yenu ya simu ni gani?", "phone"),
    ("What is your till number?", "payment"), ("mpesa paybil number pls", "payment"),
    ("What is your email address?", "email"), ("What's your number?", "phone"),
    # asking about something: the refusal model decides
    ("What is your emergency number?", None), ("Can you email me the receipt?", None),
    ("Can I pay with M-Pesa?", None), ("Is there parking?", None),
])
def test_it_reads_a_question_asking_only_how_to_reach_or_pay_the_business(question, kind):
    from knowledge.retrieval.answer_types import reach_asked

    assert reach_asked(question) == kind


def test_a_detail_is_a_number_or_address_written_out():
    from knowledge.retrieval.answer_types import gives_detail

    assert gives_detail("Call or WhatsApp us on 0722 418 903 if you get lost.", "phone")
    assert gives_detail("WhatsApp +254 711 902 533 or call 051 221 4870.", "phone")
    assert gives_detail("Write to hello@fundi.co.ke.", "phone")  # an address answers "how can I contact you?"
    assert gives_detail("We take M-Pesa Buy Goods till 5523108 and cash.", "payment")
    assert not gives_detail("A suit takes 2 to 3 weeks.", "phone")
    assert not gives_detail("Call us on 0722 418 903.", "email")
    assert not gives_detail("Pay by M-Pesa when you collect.", "payment")


@pytest.mark.parametrize("question", ["What is your phone number?", "whats ur numba", "Can I call you?"])
def test_the_number_written_inside_the_location_snippet_answers_a_phone_question(tailor, question):
    result = _turn(question)
    assert result.refusal_reason is None
    assert [c["key"] for c in result.citations] == ["location"]
    # the sentence holding the number leads; the directions are not what was asked
    assert result.answer.split(": ", 1)[1].startswith("Call or WhatsApp us on 0722 418 903")


def test_a_swahili_customer_gets_the_number_too(tailor):
    result = _turn("Namba yenu ya simu ni gani?")
    assert result.refusal_reason is None and "0722 418 903" in result.answer


def test_the_till_number_comes_from_the_payment_snippet(tailor):
    result = _turn("What is your till number?")
    assert result.refusal_reason is None
    assert result.citations[0]["key"] == "payment" and "5523108" in result.answer


def test_a_detail_the_knowledge_does_not_hold_is_still_refused(tailor, kb):
    assert _turn("What's your email?").refusal_reason == "no_relevant_context"
    kb(key="orders", title="Orders by e-mail", body="Corporate uniform orders: write to orders@mamangina.co.ke.")
    answered = _turn("What's your email?")
    assert answered.refusal_reason is None and "orders@mamangina.co.ke" in answered.answer


def test_without_a_number_anywhere_a_phone_question_is_refused(kb, mode):
    mode("hybrid")
    for item in TAILOR:
        body = item["body"].replace(" Call or WhatsApp us on 0722 418 903 if you get lost and we will guide you up.",
                                    "")
        kb(**{**item, "body": body})
    assert _turn("What is your phone number?").refusal_reason == "no_relevant_context"


def test_retrieval_records_that_the_detail_answered_and_led(tailor):
    from knowledge.retrieval import fetch_snippets

    found = fetch_snippets("other", query="What is your phone number?", channel="chat")
    assert found.refusal_reason is None and found.snippets[0].key == "location"
    assert found.debug["refusal"]["answered_by"] == "reach_detail"
    till = fetch_snippets("other", query="What is your till number?", channel="chat")
    assert till.snippets[0].key == "payment"


@pytest.fixture
def tailor_with_hours(tailor):
    from tests.support.spa import seed_facts

    seed_facts()
    return tailor


def _cited(result) -> list[str]:
    return [c["key"] for c in result.citations]


@pytest.mark.parametrize("question, facts", [
    ("Where are you, and what time do you open on Saturday?", "facts:hours"),
    ("Are you open on Sunday, and where are you?", "facts:hours"),
    ("How much is a Swedish massage and where are you?", "facts:services"),
    ("Mko wapi na mnafungua saa ngapi Jumamosi?", "facts:hours"),
])
def test_where_are_you_beside_a_facts_question_gets_the_address_too(tailor_with_hours, question, facts):
    result = _turn(question)
    assert result.refusal_reason is None
    assert _cited(result)[0] == facts and "location" in _cited(result)
    assert "Moi Avenue" in result.answer


def test_where_are_you_beside_another_knowledge_question_gets_both(tailor):
    result = _turn("Do you deliver, and where are you?")
    assert {"delivery", "location"} <= set(_cited(result))
    assert "Moi Avenue" in result.answer and "boda" in result.answer


def test_a_part_the_knowledge_cannot_answer_is_left_out_beside_the_address(tailor):
    result = _turn("Do you sell shoes and where are you?")
    assert result.refusal_reason is None
    assert _cited(result) == ["location"]


def test_a_small_knowledge_base_read_whole_answers_them_too(kb, mode):
    mode("inline")  # a new business under the inline caps reads its whole knowledge
    for item in TAILOR:
        kb(**item)
    phone = _turn("What is your phone number?")
    assert phone.refusal_reason is None and "0722 418 903" in phone.answer
    both = _turn("Do you deliver, and where are you?")
    assert "Moi Avenue" in both.answer and "boda" in both.answer


def test_the_number_where_the_owner_says_where_they_are_is_the_one_given(tailor, kb):
    kb(key="night_line", title="Urgent alterations at night",
       body="For a wedding-day emergency after hours, phone our night tailor on 0799 100 200 (calls only).")
    result = _turn("What is your phone number?")
    assert result.citations[0]["key"] == "location" and "0722 418 903" in result.answer


def test_where_is_your_shop_is_answered_from_the_location_not_a_snippet_saying_shop(tailor, kb):
    kb(key="parking", title="Parking",
       body="There are three parking bays right in front of the shop, free for customers for up to 20 minutes; "
            "otherwise use the county street parking on Moi Avenue.")
    result = _turn("Where is your shop?")
    assert result.citations[0]["key"] == "location" and "Moi Avenue" in result.answer


def test_beside_the_hours_and_the_address_nothing_repeating_the_hours_is_quoted(kb, mode):
    from tests.support.spa import seed_facts

    mode("inline")  # the whole small knowledge base is read, the holiday hours too
    seed_facts()
    kb(key="location", title="Where to find us", body="We are on the 3rd floor of Mirage Tower, Chiromo Road, "
       "Westlands. If you get lost, call or WhatsApp us on 0722 418 903 and reception will guide you up.")
    kb(key="public_holiday_hours", title="Public holiday hours", body="On Kenyan public holidays we usually open "
       "from 10:00 to 16:00. We are closed on Christmas Day and New Year's Day.")
    kb(key="parking", title="Parking", body="Free parking for guests is available in the basement of Mirage Tower.")
    result = _turn("Where are you, and what time do you open on Saturday?")
    assert _cited(result) == ["facts:hours", "location"]


@pytest.mark.parametrize("question, methods", [
    ("Do you take M-Pesa?", {"mpesa"}), ("do u take mpesa", {"mpesa"}), ("Can I pay by card?", {"card"}),
    ("Do you accept Visa card?", {"card"}), ("Mnakubali M-Pesa?", {"mpesa"}), ("Do you accept NHIF?", {"nhif"}),
    ("Do you take insurance?", {"insurance"}),
    ("Naweza kulipa kwa M-Pesa?", {"mpesa"}), ("Do you accept cheques?", {"cheque"}),
    # asking about something else: the refusal model decides
    ("Are you an M-Pesa agent?", set()), ("Can I withdraw cash here?", set()), ("Can I pay in instalments?", set()),
    ("Can I pay cash on delivery?", set()), ("whats ur till number", set()),
    ("When do we have to check out?", set()),  # checking out, not paying by check
])
def test_it_reads_a_question_asking_only_whether_a_way_to_pay_is_taken(question, methods):
    from knowledge.retrieval.answer_types import payment_methods_asked

    assert payment_methods_asked(question) == methods


def test_a_card_is_a_payment_card_not_an_id_card():
    from knowledge.retrieval.answer_types import names_method

    assert names_method("Visa and Mastercard at reception, and cash.", frozenset({"card"}))
    assert names_method("We do not take card payments.", frozenset({"card"}))
    assert not names_method("Bring your original national ID card and two photos.", frozenset({"card"}))
    assert not names_method("Bring the vaccination card.", frozenset({"card"}))
    assert names_method("Lipa na M-Pesa, Pay Bill 4127705.", frozenset({"mpesa"}))
    # a scheme by name only where the owner names it
    assert names_method("We accept NHIF and most insurers.", frozenset({"insurance"}))
    assert not names_method("Insurance patients pay any co-payment on the day.", frozenset({"sha"}))
    assert names_method("We are SHA-accredited.", frozenset({"sha"}))


@pytest.mark.parametrize("question", ["Do you take M-Pesa?", "Mnakubali M-Pesa?", "do u accept mpesa"])
def test_a_way_to_pay_is_answered_from_the_snippet_on_paying(tailor, question):
    result = _turn(question)
    assert result.refusal_reason is None
    assert result.citations[0]["key"] == "payment" and "M-Pesa" in result.answer


def test_a_way_to_pay_no_snippet_names_is_left_to_the_model(tailor):
    from knowledge.retrieval import fetch_snippets
    from knowledge.retrieval.relevance import taking_the_method

    retrieval = fetch_snippets(intent="other", query="Can I pay by cheque?", channel="chat")
    assert retrieval.debug["refusal"]["answered_by"] != "payment_method"
    assert taking_the_method([], question="Can I pay by cheque?") is None


def test_the_sentence_naming_the_way_to_pay_is_quoted(kb, mode):
    mode("hybrid")
    kb(key="paying", title="Ways to pay",
       body="We accept M-Pesa Paybill 4127705, Visa and Mastercard at reception, and cash. If a renewal is more than "
            "7 days late your access tag is paused until you pay.")
    kb(key="lockers", title="Lockers", body="Day lockers are free; bring your own padlock.")
    result = _turn("Can I pay by card?")
    assert result.refusal_reason is None and result.citations[0]["key"] == "paying"
    assert result.answer.split(": ", 1)[1].startswith("We accept M-Pesa Paybill 4127705, Visa and Mastercard")


@pytest.mark.parametrize("question, asks", [
    ("Where are you located in Nakuru?", True), ("Where is your shop in Eldoret town?", True),
    ("Mko wapi hasa pale Kisumu town?", True),
    # the town ends the question; another word asks something else
    ("Where can I park in town?", False), ("Where do you deliver in Nakuru?", False),
])
def test_the_town_a_where_question_ends_on_asks_nothing_more(question, asks):
    from knowledge.retrieval.relevance import asks_where

    assert asks_where(question) is asks


def test_where_the_business_is_comes_before_where_it_goes():
    from types import SimpleNamespace

    from knowledge.retrieval.language import tokens
    from knowledge.retrieval.relevance import where_the_business_is

    pool = [SimpleNamespace(key="areas", title="Where we install", similarity=0.5),
            SimpleNamespace(key="shop", title="Where to find our shop", similarity=0.4)]
    question = "Where is your shop in Kisumu?"
    assert where_the_business_is(pool, question=question, words=tokens(question)).key == "shop"


def test_where_is_the_college_leads_with_the_place_even_below_the_closest_by_meaning(kb, mode):
    mode("hybrid")
    kb(key="story", title="About Bidii College",
       body="Bidii Computer College was started in 2011 with one room and eight second-hand computers above a shop on "
            "Commercial Street; today the college trains 600 students a year.")
    kb(key="courses", title="Courses at the college",
       body="The college offers computer packages, graphic design, web design and computerised accounting courses.")
    kb(key="enrol", title="How to enrol at the college",
       body="To join the college, bring your ID, your KCSE certificate and a passport photo to the front office.")
    kb(key="facilities", title="College facilities",
       body="The college has three computer labs, a library and free Wi-Fi for every student.")
    kb(key="location", title="Where to find us",
       body="We are on the second floor of Mugo House, Kenyatta Highway, opposite the Thika Post Office.")
    result = _turn("Where is the college located?")
    assert result.refusal_reason is None
    assert result.citations[0]["key"] == "location" and "Mugo House" in result.answer
