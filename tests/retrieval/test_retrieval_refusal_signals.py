"""The answer-or-refuse signals one by one (answer type, salient words, word coverage), the model that
combines them, and the decision running the same in inline mode as in hybrid mode."""
from __future__ import annotations

import math
from dataclasses import replace

import pytest
from retrieval_kb import Cand, kb, mode  # noqa: F401 (fixtures)

from knowledge.retrieval import fetch_snippets
from knowledge.retrieval.relevance import (WORD_COVERED, Signals, answer_types, decide, probability,
                                           salient_words, signals_for, where_the_business_is, word_weight)

TRAYS = Cand(title="How trays are packed",
             body="Every order ships in stackable 500 g trays, sealed and frozen, packed in a cool box with ice packs.")


@pytest.mark.parametrize("question, types", [
    ("How much is a full valet?", {"price"}), ("Bei ya box braids ni ngapi?", {"price"}),
    ("What time do you open on Sunday?", {"time"}), ("Mnafungua saa ngapi Jumamosi?", {"time"}),
    ("How long does a deep clean take?", {"duration"}), ("Where are you located?", {"place"}),
    ("Mko wapi?", {"place"}), ("Do you have wifi?", set()),
    ("What's the latest I can bring my car in?", {"time"}), ("Do you stock the latest iPhone?", set()),
])
def test_it_reads_the_answer_type_a_question_asks_for(question, types):
    assert answer_types(question) == types


@pytest.mark.parametrize("text, gives", [
    ("It takes 45 minutes.", True), ("Men's suits: 10 working days, with two fittings.", True),
    ("Alterations take 2 to 3 business days.", True), ("Panels carry a 10-year product warranty.", True),
    ("Batteries last about 5 years.", True), ("a 3-day course", True),
    ("A knee-length dress needs 3 to 4 yards.", False), ("Call 0722 418 903.", False), ("KES 500 a day", False),
])
def test_it_reads_a_duration_as_owners_write_one(text, gives):
    from knowledge.retrieval.answer_types import gives_type

    assert gives_type(text, "duration") is gives


def test_salient_words_leave_out_request_words_stopwords_and_answer_type_words():
    assert salient_words(["can", "i", "please", "bring", "my", "dog", "how", "much", "price"]) == ["bring", "dog"]
    assert salient_words(["bpa-free", "trays"]) == ["bpa", "free", "trays"]


def test_a_word_rare_in_everyday_requests_weighs_more_than_a_common_one():
    assert word_weight("valet") > word_weight("time") > 1.0


@pytest.mark.django_db
def test_a_price_question_against_snippets_without_a_price_is_a_type_miss():
    without = signals_for([TRAYS], language="en", question="How much are the trays?", words=["trays"])
    priced = Cand(title="Tray prices", body="A 500 g tray costs KES 450.")
    with_price = signals_for([priced], language="en", question="How much are the trays?", words=["trays"])
    assert (without.type_asked, without.type_missing) == (1.0, 1.0)
    assert (with_price.type_asked, with_price.type_missing) == (1.0, 0.0)
    plain = signals_for([TRAYS], language="en", question="Do you ship trays?", words=["ship", "trays"])
    assert (plain.type_asked, plain.type_missing) == (0.0, 0.0)
    # The refusal model was fitted without the contact type: it lifts ranking only.
    booking = signals_for([TRAYS], language="en", question="How do I order trays?", words=["order", "trays"])
    assert answer_types("How do I order trays?") == {"contact"}
    assert (booking.type_asked, booking.type_missing) == (0.0, 0.0)


@pytest.mark.django_db
def test_a_salient_word_with_no_counterpart_in_the_snippet_lowers_word_coverage():
    near_miss = signals_for([TRAYS], language="en", question="Are the trays BPA-free?", words=["trays", "bpa-free"])
    answered = signals_for([TRAYS], language="en", question="How are the trays packed?", words=["trays", "packed"])
    assert answered.word_min == 1.0 and answered.word_uncovered == 0.0  # both words are in the snippet
    assert near_miss.word_min < WORD_COVERED and near_miss.word_uncovered > 0.0
    assert near_miss.word_coverage < answered.word_coverage


@pytest.mark.parametrize("question, places", [
    ("Do you deliver to Kapsoya?", ["kapsoya"]), ("do u wrk in juja", ["juja"]),
    ("I stay in Kitengela, can someone come for my phone?", ["kitengela"]),
    ("Mnaleta saruji hadi Langas?", ["langas"]), ("Mnafika Karen?", ["karen"]),
    # A time, an adverb, a stopword or a figure after the preposition is no place.
    ("Can you come at night?", []), ("Do you work in the evenings?", []), ("Can I pay in cash?", []),
    ("Can you send someone at exactly 9?", []), ("Can I come in at 9?", []), ("Mnafungua hadi saa ngapi?", []),
])
def test_an_area_question_names_the_place_it_asks_about(question, places):
    from knowledge.retrieval.answer_types import area_slot_words

    assert area_slot_words(question) == places
    assert ("area" in answer_types(question)) == bool(places)


@pytest.mark.django_db
def test_an_area_question_is_read_by_ranking_only():
    areas = Cand(title="Areas we deliver to",
                 body="We deliver across Eldoret town and the estates within 15 km: Elgon View, Kapseret, Langas.")
    signals = signals_for([areas], language="en", question="Do you deliver to Kapsoya?", words=["deliver", "kapsoya"])
    # The refusal model was fitted without the type; and the place stays a word the knowledge must speak to.
    assert (signals.type_asked, signals.type_missing) == (0.0, 0.0)
    assert signals.word_uncovered > 0.0


@pytest.mark.django_db
def test_a_paraphrase_is_covered_by_meaning_not_only_by_spelling():
    parking = Cand(title="Parking", body="Free parking for guests in the basement of Mirage Tower.")
    car = signals_for([parking], language="en", question="Where can I leave my car?", words=["leave", "car"])
    unrelated = signals_for([parking], language="en", question="Where can I leave my parrot?",
                            words=["leave", "parrot"])
    assert car.word_coverage > unrelated.word_coverage


def test_the_probability_follows_the_model_file_format():
    model = {"features": ["top_similarity"], "coefficients": [2.0], "intercept": 0.0, "means": [0.5],
             "scales": [0.1], "threshold": 0.5}
    signals = {"top_similarity": 0.6}
    assert probability(signals, model) == pytest.approx(1 / (1 + math.exp(-2.0)), rel=1e-9)  # z = 2 × (0.6 − 0.5) / 0.1
    assert probability({"top_similarity": 0.5}, model) == 0.5


@pytest.mark.django_db
def test_nothing_retrieved_is_always_refused():
    decision = decide([], language="en", question="Is there parking?")
    assert decision.refusal_reason == "no_relevant_context" and decision.probability == 0.0
    assert isinstance(decision.signals, Signals)


@pytest.mark.django_db
@pytest.mark.parametrize("question", ["Is there parking at the spa?", "Do you do home visits for weddings?",
                                      "What is the capital city of Mongolia?"])
def test_inline_mode_decides_exactly_as_hybrid_mode_on_a_small_kb(kb, mode, question):
    kb.spa()
    mode("hybrid")
    hybrid = fetch_snippets("other", query=question, channel="chat")
    mode("inline")
    inline = fetch_snippets("other", query=question, channel="chat")
    assert inline.mode == "inline" and hybrid.mode == "hybrid"
    assert inline.debug["refusal"]["signals"] == hybrid.debug["refusal"]["signals"]
    assert (inline.refusal_reason, inline.relevance) == (hybrid.refusal_reason, hybrid.relevance)


@pytest.mark.django_db
def test_inline_mode_refuses_an_off_topic_question_and_answers_a_covered_one(kb, mode):
    kb.spa()
    mode("inline")
    assert fetch_snippets("other", query="What is the capital city of Mongolia?",
                          channel="chat").refusal_reason == "no_relevant_context"
    assert fetch_snippets("other", query="Is there parking at the spa?", channel="chat").refusal_reason is None


@pytest.mark.django_db
def test_the_decision_does_not_depend_on_the_order_the_database_returns_the_pool_in():
    # Equal keyword coverage and equal similarity: which one is the best match by words, and which ones are
    # read for word coverage, must not follow the row order (it changes with the table's statistics).
    field = [Cand(key=f"s{i}", title=title, body=body, similarity=0.35, idf_coverage=0.25)
             for i, (title, body) in enumerate([
                 ("Delivery", "We deliver protein tubs and supplements across Mombasa for KES 300."),
                 ("Payment methods", "Pay by M-Pesa Paybill, cash or card at the counter."),
                 ("What to bring", "Bring a towel, a water bottle and a padlock for the lockers."),
                 ("Guest policy", "Members may bring one guest a month for a fee."),
                 ("Nutrition", "Our coaches give meal plans with every personal training package."),
                 ("Corporate", "Companies can buy memberships for staff at a discount."),
             ])]
    words = ["protein", "bring", "money", "payment", "likoni"]
    forward = signals_for(field, language="sw", question="Mnaleta protein hadi Likoni?", words=words)
    backward = signals_for(field[::-1], language="sw", question="Mnaleta protein hadi Likoni?", words=words)
    assert forward == backward


LOCATION = Cand(key="location", title="Where to find us", similarity=0.24,
                body="We are on the first floor of Kimathi House, Room 14, Kimathi Street, opposite the Hilton.")
PARKING = Cand(key="parking", title="Parking", similarity=0.21,
               body="There is street parking on Kimathi Street, paid through the county e-parking.")


@pytest.mark.parametrize("question, words", [
    ("Where are you located?", ["where", "are", "you", "located"]),
    ("Where is your shop?", ["where", "is", "your", "shop", "shops"]),
    ("Mko wapi?", ["where", "are", "you"]),
    # the kind of premises a business has names the business too
    ("Where is your garage?", ["where", "is", "your", "garage"]),
    ("Where is the clinic?", ["where", "is", "the", "clinic"]),
])
def test_a_question_asking_only_where_the_business_is_finds_the_snippet_titled_for_the_place(question, words):
    assert where_the_business_is([PARKING, LOCATION], question=question, words=words) is LOCATION
    # a snippet that only mentions a place does not answer it
    assert where_the_business_is([PARKING], question=question, words=words) is None


@pytest.mark.django_db
def test_the_model_refusing_where_are_you_is_overruled_only_by_a_snippet_titled_for_the_place():
    words = ["where", "are", "you", "located"]
    # what the tailor's owner-written knowledge scored: low cosines, no keyword match
    weak = {"title_similarity": 0.3, "keyword_rank": 0.0, "idf_coverage": 0.0, "heading_terms": 0}
    location, parking = replace(LOCATION, **weak), replace(PARKING, **weak)
    answered = decide([parking, location], language="en", question="Where are you located?", words=words)
    assert answered.probability < answered.threshold  # the model alone would refuse these similarities
    assert (answered.refusal_reason, answered.answered_by) == (None, "place_title")
    refused = decide([parking], language="en", question="Where are you located?", words=words)
    assert (refused.refusal_reason, refused.answered_by) == ("no_relevant_context", "model")


@pytest.mark.parametrize("question, words", [
    ("Where can I park?", ["where", "can", "i", "park"]),  # about something: the model decides
    ("Where is your Mombasa branch?", ["where", "is", "your", "mombasa", "branch"]),
    ("Do you have parking?", ["do", "you", "have", "parking"]),  # not a place question
])
def test_a_place_question_about_something_is_left_to_the_model(question, words):
    assert where_the_business_is([PARKING, LOCATION], question=question, words=words) is None


@pytest.mark.django_db
def test_where_are_you_is_answered_from_the_location_snippet_and_refused_without_one(kb, mode):
    mode("hybrid")
    location = kb(key="location", title="Where to find us", body="We are on the first floor of Kimathi House, "
                  "Room 14, Kimathi Street in Nairobi CBD, opposite the Hilton side entrance. From the Kencom bus "
                  "stop it is five minutes' walk up Moi Avenue.")
    kb(key="parking", title="Parking", body="We don't have our own parking. There is street parking on Kimathi "
       "Street, paid through the county e-parking, but it fills up by 10 am.")
    kb(key="deposits", title="Deposits", body="Made-to-measure orders need a 50% deposit by M-Pesa.")
    answered = fetch_snippets("other", query="Where are you located?", channel="chat")
    assert answered.refusal_reason is None and answered.snippets[0].key == "location"
    from knowledge.services import snippet_deactivate

    snippet_deactivate(key=location.snippet.key)
    refused = fetch_snippets("other", query="Where are you located?", channel="chat")
    assert refused.refusal_reason == "no_relevant_context"
    assert refused.debug["refusal"]["answered_by"] == "model"
