"""Misspelt words are read as the knowledge spells them, from the tenant's own words, kept until it changes."""
from __future__ import annotations

import pytest
from retrieval_kb import kb, mode  # noqa: F401 (fixtures)

from knowledge.retrieval import fetch_snippets
from knowledge.retrieval.spelling import corrections

PARKING = dict(key="parking", title="Parking", body="Free customer parking behind the building; the gate is on "
                                                    "Ngong Road.")
FEES = dict(key="fees", title="Paying in instalments", body="You can pay the course fee in three instalments.")


def test_a_word_the_knowledge_never_uses_gets_the_one_it_does(kb):
    kb(**PARKING)
    kb(**FEES)
    assert corrections(["parkin", "instalmnts", "pay", "the"]) == ["parking", "instalments"]
    # words the knowledge uses, short words and words close to nothing it says are left alone
    assert corrections(["parking", "ther", "sauna", "course"]) == []


def test_a_word_written_without_the_knowledges_hyphen_or_with_one_gets_the_knowledges_form(kb):
    kb(key="lounge", title="Waiting lounge", body="Free Wi-Fi and phone charging in the lounge; we accept M-Pesa.")
    kb(key="pickup", title="Collection", body="Pickup is free within town.")
    assert corrections(["wifi", "mpesa"]) == ["wi-fi", "m-pesa"]
    assert corrections(["pick-up"]) == ["pickup"]
    assert corrections(["wi-fi", "lounge", "ok-ok"]) == []  # the knowledge's own form, or a form it never uses


def test_the_vocabulary_follows_the_knowledge_as_it_changes(kb):
    kb(**PARKING)
    assert corrections(["saunna"]) == []
    kb(key="sauna", title="Sauna", body="The sauna is open to members after 5pm.")
    assert corrections(["saunna"]) == ["sauna"]


LOCATION = dict(key="location", title="Where we are", body="We are on the first floor of Prestige Plaza, opposite "
                                                            "the shop that sells phones.")
LOUNGE = dict(key="lounge", title="Waiting lounge", body="While you wait, sit in our shaded lounge with a TV, free "
                                                         "Wi-Fi and phone charging points.")


@pytest.mark.parametrize("extra, question, read, found", [
    (LOCATION, "is ther parkin near ur shop", ["parking"], "parking"),  # misspelt
    (LOUNGE, "Is there wifi while I wait?", ["wi-fi"], "lounge"),  # without the knowledge's hyphen
])
def test_a_question_spelt_unlike_the_knowledge_finds_the_snippet_and_says_what_it_read(kb, mode, extra, question,
                                                                                       read, found):
    mode("hybrid")
    kb(**PARKING)
    kb(**FEES)
    kb(**extra)
    result = fetch_snippets("other", query=question, channel="chat")
    assert result.debug["query"]["spelling"] == read
    assert result.query == question  # the customer's words are what the log keeps
    assert result.refusal_reason is None and result.snippets[0].key == found


def test_in_a_mixed_question_only_the_untranslated_words_are_checked(kb, mode):
    from knowledge.retrieval.language import detect_language

    mode("hybrid")
    kb(key="trainers", title="Personal trainers", body="Book a personal trainer at reception or on WhatsApp.")
    question = "hw do i book a personal trainr"
    assert detect_language(question).mixed  # read through the glossary path
    result = fetch_snippets("other", query=question, channel="chat")
    assert result.debug["query"]["spelling"] == ["trainer"]
    swahili = fetch_snippets("other", query="Mnafungua saa ngapi kesho?", channel="chat")
    assert swahili.debug["query"]["spelling"] == []  # translated words are not the knowledge's spelling


def test_the_process_keeps_a_bounded_number_of_vocabularies(kb, monkeypatch):
    from knowledge.retrieval import spelling

    kb(**PARKING)
    empty = spelling.Vocabulary((0, None), {}, frozenset(), {}, frozenset())
    monkeypatch.setattr(spelling, "_vocabularies", spelling.OrderedDict(
        (f"other_{n}", empty) for n in range(spelling.CACHED_TENANTS)))
    assert corrections(["parkin"]) == ["parking"]
    assert len(spelling._vocabularies) == spelling.CACHED_TENANTS
    assert "other_0" not in spelling._vocabularies  # the least recently asked one went


def test_the_words_most_of_the_knowledge_uses_are_the_businesss_own(kb):
    from knowledge.retrieval.spelling import common_words

    kb(**PARKING)
    kb(**FEES)
    kb(key="intake", title="Intakes", body="A new course starts every month.")
    assert common_words() == frozenset()  # two of three snippets say "course": too few snippets to tell
    kb(key="exams", title="Exams", body="Every course ends with a practical exam.")
    kb(key="map", title="Directions", body="Walk past the bank to the blue gate.")
    kb(key="wifi", title="Wi-Fi", body="Free Wi-Fi in every classroom.")
    assert "course" in common_words()  # three of six
    assert "gate" not in common_words() and "month" not in common_words()  # two of six, one: not more than a third


def test_the_misspelt_word_is_read_as_the_knowledges_word_not_beside_it(kb):
    from knowledge.retrieval.pipeline import prepare_query, with_spelling
    from knowledge.retrieval.spelling import is_a_word

    kb(key="curtains", title="Curtains", body="Curtains are taken down, washed and rehung within 3 working days.")
    prepared = with_spelling(prepare_query("do u clean curtans?"))
    # Left in, "curtans" is a word of the question no snippet holds: the refusal decision read it as unanswered.
    assert prepared.text == "do you clean curtains?"
    assert "curtans" not in prepared.query.or_text and prepared.spelling == ("curtains",)
    kb(key="brands", title="Brands", body="We stock the brands our stylists trust.")
    # A real word the knowledge does not use is the customer's word: kept, with the knowledge's near word beside it.
    assert is_a_word("braids") and not is_a_word("curtans")
    assert with_spelling(prepare_query("Do you do braids?")).text == "Do you do braids? brands"
