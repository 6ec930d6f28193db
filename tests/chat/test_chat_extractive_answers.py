"""The extractive answer answers: the sentences that answer lead, each part of a question is answered, metadata
is never quoted, and a Swahili customer gets the owner's Swahili version with its own citation."""
from __future__ import annotations

from dataclasses import replace

import pytest

from conversations.prompting import assemble_prompt
from conversations.providers.extractive import PART_MARGIN, ExtractiveProvider, question_parts
from knowledge.retrieval.sentences import split_sentences
from knowledge.models import SnippetVersion
from knowledge.retrieval.answer_types import question_pieces
from knowledge.retrieval.types import RetrievedSnippet
from telemetry.selectors import snippets_missing_language_version

PARKING = ("parking", "Parking", "Free parking for guests is in the basement of Mirage Tower. Street parking on "
           "Waiyaki Way is not recommended.\nKeywords: car, park, parking, where to park, basement, garage")
PAYMENT = ("payment_methods", "Ways to pay", "We accept M-Pesa (Till 5123987), Visa and Mastercard. We do not "
           "accept cheques.")
ARRIVAL = ("arrive_early", "Arrive early", "Please arrive 15 minutes before your appointment to fill in the "
           "consultation form. Late arrivals may get a shorter treatment.")
LOCATION = ("location", "Where to find us", "We are on the 3rd floor of Mirage Tower, Chiromo Road, Westlands.")


def _snippets(*items) -> list[RetrievedSnippet]:
    return [RetrievedSnippet(key=key, version=1, title=title, body=body, category="general", score=0.9 - 0.1 * n,
                             match_type="hybrid") for n, (key, title, body) in enumerate(items)]


def _answer(question: str, *items, language: str = "en"):
    prompt = assemble_prompt(question=question, language=language, channel="chat", snippets=_snippets(*items))
    return ExtractiveProvider().compose(prompt)


def test_a_keywords_line_feeds_retrieval_but_is_never_quoted():
    assert split_sentences(PARKING[2]) == ["Free parking for guests is in the basement of Mirage Tower.",
                                           "Street parking on Waiyaki Way is not recommended."]
    # The question shares every word with the Keywords line and fewer with the answer.
    answer = _answer("where to park car garage?", PARKING)
    assert "Keywords" not in answer.text and "garage" not in answer.text
    assert answer.text.startswith("Here is what I found: Free parking for guests is in the basement")


def test_a_question_the_owner_wrote_into_a_snippet_is_never_quoted():
    turnaround = ("turnaround", "How long it takes", "How long will it take?\n- Hemming: the next working day.\n"
                  "- Custom kitenge dresses: 7 working days from measuring.")
    answer = _answer("How long does it take to make a kitenge dress?", turnaround)
    assert "?" not in answer.text
    assert answer.text.startswith("Here is what I found: Custom kitenge dresses: 7 working days")


def test_how_long_something_takes_is_answered_with_its_duration_not_the_sentence_saying_take():
    turnaround = ("turnaround", "Turnaround", "Men's suits: 10 working days, with two fittings.\nHemming: the next "
                  "working day.\nIn January, alterations can take a day or two longer.")
    answer = _answer("How long does it take to make a suit?", turnaround)
    assert answer.text == "Here is what I found: Men's suits: 10 working days, with two fittings. [1]"


def test_a_single_question_is_answered_from_one_source():
    answer = _answer("Can I pay with M-Pesa?", PAYMENT, PARKING, ARRIVAL)
    assert [source.key for _, source, _ in answer.cited] == ["payment_methods"]
    assert answer.text == "Here is what I found: We accept M-Pesa (Till 5123987), Visa and Mastercard. [1]"


def test_each_part_of_a_two_part_question_is_answered_and_cited():
    answer = _answer("Can I pay with M-Pesa, and where do I park?", PAYMENT, ARRIVAL, PARKING)
    assert [source.key for _, source, _ in answer.cited] == ["payment_methods", "parking"]
    assert "Till 5123987" in answer.text and "basement of Mirage Tower" in answer.text
    assert "consultation form" not in answer.text  # the unrelated source adds nothing


def _answer_with_parts(question: str, similarities: dict[str, dict[str, float]], *items):
    """Answer as the extractive provider does when retrieval measured each snippet against each question."""
    snippets = [replace(snippet, part_similarities=dict(similarities.get(snippet.key, {})))
                for snippet in _snippets(*items)]
    prompt = assemble_prompt(question=question, language="en", channel="chat", snippets=snippets)
    return ExtractiveProvider().compose(prompt)


PARTS = ("Is there somewhere to leave the car", "how do I get to you")


def test_a_part_no_word_ties_to_a_source_gets_the_source_closest_to_it_by_meaning():
    question = "Is there somewhere to leave the car, and how do I get to you?"
    # By words alone "get to you" shares no word with the location; it asks only where the business is, so the
    # snippet titled for the place answers it (ADR 0009, fourteenth sitting).
    assert [s.key for _, s, _ in _answer(question, PARKING, ARRIVAL, LOCATION).cited] == ["parking", "location"]
    # The arrival snippet was not measured (a document chunk, or a version still waiting for its vector).
    similarities = {"parking": {PARTS[0]: 0.52, PARTS[1]: 0.21}, "location": {PARTS[0]: 0.2, PARTS[1]: 0.47}}
    answer = _answer_with_parts(question, similarities, PARKING, ARRIVAL, LOCATION)
    assert [source.key for _, source, _ in answer.cited] == ["parking", "location"]
    assert "Chiromo Road" in answer.text and "consultation form" not in answer.text


def test_a_part_the_quoted_source_is_about_as_close_to_gets_nothing_more():
    # the second part shares no word with any source and is not a place question
    question = "Is there somewhere to leave the car, and how does it all work?"
    parts = (PARTS[0], "how does it all work")
    similarities = {"parking": {parts[0]: 0.52, parts[1]: 0.47 - PART_MARGIN},
                    "arrive_early": {parts[0]: 0.1, parts[1]: 0.24}, "location": {parts[0]: 0.2, parts[1]: 0.47}}
    answer = _answer_with_parts(question, similarities, PARKING, ARRIVAL, LOCATION)
    assert [source.key for _, source, _ in answer.cited] == ["parking"]


def test_a_two_part_answer_reads_in_the_order_the_questions_were_asked():
    question = "How do I get to you, and is there somewhere to leave the car?"
    asked = ("How do I get to you", "is there somewhere to leave the car")
    # Retrieval ranked parking first; the location is the closest source to the first question.
    similarities = {"parking": {asked[0]: 0.2, asked[1]: 0.55}, "location": {asked[0]: 0.47, asked[1]: 0.18}}
    answer = _answer_with_parts(question, similarities, PARKING, LOCATION)
    assert [source.key for _, source, _ in answer.cited] == ["location", "parking"]
    assert answer.text.index("Chiromo Road") < answer.text.index("basement of Mirage Tower")


def test_a_source_another_source_is_closer_to_does_not_open_the_answer():
    question = "How do I get to you, and is there somewhere to leave the car?"
    asked = ("How do I get to you", "is there somewhere to leave the car")
    # Parking leads; payment is quoted for the first question by words, yet the location is closer to it.
    similarities = {"parking": {asked[0]: 0.2, asked[1]: 0.55}, "payment_methods": {asked[0]: 0.3, asked[1]: 0.1},
                    "location": {asked[0]: 0.47, asked[1]: 0.18}}
    prompt = assemble_prompt(question=question, language="en", channel="chat", snippets=[
        replace(snippet, part_similarities=similarities[snippet.key])
        for snippet in _snippets(PARKING, PAYMENT, LOCATION)])
    provider = ExtractiveProvider()
    scored, weights = provider.score(prompt, provider.candidates(prompt))
    chosen = [item for item in scored if item.candidate.source.key in ("parking", "payment_methods")
              and item.candidate.position == 0]
    order = sorted(chosen, key=provider._asked_order(prompt, chosen, weights))
    assert [item.candidate.source.key for item in order] == ["parking", "payment_methods"]


def test_similarities_for_one_question_add_nothing():
    similarities = {"parking": {"Is there parking": 0.6}, "location": {"Is there parking": 0.2}}
    answer = _answer_with_parts("Is there parking?", similarities, PARKING, LOCATION)
    assert [source.key for _, source, _ in answer.cited] == ["parking"]


def test_question_parts_split_on_question_marks_and_new_clauses_only():
    assert len(question_parts("Where is your shop, and are you open on Sunday?")) == 2
    assert len(question_parts("Do you sell cakes? Na mnakubali M-Pesa?")) == 2
    assert len(question_parts("Do you have cheese and tomato pizza?")) == 1


def test_a_question_that_only_asks_how_much_or_how_long_belongs_to_the_question_before_it():
    assert question_pieces("Mnaleta hadi Langas? Ni pesa ngapi?") == ["Mnaleta hadi Langas, Ni pesa ngapi"]
    assert question_pieces("How much is a haircut? And how long?") == ["How much is a haircut, And how long"]
    assert len(question_pieces("Is there parking? What about Sunday?")) == 2  # names something: its own question
    delivery = ("delivery_zones", "Delivery areas", "We deliver to Langas, Kapsoya and Pioneer for KES 300 a trip.")
    payment = ("payment_methods", "Njia za kulipa", "Tunakubali M-Pesa na pesa taslimu dukani.")
    answer = _answer("Mnaleta hadi Langas? Ni pesa ngapi?", delivery, payment, language="sw")
    assert [source.key for _, source, _ in answer.cited] == ["delivery_zones"]


@pytest.mark.parametrize("message, pieces", [
    ("Mko wapi na mnafungua saa ngapi Jumapili?", ["Mko wapi", "mnafungua saa ngapi Jumapili"]),
    ("Kuna parking na mnakubali kadi ya benki?", ["Kuna parking", "mnakubali kadi ya benki"]),
    # "na" between nouns, or before a noun that opens like a verb, joins no questions
    ("Chai na mkate ni bei gani?", ["Chai na mkate ni bei gani"]),
    ("Naweza kuongea na mtaalamu kwa simu kwanza?", ["Naweza kuongea na mtaalamu kwa simu kwanza"]),
])
def test_swahili_na_before_a_second_question_parts_the_message(message, pieces):
    assert question_pieces(message, join_elliptical=False) == pieces


def test_what_a_customer_tells_before_asking_is_context_not_a_question_part():
    assert question_pieces("The matatu is stuck in traffic. Will I lose my slot?") == ["Will I lose my slot"]
    assert question_pieces("I hate crowds. When can I come in?") == ["When can I come in"]
    # a sentence that opens like a question is one, whatever ends it; with no question mark nothing is told
    assert question_pieces("Where are you. Do you have parking?") == ["Where are you", "Do you have parking"]
    assert question_pieces("Where are you located. We need parking.") == ["Where are you located", "We need parking."]


@pytest.fixture
def swahili_parking(spa):
    version = SnippetVersion.objects.get(key="parking", is_active=True)
    version.translations = {"sw": {"title": "Maegesho ya magari",
                                   "body": "Maegesho ni bure kwa wageni katika ghorofa ya chini ya Mirage Tower; "
                                           "mwambie mlinzi kwamba unakuja spa.\nKeywords: maegesho, gari"}}
    version.save(update_fields=["translations"])
    return version


def test_a_swahili_customer_gets_the_owners_swahili_version_with_its_own_citation(chat, swahili_parking):
    body = chat(message="Kuna parking ya gari?", language="sw").json()
    assert body["refusal_reason"] is None
    assert body["answer"] == ("Hiki ndicho nilichopata: Maegesho ni bure kwa wageni katika ghorofa ya chini ya "
                              "Mirage Tower; mwambie mlinzi kwamba unakuja spa. [1]")
    [citation] = body["citations"]
    assert (citation["key"], citation["version"], citation["title"], citation["language"]) == (
        "parking", 1, "Maegesho ya magari", "sw")
    assert "Keywords" not in citation["excerpt"]


def test_an_english_customer_still_gets_the_text_as_written(chat, swahili_parking):
    body = chat(message="Is there parking?", language="en").json()
    assert body["answer"].startswith("Here is what I found: Free parking for guests is available in the basement")
    assert [(c["key"], c["title"], c["language"]) for c in body["citations"]] == [("parking", "Parking", "")]


def test_the_gap_digest_lists_snippets_swahili_customers_reached_without_a_swahili_version(chat, swahili_parking):
    chat(message="Kuna parking ya gari?", language="sw")  # answered from the Swahili version: not listed
    chat(message="Nilipe aje? Mnakubali M-Pesa?", language="sw")
    chat(message="Nilipe kwa M-Pesa au kadi?", language="sw")
    chat(message="Can I pay with M-Pesa?", language="en")  # an English turn does not count
    missing = snippets_missing_language_version(language="sw")
    assert [(row.key, row.title, row.turns) for row in missing] == [("payment_methods", "Ways to pay", 2)]


def test_the_gap_page_shows_the_snippets_without_a_swahili_version(chat, swahili_parking, tenant_client):
    from django.contrib.auth import get_user_model

    chat(message="Nilipe kwa M-Pesa au kadi?", language="sw")
    chat(message="Kuna parking ya gari?", language="sw")
    tenant_client.force_login(get_user_model().objects.create_user(username="owner", is_staff=True))
    html = tenant_client.get("/telemetry/gaps/").content.decode()
    assert 'id="swahili-missing"' in html and "<code>payment_methods</code>" in html
    assert "<code>parking</code>" not in html  # it has a Swahili version


CARD = ("licence_card", "After you pass", "You pay the licence fee on eCitizen and choose the NTSA office where you "
        "will collect the card. The card usually takes 2 to 6 weeks to be ready.")


def test_a_question_asking_how_long_quotes_the_sentence_that_gives_a_duration(monkeypatch):
    from conversations.providers import extractive

    # The first sentence shares more words ("card", "collect"); the second holds the duration asked for.
    question = "Once I pass, how long before I can collect the card?"
    assert "2 to 6 weeks" in _answer(question, CARD).text
    monkeypatch.setattr(extractive, "TYPE_BONUS", 0.0)
    assert "2 to 6 weeks" in _answer(question, CARD).text  # the sentence giving the kind asked is still added
    monkeypatch.setattr(extractive, "_with_the_kind_asked", lambda picked, *args, **kwargs: picked)
    assert "2 to 6 weeks" not in _answer(question, CARD).text


def test_the_answer_type_steers_english_questions_only():
    # A Swahili reading asks false types ("kila mahali" is everywhere, not a place): no type steers it.
    from conversations.providers.extractive import _typed_asked

    assert _typed_asked("How long does the card take?") == {"duration"}
    assert _typed_asked("What time do you open?") == {"time"}
    assert _typed_asked("Where do I park?") == frozenset()  # a place is too rough a pattern to steer sentences
    assert _typed_asked("Kadi inachukua muda gani?") == frozenset()


WHITENING = ("whitening", "Teeth whitening", "Whitening is done in the chair in one visit of a bit over an hour. "
             "Your teeth may be sensitive for a day or two. We don't do it during pregnancy.")


def test_a_word_and_its_other_form_meet_when_they_open_alike():
    from knowledge.retrieval.sentences import terms_match

    assert terms_match("pregnant", "pregnancy") and terms_match("prescrib", "prescription")
    assert not terms_match("internet", "interval")  # six letters alike are not enough
    # "pregnant" is the question's rarest word: the sentence about pregnancy answers it
    assert "during pregnancy" in _answer("Can I whiten while pregnant?", WHITENING).text


def test_a_word_written_whole_meets_the_owners_hyphenated_one():
    payment = ("payment_methods", "Ways to pay", "We don't have a card machine, so we can't take Visa or Mastercard. "
               "You can pay by M-Pesa to our Buy Goods Till 5523108 or in cash.")
    answer = _answer("do you take mpesa", payment)
    assert "Till 5523108" in answer.text


def test_where_is_your_shop_gets_the_address_not_the_sentence_naming_the_shop():
    location = ("location", "Where to find us", "Our Google Maps pin is \"Uzima Pharmacy Kisumu\". We are on the "
                "ground floor of Lakeview House on Oginga Odinga Street, between Equity Bank and the Post Office.")
    answer = _answer("Where is your pharmacy?", location)
    assert answer.text.startswith("Here is what I found: We are on the ground floor of Lakeview House")


HEATER = ("solar_heater_service", "Solar water heater service",
          "We service the common solar water heaters, both flat-plate and evacuated-tube types. A Solar Water Heater "
          "Service includes draining and flushing sediment from the tank and checking every tube and joint for leaks. "
          "We recommend a service every 12 months, or every 6 months if you use borehole water.")


def test_how_often_is_answered_with_the_sentence_that_gives_a_frequency(monkeypatch):
    from conversations.providers import extractive

    # "service", "solar", "water", "heater" tie the first two sentences; the third says how often.
    answer = _answer("How often should a solar water heater be serviced?", HEATER).text
    assert "every 12 months" in answer and "flat-plate" in answer
    monkeypatch.setattr(extractive, "_with_the_kind_asked", lambda picked, *args, **kwargs: picked)
    assert "every 12 months" not in _answer("How often should a solar water heater be serviced?", HEATER).text


def test_a_price_in_a_sentence_sharing_no_word_with_the_question_is_not_added():
    tank = ("tank_cleaning", "Water tank cleaning", "We clean plastic and concrete water tanks. Our van costs KES 500 "
            "a day to park in town.")
    answer = _answer("How much is tank cleaning?", tank).text
    assert "KES 500" not in answer


@pytest.mark.parametrize("text, gives", [
    ("Change your wiper blades every 6 to 12 months.", True), ("We recommend cleaning once a year.", True),
    ("Adult dogs should be dewormed every 3 months.", True), ("Tanks are cleaned quarterly.", True),
    ("We check every tube and joint for leaks.", False), ("Retwisting more often can thin the roots.", False),
])
def test_a_frequency_is_read_as_owners_write_it(text, gives):
    from knowledge.retrieval.answer_types import asks_how_often, gives_type

    assert gives_type(text, "frequency") is gives
    assert asks_how_often("How often should I deworm my dog?") and asks_how_often("how many times a week do you open")
    assert not asks_how_often("How many times can I re-wash it?")
