"""Facts first for facts: a price, duration or hours question naming a service is answered from exactly its rows."""
from __future__ import annotations

from decimal import Decimal

import pytest

from conversations import intents
from conversations.facts import (ServiceFact, asks_duration, asks_if_sold, asks_price, described_rows, format_money,
                                 match_services, named_services, row_by_meaning, row_the_knowledge_names,
                                 rows_say_if_sold, services_asked)
from conversations.models import HandoffRequest
from knowledge import embeddings
from knowledge.models import Service
from knowledge.services import service_upsert


def _fact(name: str, price: str, minutes: int | None = 60, description: str = "") -> ServiceFact:
    return ServiceFact(name=name, description=description, duration_minutes=minutes, price=price, currency="KES",
                       price_text=format_money(price, "KES"))


SALON = [
    _fact("Box Braids (Medium, Waist Length)", "4500", 240),
    _fact("Knotless Braids", "6000", 300),
    _fact("Cornrows", "1500", 90),
    _fact("Spa Manicure", "1200", 45),
    _fact("Wash & Fold (per kg)", "150", 1440),
    _fact("Express Wash & Fold (per kg)", "250", 420),
    _fact("Wash & Iron (per kg)", "250", 1440),
    _fact("iPhone Screen Replacement (iPhone X to 11)", "6500", 90),
    _fact("iPhone Screen Replacement (iPhone 12 to 15)", "13500", 120),
    _fact("Spay (Dog under 20 kg)", "9500", 120),
    _fact("Spay (Dog over 20 kg)", "13000", 150),
    _fact("Tempered Glass Screen Protector", "300", None),
    _fact("Privacy Screen Protector", "800", None),
    _fact("Power Bank (10,000 mAh)", "2200", None, "Charges a phone three times."),
    _fact("Hybrid Inverter 3 kVA", "65000", None),
    _fact("Hybrid Inverter 5 kVA", "98000", None),
    _fact("Water Tank Cleaning (up to 5,000 Litres)", "5500", 180),
    _fact("Water Tank Cleaning (5,001 to 10,000 Litres)", "8000", 240),
    _fact("Suit Dry Cleaning (2-piece)", "700", 1440),
    _fact("Suit Dry Cleaning (3-piece)", "900", 1440),
    _fact("Generator Installation & Commissioning (up to 10 kVA)", "8500", 240),
    _fact("Curtain Cleaning (per kg)", "220", 1440),
    _fact("Reusable Laundry Bag (Large)", "350", None),
    _fact("Socket or Switch Replacement", "800", 30),
    _fact("Iron Sheet Box Profile Gauge 30 (3 m)", "1150", None),
    _fact("Ridge Cap Gauge 30 (2 m)", "550", None),
    _fact("Changeover Switch Installation", "4500", 120, "A changeover switch fitted; switch charged separately."),
    _fact("Security Light Installation", "1800", 60),
    _fact("Electrical Inspection & Test Certificate", "6500", 120, "Full inspection and testing of an installation."),
    _fact("Lamination A4", "50", 5),
    _fact("Lamination A3", "100", 5),
    _fact("Spiral Binding (up to 100 pages)", "150", 15),
    _fact("KRA PIN Registration", "300", 20),
    _fact("Trouser Hemming", "300", 30),
    _fact("Curtain Sewing (per panel)", "600", None),
    _fact("Button Replacement", "100", 15, "Sew on up to 4 buttons; buttons included."),
    _fact("Dental X-ray (single)", "700", 10),
    _fact("Malaria Rapid Test", "300", 20),
    _fact("2-Door Wardrobe (cypress)", "26000", None),
    _fact("3-Door Wardrobe with Mirror (MDF)", "38000", None),
]


@pytest.mark.parametrize("question, expected", [
    ("How much are box braids?", ["Box Braids (Medium, Waist Length)"]),  # partial name, plural
    ("bei ya box braids?", ["Box Braids (Medium, Waist Length)"]),  # Swahili
    ("how much for knotles braids", ["Knotless Braids"]),  # typo
    ("How much is an iPhone 12 screen replacement?", ["iPhone Screen Replacement (iPhone 12 to 15)"]),
    ("iphone 13 screen price", ["iPhone Screen Replacement (iPhone 12 to 15)"]),  # inside the owner's range
    ("How much does it cost to spay a 30 kg dog?", ["Spay (Dog over 20 kg)"]),
    # a strict bound asks past it: "more than 5,000 litres" is the 5,001-10,000 row, "under 5,001" the other
    ("Tank cleaning for more than 5,000 litres?", ["Water Tank Cleaning (5,001 to 10,000 Litres)"]),
    ("Tank cleaning for under 5,001 litres?", ["Water Tank Cleaning (up to 5,000 Litres)"]),
    ("How much to spay a dog over 20 kg?", ["Spay (Dog over 20 kg)"]),
    ("How much is wash and fold per kilo?", ["Wash & Fold (per kg)"]),  # the plain one, units folded
    ("How much is the 5kva inverter?", ["Hybrid Inverter 5 kVA"]),
    ("cost to laminate an A3 poster", ["Lamination A3"]),  # a verb of the noun; a paper size, no quantity
    ("How long does a KRA PIN registration take?", ["KRA PIN Registration"]),
    ("How much are your inverters?", ["Hybrid Inverter 3 kVA", "Hybrid Inverter 5 kVA"]),
    ("Bei ya screen protector ni ngapi?", ["Tempered Glass Screen Protector", "Privacy Screen Protector"]),
    # Swahili numbers read as figures, inside the owner's ranges
    ("Bei ya kusafisha tanki la lita elfu kumi ni ngapi?", ["Water Tank Cleaning (5,001 to 10,000 Litres)"]),
    ("Bei ya kusafisha tanki la lita elfu tatu ni ngapi?", ["Water Tank Cleaning (up to 5,000 Litres)"]),
    ("Bei ya suti ya vipande vitatu ni ngapi?", ["Suit Dry Cleaning (3-piece)"]),
    ("Bei ya wardrobe ya milango miwili ni ngapi?", ["2-Door Wardrobe (cypress)"]),
    # another form of the same word: "install" for "Installation"
    ("How long does it take to install a generator?", ["Generator Installation & Commissioning (up to 10 kVA)"]),
    # a Swahili word is one word however many English readings it has: "kufua" (wash / laundry / clean)
    # with "pazia" (curtain) is the curtain row, not every washing row and the laundry bag too
    ("Bei ya kufua pazia ni ngapi kwa kilo?", ["Curtain Cleaning (per kg)"]),
    ("Bei ya kubadilisha soketi moja ni ngapi?", ["Socket or Switch Replacement"]),
    ("Bei ya bati gauge 30 ni ngapi?", ["Iron Sheet Box Profile Gauge 30 (3 m)"]),
    # a comparison names both rows; "difference" and "between" name neither
    ("What's the price difference between wash and iron and wash and fold?",
     ["Wash & Fold (per kg)", "Wash & Iron (per kg)"]),
    # a three-letter verb names its -ing row ("hem" ~ Hemming, "sew" ~ Sewing)
    ("How much to hem trousers?", ["Trouser Hemming"]),
    ("How much to sew curtains?", ["Curtain Sewing (per panel)"]),
    # the row whose name and description account for every word another accounts for, and more, wins
    ("how much to sew on buttons", ["Button Replacement"]),
    ("how much for an xray", ["Dental X-ray (single)"]),  # a hyphenated name written as one word
    ("Bei ya kipimo cha malaria ni ngapi?", ["Malaria Rapid Test"]),  # "kipimo" is a test as well as a measure
    # Sheng's infinitive of an English verb is the verb: "kulaminate" is laminate
    ("Bei ya kulaminate A3 ni ngapi?", ["Lamination A3"]),
    ("Bei ya kubind ni ngapi?", ["Spiral Binding (up to 100 pages)"]),
    # "new" says what state the customer wants it in, not which row
    ("How much is a new inverter?", ["Hybrid Inverter 3 kVA", "Hybrid Inverter 5 kVA"]),
])
def test_a_named_service_is_found_in_any_form(question, expected):
    assert named_services(question, SALON) == expected


MOVERS = [
    _fact("Bedsitter Move (within Nairobi)", "8500", 180),
    _fact("1-Bedroom Move (within Nairobi)", "15000", 240),
    _fact("2-Bedroom Move (within Nairobi)", "24000", 420),
    _fact("3-Bedroom Move (within Nairobi)", "35000", 540),
    _fact("Upcountry Move (per km outside Nairobi)", "180", None),
    _fact("Office Move (per workstation)", "2500", 30),
    _fact("Storage (per month, up to 2-bedroom load)", "7000", None),
    _fact("Storage (per month, 3-bedroom load)", "11000", None),
    _fact("Moving Box (medium)", "250", None),
]


@pytest.mark.parametrize("question, expected", [
    # "bedroom" is in five names and names none of them; with its number it names one
    ("How much to move a 2 bedroom?", ["2-Bedroom Move (within Nairobi)"]),
    ("How much is a two bedroom move?", ["2-Bedroom Move (within Nairobi)"]),
    # "1" falls inside storage's "up to 2", but the move row writes "1-Bedroom" as the question does
    ("How much to move a 1 bedroom?", ["1-Bedroom Move (within Nairobi)"]),
    ("How much for a 4 bedroom move?", []),  # no such row: a number alone names nothing
    ("Kuhamisha bedsitter ni bei gani?", ["Bedsitter Move (within Nairobi)"]),  # "hamisha" is move, not "isha"
])
def test_a_number_with_the_word_it_counts_names_the_row(question, expected):
    assert named_services(question, MOVERS) == expected


def test_a_follow_up_read_with_its_topic_names_the_new_numbered_row():
    from conversations.followups import narrow_to_message

    read = "how much for a 2 bedroom move?\nand a 3 bedroom?"
    named = match_services(read, MOVERS)
    assert "3-Bedroom Move (within Nairobi)" in named and "2-Bedroom Move (within Nairobi)" in named
    assert narrow_to_message(named, message="and a 3 bedroom?") == ["3-Bedroom Move (within Nairobi)"]


@pytest.mark.parametrize("question", [
    "How much is a gel manicure?",  # manicures are listed, gel ones are not
    "How much is a pedicure?",
    "What are your prices?",
    "How much is the deposit?",
    # a word or two each with three rows ("install", "charger" ~ "charged", "electric") is about none of them
    "Can you install a charger for an electric car at my home?",
])
def test_something_not_on_the_list_names_no_service(question):
    assert named_services(question, SALON) == []


CLEANERS = [
    _fact("Move-Out Cleaning (2 bedroom)", "9500", 420, "Top-to-bottom clean of an empty two-bedroom house."),
    _fact("Fumigation (bedsitter to 2 bedroom)", "4500", 90, "Bedbug and cockroach treatment."),
    _fact("Walk-in Shower Regrouting", "3500", 120),
    _fact("Standard Call-out", "1500", 60),
]


@pytest.mark.parametrize("question, expected", [
    ("How long do we have to stay out of the house?", []),  # "out" alone is no move-out clean
    ("Do I need to be in when you come?", []),
    ("How much is a move-out clean?", ["Move-Out Cleaning (2 bedroom)"]),
    ("how much for moveout cleaning", ["Move-Out Cleaning (2 bedroom)"]),
    ("How much to regrout a walk in shower?", ["Walk-in Shower Regrouting"]),
    ("How much is a call-out?", ["Standard Call-out"]), ("how much is your callout fee", ["Standard Call-out"]),
])
def test_a_hyphen_joined_particle_names_a_row_only_with_its_word(question, expected):
    assert named_services(question, CLEANERS) == expected


def test_a_glossary_readings_particle_names_nothing():
    # "inachukua" (it takes) reads "pick up": "up" is not the customer's word for "(up to 10 kVA)".
    assert match_services("inachukua muda gani?", SALON) == []


def test_a_mention_in_a_longer_message_still_finds_the_service_for_a_handoff():
    message = "I'd like to book a spa manicure for my sister on Saturday morning please"
    assert named_services(message, SALON) == []
    assert match_services(message, SALON) == ["Spa Manicure"]


TRADES = [
    _fact("Socket or Switch Replacement", "800", 30, "One faulty socket or switch replaced."),
    _fact("Consumer Unit Replacement", "18000", 240,
          "Old fuse box replaced with a modern consumer unit with circuit breakers."),
    _fact("Instant Shower Installation", "3500", 90, "An instant shower fitted to existing wiring."),
    _fact("Blocked Drain Clearing", "2500", 60, "Sink or shower drain unblocked."),
]


def test_a_row_named_only_in_the_customers_words_is_found_by_meaning():
    question = "How much to change an old fuse board?"
    assert match_services(question, TRADES) == []  # no name word in common
    assert row_by_meaning(question, TRADES) == ["Consumer Unit Replacement"]
    assert services_asked(question, TRADES) == ["Consumer Unit Replacement"]


@pytest.mark.parametrize("question", ["How much is ceramic coating?", "How much is it?", "What are your prices?"])
def test_meaning_names_no_row_for_something_not_offered_nothing_named_or_the_whole_list(question):
    assert row_by_meaning(question, TRADES) == []


def test_a_row_sharing_a_word_with_the_question_is_left_to_the_words(monkeypatch):
    def unused(*args, **kwargs):
        raise AssertionError("meaning is not consulted when a row shares a name word")

    monkeypatch.setattr(embeddings, "embed_query", unused)
    assert services_asked("How much is a gel manicure?", SALON) == []  # "Spa Manicure" is not a gel one


def test_no_row_by_meaning_when_the_embedder_is_down(monkeypatch):
    def down(*args, **kwargs):
        raise embeddings.EmbeddingError("model unavailable", retryable=True)

    monkeypatch.setattr(embeddings, "embed_query", down)
    assert row_by_meaning("How much to change an old fuse board?", TRADES) == []


def _ask_as(chat, monkeypatch, intent: str, message: str, **fields):
    # The offline classifier's verdict is forced so the test is about dispatch, not classification.
    monkeypatch.setattr(intents, "classify", lambda *args, **kwargs: intents.IntentResult(
        intent=intent, confidence=0.5, source="test"))
    response = chat(message=message, **fields)
    assert response.status_code == 200
    return response.json()


@pytest.mark.parametrize("intent", ["services", "other", "hours"])
def test_a_price_question_is_answered_from_exactly_the_matching_row_whatever_the_intent(chat, monkeypatch, intent):
    body = _ask_as(chat, monkeypatch, intent, "How much is the hot stone massage?")
    assert body["refusal_reason"] is None
    assert [c["key"] for c in body["citations"]] == ["facts:services"]
    assert body["answer"] == "Here are the details: Hot Stone Massage: KES 7,500, 90 minutes. [1]"


def test_a_length_asked_of_a_booking_is_answered_from_the_row_and_hands_nothing_off(chat, monkeypatch):
    body = _ask_as(chat, monkeypatch, "booking", "How long is a hot stone massage booking?")
    assert [c["key"] for c in body["citations"]] == ["facts:services"]
    assert "Hot Stone Massage: KES 7,500, 90 minutes" in body["answer"] and not HandoffRequest.objects.exists()


def test_a_cost_of_rescheduling_is_not_answered_with_the_services_price(chat, monkeypatch):
    body = _ask_as(chat, monkeypatch, "reschedule", "How much does it cost if I reschedule my hot stone massage?")
    assert "facts:services" not in [c["key"] for c in body["citations"]]
    assert not HandoffRequest.objects.exists()


def test_a_duration_question_in_swahili_gets_the_row_in_swahili(chat, monkeypatch):
    body = _ask_as(chat, monkeypatch, "other", "Deep tissue massage inachukua muda gani?", language="sw")
    assert [c["key"] for c in body["citations"]] == ["facts:services"]
    assert body["answer"] == "Haya ndiyo maelezo: Deep Tissue Massage: KES 5,500, dakika 60. [1]"


def test_a_service_that_does_not_exist_is_not_answered_with_the_price_list(chat, monkeypatch):
    body = _ask_as(chat, monkeypatch, "services", "How much is a gel manicure?")
    assert "facts:services" not in [c["key"] for c in body["citations"]]
    assert "KES" not in body["answer"]


def test_the_price_list_answers_a_question_about_prices_in_general(chat, monkeypatch):
    body = _ask_as(chat, monkeypatch, "services", "What are your prices?")
    assert [c["key"] for c in body["citations"]] == ["facts:services"]
    assert body["answer"].count("KES") == 6


@pytest.mark.parametrize("intent", ["services", "other"])
def test_a_row_named_in_other_words_is_found_through_the_snippet_that_names_it(chat, monkeypatch, intent):
    # "the facial for sensitive skin" is not the row's name; the snippet about it names "Signature Aura Facial".
    body = _ask_as(chat, monkeypatch, intent, "How much is the facial for sensitive skin?")
    assert [c["key"] for c in body["citations"]] == ["facts:services"]
    assert body["answer"] == "Here are the details: Signature Aura Facial: KES 6,000, 75 minutes. [1]"


def test_a_question_about_prices_in_general_keeps_the_list_when_a_snippet_names_one_row(chat, monkeypatch):
    from datetime import date

    from knowledge.services import snippet_version_create, snippet_versions_embed

    version = snippet_version_create(key="popular", title="Our prices", category="service", role="retrieved",
                                     body="Our prices suit every budget; the favourite is the Hot Stone Massage.",
                                     status="canonical", last_reviewed_at=date(2026, 5, 1),
                                     enforce_release_gate=False, queue_embedding=False)
    snippet_versions_embed(version_ids=[version.pk])
    body = _ask_as(chat, monkeypatch, "services", "What are your prices?")
    assert [c["key"] for c in body["citations"]] == ["facts:services"]
    assert body["answer"].count("KES") == 6


def test_the_knowledge_names_a_row_only_once_in_full_and_only_without_its_price():
    motorcycle = _fact("Motorcycle Course (Class A)", "8500", 60)
    rows = [motorcycle, _fact("Class B Course (Car)", "28000", 60)]
    course = "The Motorcycle Course (Class A) runs for 2 weeks, for boda boda riders."
    assert row_the_knowledge_names("How much is the motorbike course?", course, rows) == motorcycle.name
    # the snippet quotes the price itself: it answers, and may say more than the row
    assert row_the_knowledge_names("How much is the motorbike course?", course + " It costs KES 8,500.", rows) is None
    # not a price or duration question; no word shared with the name; two rows named
    assert row_the_knowledge_names("Do you teach motorbikes?", course, rows) is None
    assert row_the_knowledge_names("How much for a boda licence?", course, rows) is None
    both = course + " The Class B Course (Car) takes 6 weeks."
    assert row_the_knowledge_names("How much is the motorbike course?", both, rows) is None


def _feeding_bowl() -> None:
    """A product: a row of the services table with no duration."""
    Service.objects.create(name="Feeding Bowl (Stainless)", duration_minutes=None, price=Decimal("800"),
                           currency="KES", position=10)


def test_a_product_without_a_duration_is_priced_alone(chat, monkeypatch):
    _feeding_bowl()
    body = _ask_as(chat, monkeypatch, "other", "how much are your feeding bowls")
    assert body["answer"] == "Here are the details: Feeding Bowl (Stainless): KES 800. [1]"


def test_a_question_about_products_lists_the_products_alone(chat, monkeypatch):
    _feeding_bowl()
    body = _ask_as(chat, monkeypatch, "services", "What products do you sell?")
    assert [c["key"] for c in body["citations"]] == ["facts:services"]
    assert body["answer"] == "Here are the details: Feeding Bowl (Stainless): KES 800. [1]"


def test_a_question_about_products_is_not_answered_with_the_services(chat, monkeypatch):
    body = _ask_as(chat, monkeypatch, "services", "What products do you sell?")
    assert "facts:services" not in [c["key"] for c in body["citations"]]
    assert "KES" not in body["answer"]


def test_an_hours_question_naming_a_day_is_answered_from_the_hours_only(chat, monkeypatch):
    body = _ask_as(chat, monkeypatch, "hours", "What time do you open on Sunday?")
    assert [c["key"] for c in body["citations"]] == ["facts:hours"]
    assert "10:00-17:00" in body["answer"] and "Parking" not in body["answer"]


def test_a_swahili_hours_question_whose_words_read_as_hours_is_answered_from_the_hours(chat, monkeypatch):
    # "kazi" reads as "work" (an hours word) and "job": one word, so it names no topic beside the hours
    body = _ask_as(chat, monkeypatch, "hours", "Ofisi inafungwa saa ngapi siku za kazi?")
    assert [c["key"] for c in body["citations"]] == ["facts:hours"]


def test_a_question_that_asks_more_than_the_hours_gets_the_hours_and_the_knowledge(chat, monkeypatch):
    body = _ask_as(chat, monkeypatch, "hours", "What time do you open on Sunday, and is there parking?")
    keys = [c["key"] for c in body["citations"]]
    assert "facts:hours" in keys and "parking" in keys
    assert "10:00-17:00" in body["answer"] and "basement of Mirage Tower" in body["answer"]


def test_when_are_you_open_gets_today_and_the_week(chat, monkeypatch):
    body = _ask_as(chat, monkeypatch, "hours", "What are your opening hours?")
    assert [c["key"] for c in body["citations"]] == ["facts:hours"]
    assert "Monday to Thursday: 09:00-20:00." in body["answer"]
    assert "Friday: 09:00-21:00." in body["answer"] and "Sunday: 10:00-17:00." in body["answer"]


def test_an_hours_question_about_a_topic_is_answered_by_the_knowledge_not_todays_hours(chat, monkeypatch):
    body = _ask_as(chat, monkeypatch, "hours", "Are you open on public holidays?")
    assert [c["key"] for c in body["citations"]] == ["public_holiday_hours"]
    assert "10:00 to 16:00" in body["answer"]


@pytest.mark.parametrize("message, expected", [
    ("How long does a pedicure take?", True),
    ("Inachukua muda gani?", True),
    ("Nguo zangu zitakuwa tayari baada ya muda gani?", True),  # ready after how long: a length of time
    ("How long will the repair take?", True),
    ("Paka wangu apewe dawa ya minyoo kila baada ya muda gani?", False),  # how often, not how long
    ("How long can I keep them in?", False),  # how long braids may be worn
    ("How long do the braids last?", False),
    ("How long before I can wash my hair?", False),
    ("Lithium or gel, and how long is the warranty on each?", False),  # a warranty's length
])
def test_how_often_or_how_long_something_lasts_is_not_a_duration_question(message, expected):
    assert asks_duration(message) is expected


def test_a_duration_question_about_a_row_without_a_duration_is_answered_by_the_knowledge(chat, monkeypatch):
    from datetime import date

    from knowledge.services import snippet_version_create, snippet_versions_embed

    Service.objects.create(name="Bespoke Suit", duration_minutes=None, price=Decimal("18000"), currency="KES",
                           position=10)
    version = snippet_version_create(key="suit_times", title="How long a bespoke suit takes", category="service",
                                     role="retrieved", status="canonical", last_reviewed_at=date(2026, 5, 1),
                                     body="A bespoke suit takes 2 to 3 weeks, including two fittings.",
                                     enforce_release_gate=False, queue_embedding=False)
    snippet_versions_embed(version_ids=[version.pk])
    body = _ask_as(chat, monkeypatch, "other", "How long does a bespoke suit take?")
    assert [c["key"] for c in body["citations"]][0] == "suit_times"
    assert "2 to 3 weeks" in body["answer"]
    # its price is still the row's
    body = _ask_as(chat, monkeypatch, "other", "How much is a bespoke suit?")
    assert body["answer"] == "Here are the details: Bespoke Suit: KES 18,000. [1]"


SHOP = [
    _fact("Naivasha Honey (500 g jar)", "650", None, "Raw honey from beehives near Kongoni."),
    _fact("Flash Disk 16 GB", "700", None),
    _fact("A4 Printing Paper (ream of 500 sheets)", "650", None),
    _fact("Class B Full Course (Manual)", "18500", 60),
    _fact("Motorcycle Course (Class A)", "8500", 60),
    _fact("Changeover Switch Installation", "4500", 120),
    _fact("Changeover Switch 63A (Manual)", "4800", None),
    _fact("Boat Ride (1 hour)", "3500", 60, "Price per boat for up to 6 people, life jackets included."),
    _fact("Packed Lunch", "800", None, "Sandwiches, fruit and water; order by 20:00 the night before."),
]


@pytest.mark.parametrize("question, expected", [
    # asking whether there is one names the row the rest of the words name
    ("Do you sell honey?", ["Naivasha Honey (500 g jar)"]),
    ("Mnauza flash?", ["Flash Disk 16 GB"]),
    ("Do you stock A4 paper?", ["A4 Printing Paper (ream of 500 sheets)"]),
    # ... only when they name all of it: no Class D course, no brand of switch
    ("Do you offer Class D bus courses?", []),
    ("Which brand of changeover switch do you stock?", []),
])
def test_asking_whether_there_is_one_names_only_a_row_that_accounts_for_the_rest(question, expected):
    assert named_services(question, SHOP) == expected


def test_how_much_extra_asks_an_amount_and_names_no_extra_row():
    rows = [_fact("Extra Waiter (per event, up to 6 hours)", "2000", None),
            _fact("Plated Dinner (per head)", "2500", None)]
    assert named_services("how much extra is that?", rows) == []
    assert named_services("How much is an extra waiter?", rows) == [rows[0].name]


def test_how_a_thing_is_sold_names_no_row():
    # "per person" is how the buffet is sold too: the day package sold per person is not asked for
    rows = [_fact("Corporate Day Package (per person)", "3800", 480),
            _fact("Standard Buffet (per guest)", "2300", None), _fact("Premium Buffet (per guest)", "3200", None)]
    assert named_services("How much is the standard buffet per person?", rows) == [rows[1].name]


def test_a_tie_goes_to_the_row_that_is_the_thing_asked_about():
    rows = [_fact("Plastic Water Tank 5,000 L", "52000", None), _fact("Plastic Water Tank 10,000 L", "85000", None),
            _fact("Steel Tank Tower (3 m, for up to 5,000 L)", "68000", None),
            _fact("Rig Mobilisation and Demobilisation (within 40 km)", "80000", None)]
    assert named_services("how much for a 5000 litre tank", rows) == [rows[0].name]
    assert named_services("how much is a tower for a 5000 litre tank?", rows) == [rows[2].name]
    # the tie is ended only when the names say all the question does
    menus = [_fact("Menu Tasting Session (up to 3 people)", "3500", 90, "Taste up to 6 dishes and plan the menu."),
             _fact("Vegetarian Buffet (per head)", "1100", None, "Vegetable biryani, lentil curry, githeri."),
             _fact("Children's Menu (per child, 4 to 11 years)", "650", None, "Chips, chicken, vegetable rice."),
             *SALON]
    assert menus[0].name in named_services("do you have vegetarian menu", menus)
    # bringing the rig is its mobilisation: "bring" names nothing
    assert named_services("How much do you charge to bring the rig?", rows) == [rows[3].name]
    # a grade after the noun is no head: the "Plus" plan is a plan as much as the plain one
    plans = [_fact("Office Plan (10 x 18.9 L a month, dispenser included)", "2300", None),
             _fact("Office Plan Plus (25 x 18.9 L a month, 2 dispensers included)", "5200", None),
             _fact("Home Refill (18.9 L)", "250", None), _fact("Water Dispenser (hot and cold)", "14500", None),
             _fact("Bowser Delivery 10,000 L", "7000", None), _fact("Tank Cleaning (up to 5,000 L)", "3500", 120)]
    assert named_services("how much are the office plans", plans) == [plans[0].name, plans[1].name]


def test_a_row_without_a_duration_answers_no_duration_question_by_meaning():
    rows = [_fact("Furnished One-Bedroom, Milimani (monthly rent)", "40000", None,
                  "Fully furnished one-bedroom with Wi-Fi. Minimum stay 3 months."),
            _fact("Bedsitter, Nyalenda (monthly rent)", "6500", None, "Single room with kitchenette.")]
    assert services_asked("how long would the lease be?", rows) == []


def test_a_capitalised_name_inside_a_swahili_question_names_its_row_though_swahili_has_the_word():
    trips = [_fact("Lake Nakuru National Park Day Trip (per adult)", "9500", 600),
             _fact("Hell's Gate Cycling Day Trip (per adult)", "6500", 480)]
    # "lake" is also Swahili for "his": capitalised inside the question, it is the name
    assert named_services("Bei ya safari ya Lake Nakuru ni ngapi?", trips) == [trips[0].name]
    assert named_services("Bei ya gari lake ni ngapi?", trips) == []


@pytest.mark.parametrize("question, asks", [
    ("Is breakfast included in the price?", False),  # what a price includes, not the price
    ("Does the rate cover transport?", False),
    ("What does the callout fee cover?", False),
    ("How much is the room, breakfast included?", True),  # "how much" asks the amount
    ("Bei ya chumba ni ngapi, pamoja na breakfast included?", True),
    ("What is the price of a packed lunch?", True),
])
def test_a_question_about_what_a_price_includes_does_not_ask_the_price(question, asks):
    assert asks_price(question) is asks


@pytest.mark.parametrize("question, asks", [
    ("How much fabric do I need for a long-sleeved shirt?", False),  # an amount of fabric, not of money
    ("How much cement will we need for a slab?", False),
    ("How much paint will I need, and what does it cost?", True),  # the price asked too
    ("How much money do I need to bring?", True), ("How much deposit do I need to pay?", True),
    ("How much is the fabric?", True),
])
def test_how_much_of_a_thing_is_needed_does_not_ask_the_price(question, asks):
    assert asks_price(question) is asks


@pytest.mark.parametrize("question, asks", [
    ("Which is cheaper, the Swahili buffet or the premium one?", True),  # both prices asked
    ("Is the shared boat less expensive than the private one?", True), ("What's your cheapest package?", True),
    # a cheaper deal, way or time, and why one costs more, ask a policy or a reason, not a row's price
    ("Is there a cheaper deal for students?", False), ("Do the pastries go any cheaper towards evening?", False),
    ("Why is the gold wash more expensive than the silver wash?", False),
    ("Is it cheaper to pay for the whole month?", False), ("What's the cheapest way to send a parcel?", False),
    ("What's the rent for a shop on Oginga Odinga Street?", True), ("bedsitter nyalenda rent", True),
    ("Kodi ya bedsitter Nyalenda ni ngapi?", True), ("What is the bus fare to Kisumu?", True),
    ("Do you rent out tents?", False), ("I want to rent a car", False),  # renting one, not a price
    ("can u rent me a tent", False), ("Can I please rent tents", False), ("is rent due on the 5th", False),
    ("pay my rent", False), ("What is the rent a month for a bedsitter?", True),
    ("Is water included in the rent?", False),  # what the rent includes
])
def test_a_comparison_of_costs_and_a_rent_ask_the_price(question, asks):
    assert asks_price(question) is asks


@pytest.mark.parametrize("question, expected", [
    # "people" is only in the description: the answer quotes it
    ("How much is the boat ride and how many people fit?", ["Boat Ride (1 hour)"]),
    ("How much is the boat ride?", []),  # the name says it all
    ("Bei ya boat ride ni ngapi kwa watu sita?", []),  # an English description is not quoted to a Swahili question
])
def test_a_row_is_described_where_its_description_answers_words_its_name_does_not(question, expected):
    assert described_rows(question, SHOP, named_services(question, SHOP) or ["Boat Ride (1 hour)"]) == expected


def test_a_price_answer_quotes_the_rows_description_for_the_words_only_it_holds(chat, monkeypatch):
    Service.objects.filter(name="Hot Stone Massage").update(
        description="Warm basalt stones and long flowing strokes to ease deep muscle tension.")
    body = _ask_as(chat, monkeypatch, "services", "How much is the hot stone massage, and does it use warm stones?")
    assert [c["key"] for c in body["citations"]][0] == "facts:services"
    assert ("Hot Stone Massage: KES 7,500, 90 minutes. Warm basalt stones and long flowing strokes to ease deep "
            "muscle tension. [1]") in body["answer"]
    # the name says it all: nothing more is quoted
    plain = _ask_as(chat, monkeypatch, "services", "How much is the hot stone massage?")
    assert plain["answer"] == "Here are the details: Hot Stone Massage: KES 7,500, 90 minutes. [1]"


@pytest.mark.parametrize("question, asks", [
    ("Do you sell A4 paper?", True), ("do u have envelopes", True), ("Mnauza flash?", True),
    ("Kuna honey?", True),
    ("Which brand of whey do you stock?", False),  # asks something else about it
    ("How do I use the hair growth oil?", False),
    ("What products do you sell?", False),  # the menu, answered as a listing
])
def test_asking_only_whether_the_business_sells_a_thing(question, asks):
    assert asks_if_sold(question) is asks


def test_a_question_whether_a_product_is_sold_is_answered_with_its_row_first(chat, monkeypatch):
    service_upsert(name="Kaya Body Oil (100 ml)", duration_minutes=None, price="1800.00", currency="KES",
                   position=9, description="Shea and baobab body oil.")
    body = _ask_as(chat, monkeypatch, "services", "Do you sell body oil?")
    assert body["refusal_reason"] is None
    assert body["citations"][0]["key"] == "facts:services"
    assert "Kaya Body Oil (100 ml): KES 1,800." in body["answer"]


HIRE = [
    _fact("Plastic Chair (per day)", "20", None, "White plastic chair with arms, stackable."),
    _fact("Chiavari Chair with Cushion (per day)", "150", None),
    _fact("Tent 100-Seater (per day)", "8000", None),
    _fact("Tent 300-Seater (per day)", "22000", None),
    _fact("Site Visit", "1500", 60),
    _fact("Round Table, 10 guests (per day)", "400", None),
    _fact("Sound System (per day)", "8000", None),
    _fact("Generator 20 kVA (per day)", "12000", None),
    _fact("MC Services (per event)", "15000", None),
]


@pytest.mark.parametrize("question, expected", [
    # how many the customer wants is no name: the chairs are named
    ("How much for 200 chairs?", ["Plastic Chair (per day)", "Chiavari Chair with Cushion (per day)"]),
    ("how much for 50 plastic chairs", ["Plastic Chair (per day)"]),
    ("Bei ya hema ni ngapi?", ["Tent 100-Seater (per day)", "Tent 300-Seater (per day)"]),  # "hema" is a tent
    ("How much is the 300 seater tent?", ["Tent 300-Seater (per day)"]),  # a number a row has still names it
])
def test_a_quantity_is_not_a_name(question, expected):
    assert named_services(question, HIRE) == expected


def test_a_row_hired_out_does_not_say_the_business_sells_one():
    chairs = [HIRE[0]]
    assert not rows_say_if_sold("Do you sell plastic chairs?", chairs)
    assert not rows_say_if_sold("Mnauza viti vya plastiki?", chairs)
    assert rows_say_if_sold("Do you have plastic chairs?", chairs)  # to hire, the row answers
    assert rows_say_if_sold("Do you sell honey?", [SHOP[0]])
    assert not rows_say_if_sold("Do you sell honey?", [])


MATTRESSES = [
    _fact("Mattress Cleaning (single)", "1500", 45, "Steam and stain treatment for a 3x6 or 3.5x6 mattress."),
    _fact("Mattress Cleaning (double and above)", "2200", 60,
          "Steam and stain treatment for a 4x6, 5x6 or 6x6 mattress."),
    _fact("Carpet Cleaning (up to 6x9 ft)", "1500", 60, "Deep extraction clean of one carpet."),
    _fact("Sofa Cleaning (per seat)", "600", 30), _fact("Fumigation (bedsitter to 2 bedroom)", "4500", 90),
    _fact("Office Cleaning (per visit)", "5000", 240),
]


@pytest.mark.parametrize("question, expected", [
    ("Price for cleaning a 5x6 mattress?", ["Mattress Cleaning (double and above)"]),  # "3.5" holds no 5
    ("How much is a 3.5x6 mattress?", ["Mattress Cleaning (single)"]),
    ("Bei ya kusafisha godoro la 5 by 6 ni ngapi?", ["Mattress Cleaning (double and above)"]),  # a size is one word
    ("How much for a 6 x 9 carpet?", ["Carpet Cleaning (up to 6x9 ft)"]),
])
def test_a_decimal_or_a_size_in_a_description_is_one_number(question, expected):
    assert named_services(question, MATTRESSES) == expected


WASHES = [
    _fact("Full Wash (Saloon/Hatchback)", "800", 60, "Inside and out."),
    _fact("Full Wash (SUV/Pick-up)", "1100", 75, "Inside and out, boot included."),
    _fact("Engine Wash", "500", 30), _fact("Wax Polish", "2500", 120), _fact("Air Freshener", "300", None),
]
SIZES = ["Saloon/Hatchback prices are for saloons and hatchbacks such as the Vitz and Axio. SUV/Pick-up prices are "
         "for SUVs and pick-ups such as the RAV4, Prado and Hilux."]


def test_the_knowledge_ties_a_word_no_row_holds_to_one_variant():
    from conversations.facts import variant_the_knowledge_names

    both = ["Full Wash (Saloon/Hatchback)", "Full Wash (SUV/Pick-up)"]
    assert variant_the_knowledge_names("full wash for a prado how much", both, SIZES, WASHES) == [both[1]]
    assert variant_the_knowledge_names("How much is a full wash for a Vitz?", both, SIZES, WASHES) == [both[0]]
    # no word the knowledge ties to one variant: both stay
    assert variant_the_knowledge_names("How much is a full wash for a lorry?", both, SIZES, WASHES) == both
    # a follow-up's siblings: "and for a Prado?" after the saloon
    assert variant_the_knowledge_names("and for a Prado?", both[:1], SIZES, WASHES, siblings=True) == [both[1]]
    assert variant_the_knowledge_names("and for a Prado?", both[:1], SIZES, WASHES) == both[:1]
    # rows of different services are no variants of one
    assert variant_the_knowledge_names("engine wash or full wash for a prado", ["Full Wash (SUV/Pick-up)",
                                       "Engine Wash"], SIZES, WASHES) == ["Full Wash (SUV/Pick-up)", "Engine Wash"]


FRESHENERS = [_fact("Air Freshener (Gel Can)", "600", None), _fact("Air Freshener (Vent Clip)", "450", None),
              _fact("Car Pickup", "500", 30)]


@pytest.mark.parametrize("question, expected", [
    # a function word in a name ("Can") does not name the row on its own
    ("Can your driver collect my car from Milimani?", ["Car Pickup"]),
    ("Can I pay by card?", []),
    # beside the name's other words it still picks its row
    ("How much is the gel can?", ["Air Freshener (Gel Can)"]),
])
def test_a_function_word_in_a_name_is_no_name_alone(question, expected):
    assert match_services(question, FRESHENERS) == expected


VET = [_fact("Puppy Vaccination (DHPPi+L)", "1800", 20), _fact("Neuter (Cat)", "4000", 45),
       _fact("Neuter (Dog)", "7500", 90), _fact("Dental Scale and Polish", "7000", 90),
       _fact("Dog Collar", "900", None), _fact("Consultation", "1500", 30), _fact("Microchipping", "2500", 15)]


@pytest.mark.parametrize("question, texts, expected", [
    # the row's word, and knowledge that ties the question's other words to it without a price: the row answers
    ("What do puppy shots cost?", ["Puppies get their first vaccine at 6 to 8 weeks.\nKeywords: shots, jabs"],
     ["Puppy Vaccination (DHPPi+L)"]),
    ("How long does a dental cleaning take?", ["Dental cleaning and extractions. Dental cleaning is done under "
                                               "general anaesthesia."], ["Dental Scale and Polish"]),
    # the knowledge found gives the figure, says nothing of the other words, or nothing was found
    ("What do puppy shots cost?", ["Puppy shots are KES 1,500 each. Keywords: shots"], []),
    ("What do puppy shots cost?", ["Puppies get their first vaccine at 6 to 8 weeks."], []),
    ("How long does a dental cleaning take?", [], []),
    # two rows mentioned ("neutering" for the cat and the dog) are not one
    ("What's the price for neutering my tomcat?", ["Neutering my tomcat is a day procedure."], []),
    # a row without minutes does not answer how long; a question of several parts is the knowledge's
    ("How long does a dog collar last?", ["A dog collar lasts a year."], []),
    ("What do puppy shots cost, and can I pay by card?", ["Puppies get shots at 6 weeks."], []),
    # not a price or duration question
    ("Do puppies need shots?", ["Puppies get shots at 6 weeks."], []),
])
def test_a_row_the_question_mentions_answers_a_figure_the_knowledge_lacks(question, texts, expected):
    from conversations.facts import rows_the_question_mentions

    assert rows_the_question_mentions(question, texts, VET) == expected


def test_a_price_asked_of_a_row_by_another_word_is_answered_from_the_row(chat):
    first = chat(message="What does a facial for sensitive skin cost?").json()
    assert first["refusal_reason"] is None and first["citations"][0]["key"] == "facts:services"
    assert "Signature Aura Facial: KES 6,000" in first["answer"]


def test_new_names_a_row_whose_name_holds_it():
    rows = [_fact("New Client Consultation", "0", 30), _fact("Follow-up Consultation", "1500", 30)]
    assert named_services("How much is a new client consultation?", rows) == ["New Client Consultation"]


COLLEGE = [_fact("Graphic Design Certificate", "24000", None), _fact("CorelDRAW for Print & Signage", "9000", None),
           _fact("Private One-to-One Lesson (1 hour)", "1200", 60)]


@pytest.mark.parametrize("question, expected", [
    # "one" stands for the course named, though a row's name holds the word
    ("How much is the Graphic Design course?\nand the CorelDRAW one?",
     ["Graphic Design Certificate", "CorelDRAW for Print & Signage"]),
    ("How much is a one-to-one lesson?", ["Private One-to-One Lesson (1 hour)"]),
])
def test_one_standing_for_the_thing_named_names_no_row(question, expected):
    assert named_services(question, COLLEGE) == expected


COURSES = [
    _fact("Computer Packages (Full Course)", "7500", None, "Introduction to computers, typing practice, Word, Excel."),
    _fact("Touch Typing & Keyboard Skills", "3000", None, "Touch typing up to 35 words per minute."),
    _fact("Graphic Design Certificate", "18000", None, "Photoshop, Illustrator and CorelDRAW."),
]


def test_a_word_most_of_the_knowledge_uses_names_a_row_only_between_rows_the_other_words_tie():
    question = "How much is the typing course?"
    assert named_services(question, COURSES) == ["Computer Packages (Full Course)"]  # "course" in its name
    common = frozenset({"course"})  # a college's knowledge says "course" everywhere
    assert named_services(question, COURSES, common=common) == ["Touch Typing & Keyboard Skills"]
    assert named_services("How much is the full course?", COURSES, common=common) == [
        "Computer Packages (Full Course)"]
    assert named_services("How much is the graphic design course?", COURSES, common=common) == [
        "Graphic Design Certificate"]  # a row need not account for the business's word


def test_a_common_word_no_row_is_named_by_still_needs_accounting_for():
    carpets = [_fact("Carpet Cleaning (up to 6x9 ft)", "1500", 60, "Vacuum and deep extraction clean."),
               _fact("Carpet Cleaning (8x11 ft and above)", "2500", 90, "Vacuum and deep extraction clean.")]
    common = frozenset({"after", "cleaning"})  # "after" is common in any knowledge, and names no row
    assert named_services("How long does a carpet take to dry after cleaning?", carpets, common=common) == []


ZONES = [
    _fact("Town Delivery Zone A (up to 5 kg)", "200", 60),
    _fact("Town Delivery Zone B (up to 5 kg)", "300", 60),
    _fact("Home Measurement Visit (town)", "500", 60, "A carpenter measures the space at your home."),
]


def test_a_letter_naming_a_row_is_a_word_of_the_question_and_an_article_is_not():
    # "a" would name Zone A beside B; the letter the customer wrote after "zone" names B alone
    assert named_services("How much is a Zone B delivery?", ZONES) == ["Town Delivery Zone B (up to 5 kg)"]


def test_the_ending_of_whats_or_mens_is_no_letter_naming_a_row():
    rows = [_fact("Men's Haircut", "400", 30, "With a neck shave and a hot-towel wipe."),
            _fact("Hot Towel Shave", "600", 35), _fact("Beard Trim", "300", 20)]
    assert named_services("What's the price of a hot towel shave?", rows) == ["Hot Towel Shave"]
    shirts = [_fact("T-Shirt (Size S)", "500", None), _fact("T-Shirt (Size M)", "500", None)]
    assert named_services("What's the price of a size M t-shirt?", shirts) == ["T-Shirt (Size M)"]
