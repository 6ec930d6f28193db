"""Swahili and mixed questions against an English KB, and the calibrated refusal decision."""
from __future__ import annotations

import pytest
from retrieval_kb import embedder_down, kb, mode  # noqa: F401 (fixtures)

from knowledge.retrieval import fetch_snippets
from knowledge.retrieval.language import detect_language, expand_swahili, swahili_numerals
from knowledge.retrieval.relevance import MODEL_PATH, load_model


@pytest.mark.parametrize("text, language", [
    ("Is there parking at the spa?", "en"), ("Kuna mahali pa kuegesha gari?", "sw"),
    ("Mnauza vocha za zawadi?", "sw"), ("Jumapili mnafungua saa ngapi?", "sw"),
    ("Sasa msee, mnachukua walk-in ama lazima ubook kwanza?", "sw"), ("Do you sell gift vouchers?", "en"),
    # A name or WhatsApp spelling sways the detector; the sentence's function words decide.
    ("Are you open on Mashujaa Day?", "en"), ("do u wrk in juja", "en"), ("cn i pay wit mpesa paybil", "en"),
    ("Who owns Jua Bora Solar?", "en"), ("Bei ya pedicure ni ngapi?", "sw"),
    ("Nalipa aje kwa Paybill? Account number ni gani?", "sw"),
])
def test_it_detects_english_and_swahili(text, language):
    assert detect_language(text).language == language


def test_the_glossary_translates_words_and_verb_stems_and_keeps_loanwords():
    expansion = expand_swahili("Nikichelewa dakika kumi, mtaniruhusu kwa massage?")
    assert "late" in expansion.text and "minutes" in expansion.text and "massage" in expansion.text
    assert "park" in expand_swahili("Kuna mahali pa kuegesha gari?").text
    assert "parcel" in expand_swahili("Bei ya kutuma mzigo wa kilo 2 ni ngapi?").text
    assert "private" in expand_swahili("na boti binafsi je?").text
    assert "instalments" in expand_swahili("Naweza kulipa karo kwa awamu?").text
    assert "fees" in expand_swahili("Naweza kulipa karo kwa awamu?").text
    assert "cabinet" in expand_swahili("Mnatengeneza kabati za jikoni?").text
    assert "guitar" in expand_swahili("Bei ya gitaa ya watoto ni ngapi?").text
    assert "gas" in expand_swahili("bei ya gesi ya kilo sita").text
    assert "cylinder" in expand_swahili("Naweza kubadilisha mtungi wa Total?").text
    assert "term" in expand_swahili("Muhula wa tatu unaanza lini?").text
    assert "adults" in expand_swahili("na za watu wazima je?").text
    # the business bringing something delivers it; the customer bringing it does not
    assert "deliver" in expand_swahili("Mnaleta maji hadi Njoro?").text
    assert "deliver" not in expand_swahili("Nikileta spare yangu mtaniwekea?").text


@pytest.mark.parametrize("text, kept, not_kept", [
    ("Bei ya kuprint ni ngapi?", "print", "kuprint"),  # Sheng: ku- before an English verb
    ("Mnaweza kulaminate cheti?", "laminate", "kulaminate"),
    ("Nataka kudeliver mzigo", "deliver", "kudeliver"),
])
def test_a_sheng_infinitive_of_an_english_verb_is_read_as_the_verb(text, kept, not_kept):
    expansion = expand_swahili(text)
    assert kept in expansion.kept and not_kept not in expansion.kept + expansion.unknown


@pytest.mark.parametrize("text, place", [
    ("Mnafanya kazi hadi Gatundu?", "gatundu"), ("mnaleta mzigo mpaka likoni?", "likoni"),
    ("Mnafika Kitengela?", "kitengela"),
])
def test_the_place_a_customer_asks_to_be_served_is_kept(text, place):
    assert place in expand_swahili(text).text.split()


def test_the_town_a_customer_is_in_is_not_kept_as_the_question():
    assert "nakuru" not in expand_swahili("Kliniki yenu iko wapi hapa Nakuru?").text.split()
    # after "-fika" only a name is a place: "will the lorry really get there?"
    assert "kweli" not in expand_swahili("Barabara imejaa matope, lorry itafika kweli?").text.split()


def test_warranty_is_read_in_dhamana():
    assert "warranty" in expand_swahili("Dhamana ya betri ni miaka mingapi?").text.split()


def test_a_swahili_infinitive_is_not_read_as_english():
    expansion = expand_swahili("Mnaweza kusuka nywele na kupaka rangi?")
    assert not {"suka", "paka"} & set(expansion.kept)


@pytest.mark.parametrize("text, means, not_means", [
    ("Mnaleta saruji hadi Langas? Ni pesa ngapi?", "price", "payment"),  # "how much money", not money alone
    ("Nawezaje kuweka nafasi ya kesho?", "book", "keep"),  # the phrase, its first word with a prefix
    ("Kuna darasa la akina mama?", "women", "mother"),
])
def test_a_glossary_phrase_is_read_whole_and_its_words_not_again(text, means, not_means):
    words = expand_swahili(text).text.split()
    assert means in words and not_means not in words


@pytest.mark.django_db
@pytest.mark.parametrize("question, expected", [
    ("Kuna mahali pa kuegesha gari?", "parking"),
    ("Mnauza vocha za zawadi?", "gift_vouchers"),
    ("Nataka kughairi miadi yangu ya kesho", "cancellation"),
    ("Kuna parking na mko wapi?", "parking"),
])
def test_swahili_questions_find_english_snippets(kb, mode, question, expected):
    kb.spa()
    mode("hybrid")
    result = fetch_snippets("other", query=question, channel="chat")
    assert result.language == "sw"
    assert result.primary[0].key == expected


def test_the_refusal_model_is_the_fitted_file():
    model = load_model()
    assert MODEL_PATH.exists() and model["source"].startswith("bench/fit_refusal.py")
    assert len(model["features"]) == len(model["coefficients"]) == len(model["means"]) == len(model["scales"])


@pytest.mark.django_db
def test_an_off_topic_question_is_refused_and_a_covered_one_answered(kb, mode):
    kb.spa()
    mode("hybrid")
    answered = fetch_snippets("other", query="Is there parking at the spa?", channel="chat")
    assert answered.refusal_reason is None and answered.relevance >= load_model()["threshold"]
    refused = fetch_snippets("other", query="What is the capital city of Mongolia?", channel="chat")
    assert refused.refusal_reason == "no_relevant_context"
    assert refused.relevance < load_model()["threshold"]


@pytest.mark.parametrize("text, expected", [
    ("na ya vipande vitatu je?", "na ya vipande 3 je"),
    ("tanki la lita elfu kumi", "tanki la lita 10000"),
    ("mia tano na hamsini", "550"),  # 500 + 50
    ("kumi na tano", "15"),
    ("elfu kumi na tano", "15000"),  # (10 + 5) thousand
    ("elfu mbili mia tano", "2500"),
    ("elfu moja", "1000"),
    ("nguo moja moja", "nguo moja moja"),  # "one by one", not a quantity
    ("watoto wawili", "watoto 2"),
    ("wardrobe ya milango miwili", "wardrobe ya milango 2"),  # the m-mi class
    ("mayai mawili", "mayai 2"),  # the ji-ma class
    ("nimekwama kwa matatu", "nimekwama kwa matatu"),  # the minibus, not three
])
def test_swahili_numbers_are_read_as_figures(text, expected):
    assert swahili_numerals(text) == expected


def test_an_english_question_with_a_swahili_looking_place_name_is_embedded_whole(kb, mode):
    from knowledge.retrieval.pipeline import prepare_query

    prepared = prepare_query("Where is your salon in Nakuru?")
    # The detector hears some Swahili in "Nakuru"; the sentence is still what the vector search reads.
    assert prepared.language.language == "en" and prepared.language.mixed
    assert prepared.embedding_text.startswith("Where is your salon in Nakuru?")
    mode("hybrid")
    kb(key="location", title="Where to find us", body="We are in Nakuru town, on the first floor of Rift Valley "
                                                      "Arcade, Kenyatta Avenue, opposite the Post Office.")
    kb(key="ladies", title="Ladies' hair", body="For ladies we do wash and blow-dry, relaxers and box braids at "
                                                "the salon.")
    result = fetch_snippets("other", query="Where is your salon in Nakuru?", channel="chat")
    assert result.snippets[0].key == "location"


@pytest.mark.django_db
@pytest.mark.parametrize("run_mode", ["hybrid", "inline"])
def test_a_swahili_question_is_also_compared_as_written_with_the_owners_swahili_snippets(kb, mode, run_mode):
    mode(run_mode)
    kb(key="wazee", title="Punguzo kwa wazee",
       body="Wazee wenye miaka 65 na zaidi hulipa nusu bei siku za Jumanne na Jumatano; lete kitambulisho chako.")
    kb(key="students", title="Student discount",
       body="Students get 10% off any treatment from Monday to Thursday with a valid student ID.")
    kb(key="home_visits", title="Home visits",
       body="We visit older clients at home across Nakuru town for a call-out fee of KES 500.")
    kb(key="payments", title="Payment methods", body="We accept M-Pesa, cash and Visa or Mastercard cards.")
    result = fetch_snippets("other", query="Wazee wanapata punguzo siku gani?", channel="chat")
    assert result.language == "sw"
    assert result.primary[0].key == "wazee"
    rows = {row["key"]: row for row in result.debug["fusion"]}
    # Only the Swahili snippet is read against the question as written; the English ones keep the glossary's reading.
    assert rows["wazee"]["native_similarity"] > rows["wazee"]["similarity"]
    assert rows["students"]["native_similarity"] is None


def test_native_similarity_counts_less_an_offset_and_never_lowers_the_english_reading():
    from knowledge.retrieval.candidates import Candidate
    from knowledge.retrieval.fusion import NATIVE_OFFSET, meaning

    candidate = Candidate(id=1, key="k", version=1, title="t", body="b", category="", status="accepted",
                          token_count=1, similarity=0.30, title_similarity=0.40)
    assert meaning(candidate) == (0.30, 0.40)
    candidate.native_similarity, candidate.native_title_similarity = 0.70, 0.45
    assert meaning(candidate) == (pytest.approx(0.70 - NATIVE_OFFSET), 0.40)


def test_an_english_reading_counts_less_its_own_offset_and_the_best_view_wins():
    from knowledge.retrieval.candidates import Candidate
    from knowledge.retrieval.fusion import NATIVE_OFFSET, READING_OFFSET, meaning

    candidate = Candidate(id=1, key="k", version=1, title="t", body="b", category="", status="accepted",
                          token_count=1, similarity=0.20, title_similarity=0.25,
                          native_similarity=0.50, reading_similarity=0.55, reading_title_similarity=0.20)
    assert meaning(candidate) == (pytest.approx(max(0.50 - NATIVE_OFFSET, 0.55 - READING_OFFSET)), 0.25)


@pytest.mark.django_db
@pytest.mark.parametrize("run_mode", ["hybrid", "inline"])
@pytest.mark.parametrize("question", ["Is there a class just for women?", "Kuna darasa la wanawake pekee?"])
def test_an_owners_swahili_only_snippet_is_read_in_english_for_either_language(kb, mode, run_mode, question):
    mode(run_mode)
    kb(key="wanawake", title="Darasa la wanawake pekee",
       body="Kila Jumanne na Alhamisi saa kumi na mbili jioni kuna darasa la mazoezi kwa wanawake pekee, "
            "na mwalimu wa kike.")
    kb(key="guests", title="Bringing a guest", body="Members may bring one guest a month for KES 500; the guest "
                                                   "signs the waiver at reception.")
    kb(key="lockers", title="Lockers and showers", body="Lockers are free; bring your own padlock. Hot showers "
                                                        "are in both changing rooms.")
    kb(key="pt", title="Personal training", body="A personal trainer plans your workouts and checks your form, "
                                                 "one hour a session.")
    result = fetch_snippets("other", query=question, channel="chat")
    rows = {row["key"]: row for row in result.debug["fusion"]}
    assert rows["wanawake"]["reading_similarity"] > rows["wanawake"]["similarity"]
    assert rows["guests"]["reading_similarity"] is None
    assert result.primary[0].key == "wanawake"


@pytest.mark.django_db
def test_a_failed_reading_embedding_leaves_the_swahili_snippet_its_stored_vector(kb, mode, monkeypatch):
    from knowledge.retrieval import pipeline

    monkeypatch.setattr(pipeline, "embed_cached", embedder_down)
    mode("hybrid")
    kb(key="wanawake", title="Darasa la wanawake pekee", body="Kuna darasa la mazoezi kwa wanawake pekee.")
    kb(key="pt", title="Personal training", body="A personal trainer plans your workouts, one hour a session.")
    result = fetch_snippets("other", query="Is there a class just for women?", channel="chat")
    rows = {row["key"]: row for row in result.debug["fusion"]}
    assert set(rows) == {"wanawake", "pt"}
    assert rows["wanawake"]["reading_similarity"] is None


def test_english_whatsapp_shorthand_is_read_written_out_and_swahili_is_left_alone():
    from knowledge.retrieval.pipeline import prepare_query

    prepared = prepare_query("do u pik up frm Lavington?")
    assert prepared.text == "do you pick up from Lavington?"
    assert prepared.embedding_text == prepared.text and "pick" in prepared.english_words
    swahili = prepare_query("Je, u mzima? Mnafungua saa ngapi?")
    assert swahili.language.language == "sw" and swahili.text == "Je, u mzima? Mnafungua saa ngapi?"
    # "4" and "2" are words before a determiner or pronoun, numbers before anything else
    assert prepare_query("hw much 4 a full valet").text == "how much for a full valet"
    assert prepare_query("cn u come 2 my house").text == "can you come to my house"
    assert prepare_query("how much r 4 cupcakes and a 2 kg cake").text == "how much are 4 cupcakes and a 2 kg cake"
    # ...and right after "how much" unless a unit follows
    assert prepare_query("hw much 4 zip").text == "how much for zip"
    assert prepare_query("how much 2 hem jeans").text == "how much to hem jeans"
    assert prepare_query("how much 2 kg of flour").text == "how much 2 kg of flour"
    assert prepare_query("r u open rn").text == "are you open right now"
    assert prepare_query("how mch is a nite guard").text == "how much is a night guard"
    assert prepare_query("wer r u lctd").text == "where are you located"
    assert prepare_query("wat is incl in full wash").text == "what is include in full wash"


def test_a_question_asking_only_where_the_business_is_is_embedded_with_the_place_words():
    from knowledge.retrieval.pipeline import _PLACE_READING, prepare_query

    for question in ("Where are you located?", "wer r u located", "wer r u lctd", "Mko wapi?"):
        assert prepare_query(question).embedding_text.endswith(_PLACE_READING), question
    # a place question about something is embedded as asked
    assert prepare_query("Where can I park?").embedding_text == "Where can I park?"
    assert prepare_query("Do you have parking?").embedding_text == "Do you have parking?"

