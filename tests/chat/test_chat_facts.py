"""Structured facts: prices like `KES 4,500`, today's and named dates' hours in the tenant's zone."""
from __future__ import annotations

from datetime import date, datetime, timezone as dt_timezone
from decimal import Decimal

import pytest
from django.db import connection

from conversations import facts
from conversations.facts import (facts_beside_knowledge, facts_for, format_duration, format_money, match_services,
                                 resolve_dates, services_list)
from tests.support.spa import seed_facts


@pytest.fixture
def nairobi(tenant):
    previous = tenant.timezone
    connection.tenant.timezone = "Africa/Nairobi"
    yield tenant
    connection.tenant.timezone = previous


def test_money_is_formatted_with_thousands_separator_and_currency_code():
    assert format_money(Decimal("4500.00"), "KES") == "KES 4,500"
    assert format_money("16500", "kes") == "KES 16,500"
    assert format_money(Decimal("1234.5"), "USD") == "USD 1,234.50"
    assert format_money(0, "KES") == "KES 0"


def test_services_list_formats_prices_in_the_owners_order(tenant):
    seed_facts()
    listed = services_list()
    assert [s.name for s in listed][:2] == ["Swedish Relaxation Massage", "Deep Tissue Massage"]
    assert listed[0].price_text == "KES 4,500"
    assert listed[-1].price_text == "KES 16,500"
    assert listed[0].duration_minutes == 60


def test_services_named_with_typos_are_matched(tenant):
    seed_facts()
    listed = services_list()
    assert match_services("hw much is deep tisue massage", listed) == ["Deep Tissue Massage"]
    assert match_services("How much is a Swedish massage?", listed) == ["Swedish Relaxation Massage"]
    assert match_services("Bei ya pedicure ni ngapi?", listed) == ["Spa Pedicure"]
    assert match_services("What treatments do you offer?", listed) == []


def test_todays_hours_use_the_tenants_time_zone(nairobi):
    seed_facts()
    # 22:30 UTC on Friday 12 June 2026 is already Saturday 13 June in Nairobi (UTC+3).
    now = datetime(2026, 6, 12, 22, 30, tzinfo=dt_timezone.utc)
    result = facts_for(intent="hours", message="are you open now?", now=now)
    assert result.today == date(2026, 6, 13)
    assert [d.to_dict() for d in result.days] == [{
        "date": "2026-06-13", "label": "today", "weekday": "Saturday", "closed": False,
        "ranges": [["09:00", "19:00"]], "special": False, "note": "", "past": False}]
    assert result.days[0].sentence() == "Saturday 13 June 2026: open 09:00-19:00."
    assert result.weekly["Sunday"] == "10:00-17:00"


@pytest.mark.parametrize("utc, message, language, expected", [
    ((6, 13, 3, 37), "Are you open now?", "en", "Right now (06:37) we are closed; we open at 09:00 today."),
    ((6, 13, 8, 15), "are u still open", "en", "Right now (11:15) we are open, until 19:00."),
    ((6, 13, 17, 5), "Are you open right now?", "en", "Right now (20:05) we are closed."),
    ((6, 13, 3, 37), "Mko wazi sasa hivi?", "sw", "Sasa hivi (06:37) tumefunga; tunafungua tena saa 09:00 leo."),
])
def test_open_now_answers_for_this_moment_in_the_business_time_zone(nairobi, utc, message, language, expected):
    seed_facts()
    now = datetime(2026, *utc, tzinfo=dt_timezone.utc)
    result = facts_for(intent="hours", message=message, now=now)
    lines = [line for _key, line in result.sentences(language=language)]
    assert lines[0] == expected  # the moment first, then today's hours and the week
    assert result.to_dict()["now"] == expected.split("(")[1][:5]
    assert result.answers_alone  # "right now", "at the moment" are the moment, not a topic


@pytest.mark.parametrize("message", ["Are you open at the moment?", "are you currently open",
                                     "are you open right now"])
def test_the_moment_asked_in_other_words_is_answered_by_the_hours_alone(nairobi, message):
    seed_facts()
    result = facts_for(intent="hours", message=message, now=datetime(2026, 6, 13, 8, 15, tzinfo=dt_timezone.utc))
    assert result.answers_alone and result.sentences()[0][1] == "Right now (11:15) we are open, until 19:00."


def test_a_question_about_today_is_not_about_this_moment(nairobi):
    seed_facts()
    result = facts_for(intent="hours", message="What time do you close today?",
                       now=datetime(2026, 6, 13, 8, 15, tzinfo=dt_timezone.utc))
    assert result.now is None and "now" not in result.to_dict()
    assert not result.sentences()[0][1].startswith("Right now")


def test_a_named_holiday_resolves_to_its_special_hours(nairobi):
    seed_facts()
    now = datetime(2026, 6, 10, 9, 0, tzinfo=dt_timezone.utc)
    result = facts_for(intent="hours", message="Are you open on Christmas Eve?", now=now)
    assert [(d.date, d.ranges and f"{d.ranges[0][0]:%H:%M}-{d.ranges[0][1]:%H:%M}", d.special) for d in result.days] \
        == [(date(2026, 12, 24), "09:00-15:00", True)]
    assert result.days[0].sentence() == "Thursday 24 December 2026 (Christmas Eve, early close): open 09:00-15:00."


def test_a_closed_special_day_says_closed_in_english_and_swahili(nairobi):
    seed_facts()
    now = datetime(2026, 6, 10, 9, 0, tzinfo=dt_timezone.utc)
    day = facts_for(intent="hours", message="Are you open on 17 August?", now=now).days[0]
    assert day.closed and day.date == date(2026, 8, 17)
    # the owner's note says it is closed: it is the answer, not a bracket before "closed all day"
    assert day.sentence() == "Monday 17 August 2026: Closed all day for annual staff training."
    assert day.sentence(language="sw") == ("Jumatatu 17 Agosti 2026 (Closed all day for annual staff training): "
                                           "tumefunga siku nzima.")


def test_holiday_names_from_the_owners_notes_are_understood(nairobi):
    seed_facts()
    today = date(2026, 5, 20)
    assert resolve_dates("Will you still be working on Madaraka Day?", today=today) == [
        (date(2026, 6, 1), "Madaraka Day")]


def test_a_named_holiday_already_past_this_year_answers_with_the_last_one_on_record(nairobi):
    seed_facts()
    # Madaraka Day 2026 has passed and the owner has not entered 2027's yet.
    now = datetime(2026, 9, 1, 9, 0, tzinfo=dt_timezone.utc)
    day = facts_for(intent="hours", message="Are you open on Madaraka Day?", now=now).days[0]
    assert (day.date, day.special, day.past) == (date(2026, 6, 1), True, True)
    # a note with brackets of its own is not bracketed again
    assert day.sentence() == ("Monday 1 June 2026, Madaraka Day (public holiday hours), the last one on record: "
                              "open 10:00-16:00.")
    assert day.sentence(language="sw").endswith(", ya mwisho iliyoandikwa: tuko wazi 10:00-16:00.")
    # A date the customer writes out is that date, not "the last one".
    written = facts_for(intent="hours", message="Were you open on 2026-06-01?", now=now).days[0]
    assert written.date == date(2026, 6, 1) and not written.past


def test_weekday_words_in_english_swahili_and_whatsapp_spelling(tenant):
    today = date(2026, 6, 10)  # a Wednesday
    assert resolve_dates("wat time do u close on sato", today=today) == [(date(2026, 6, 13), "Saturday")]
    assert resolve_dates("Jumapili mnafungua saa ngapi?", today=today) == [(date(2026, 6, 14), "Sunday")]
    assert resolve_dates("open tomorrow?", today=today) == [(date(2026, 6, 11), "tomorrow")]
    assert resolve_dates("mko wazi leo?", today=today) == [(date(2026, 6, 10), "leo")]
    assert resolve_dates("What about Wednesday?", today=today) == [(date(2026, 6, 10), "Wednesday")]
    # a month as customers often spell it in Swahili
    assert resolve_dates("Mtafungua tarehe 24 Disemba?", today=today)[0][0] == date(2026, 12, 24)


def test_weekdays_are_monday_to_friday(tenant):
    today = date(2026, 6, 10)  # a Wednesday
    days = resolve_dates("What time do you open on weekdays?", today=today)
    assert [day for day, _ in days] == [date(2026, 6, day) for day in (10, 11, 12, 15, 16)]
    assert {label for _, label in days} == {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday"}


def test_an_opening_time_question_is_answered_by_the_timetable_alone(nairobi):
    seed_facts()
    now = datetime(2026, 6, 10, 9, 0, tzinfo=dt_timezone.utc)
    weekdays = facts_for(intent="hours", message="What time do you open on weekdays?", now=now)
    assert weekdays.answers_alone and [day.date.weekday() for day in weekdays.days] == [2, 3, 4, 0, 1]
    # "asubuhi" (morning) is read as "morning": a word of the timetable, not a topic of its own.
    assert facts_for(intent="hours", message="Mnafungua ofisi saa ngapi asubuhi?", now=now).answers_alone
    assert not facts_for(intent="hours", message="Are you open on public holidays?", now=now).answers_alone


def test_dates_already_past_this_year_roll_to_next_year(tenant):
    assert resolve_dates("open on 2 January?", today=date(2026, 6, 10)) == [(date(2027, 1, 2), "2 january")]
    assert resolve_dates("what about 24/12", today=date(2026, 6, 10)) == [(date(2026, 12, 24), "24/12")]
    assert resolve_dates("New Year's Eve hours?", today=date(2026, 6, 10)) == [(date(2026, 12, 31), "New Year's Eve")]


def test_services_facts_carry_cited_sentences(tenant):
    seed_facts()
    result = facts_for(intent="services", message="How much is the hot stone massage?")
    assert result.matched_services == ["Hot Stone Massage"]
    assert result.sentences() == [(facts.SERVICES_KEY, "Hot Stone Massage: KES 7,500, 90 minutes.")]
    assert result.sentences(language="sw") == [(facts.SERVICES_KEY, "Hot Stone Massage: KES 7,500, dakika 90.")]
    assert result.to_dict()["services"][2]["price_text"] == "KES 7,500"


def test_the_price_list_is_only_offered_when_it_answers_the_question(tenant):
    seed_facts()
    assert facts_for(intent="services", message="Do you do home visits?").services == []
    assert len(facts_for(intent="services", message="What treatments do you offer?").services) == 6
    assert len(facts_for(intent="services", message="Huduma gani mnatoa?").services) == 6
    named = facts_for(intent="services", message="How much is the bridal package?")
    assert named.matched_services == ["Bridal Glow Package"] and len(named.services) == 6


def test_facts_that_answer_one_part_of_a_question_are_quoted_beside_the_knowledge(nairobi):
    seed_facts()
    now = datetime(2026, 6, 10, 9, 0, tzinfo=dt_timezone.utc)
    both = facts_for(intent="services", message="How much is the hot stone massage and how long does it take?", now=now)
    assert both.answers_alone and not both.answers_part
    more = facts_for(intent="services", message="How much is the hot stone massage and what should I wear?", now=now)
    assert more.matched_services == ["Hot Stone Massage"] and more.answers_part and not more.answers_alone
    assert facts_beside_knowledge(more, knowledge=True).quoted  # the price, and the knowledge for the rest
    hours = facts_for(intent="hours", message="Are you open on Christmas Eve, and can I bring my kids?", now=now)
    assert hours.answers_part and not hours.answers_alone
    assert facts_beside_knowledge(hours, knowledge=True).quoted
    # a follow-up joined to its topic names another row: still a facts question
    other_row = facts_for(intent="services", message="How much is the hot stone massage?\nand a deep tissue one?",
                          now=now)
    assert other_row.answers_alone and not other_row.answers_part
    size = facts_for(intent="services", message="How much is the hot stone massage?\nand for 120 min?", now=now)
    assert size.answers_alone and not size.answers_part
    # a part that names a row but asks something of its own is more than the row's price
    own = facts_for(intent="services", now=now,
                    message="Can I bring my own oil for the hot stone massage, and how long does it take?")
    assert own.matched_services == ["Hot Stone Massage"] and own.answers_part and not own.answers_alone
    until = facts_for(intent="hours", message="Are you open on Saturday, and until what time?", now=now)
    assert until.answers_alone and not until.answers_part
    # a second question asking only how long is still a part of its own here: how long the whole thing takes
    # may be more than the row's minutes (the knowledge is quoted beside)
    whole = facts_for(intent="services", now=now,
                      message="Do you do the hot stone massage at home? How long?")
    assert whole.matched_services == ["Hot Stone Massage"] and whole.answers_part and not whole.answers_alone


def test_a_deposit_asked_for_a_named_service_is_not_that_services_price(tenant):
    seed_facts()
    deposit = facts_for(intent="services", message="How much deposit do you need for a Swedish massage?")
    price = facts_for(intent="services", message="How much is a Swedish massage?")
    assert deposit.matched_services == price.matched_services == ["Swedish Relaxation Massage"]
    # The row is quoted only when no knowledge answers the deposit; the price question is the row's alone.
    assert not deposit.answers_alone and not deposit.answers_part
    assert price.answers_alone
    assert facts.asks_a_policy_charge("Bei ya amana ni ngapi?", ["Box Braids"])
    assert not facts.asks_a_policy_charge("How much is the booking deposit?", ["Booking Deposit"])


@pytest.mark.parametrize("minutes, english, swahili", [
    (45, "45 minutes", "dakika 45"), (90, "90 minutes", "dakika 90"), (240, "4 hours", "masaa 4"),
    (150, "2 hours 30 minutes", "masaa 2 na dakika 30"), (125, "125 minutes", "dakika 125"),
    (1440, "1 day", "siku 1"), (2880, "2 days", "siku 2"),
])
def test_a_duration_reads_as_a_customer_says_it(minutes, english, swahili):
    assert format_duration(minutes) == english and format_duration(minutes, language="sw") == swahili


COURSES = [
    facts.ServiceFact(name="Advanced Excel for the Office", price="6500.00", currency="KES", price_text="KES 6,500",
                      duration_minutes=None, description="Pivot tables, charts and dashboards. 4 weeks, evenings or "
                      "Saturdays."),
    facts.ServiceFact(name="Class B Course (Manual)", price="18500.00", currency="KES", price_text="KES 18,500",
                      duration_minutes=60, description="4 weeks on weekdays: one 60-minute lesson a day."),
    facts.ServiceFact(name="Weekend Course", price="19500.00", currency="KES", price_text="KES 19,500",
                      duration_minutes=300, description="8 Saturdays, each a 5-hour session."),
]


@pytest.mark.parametrize("message", ["How long is the Advanced Excel course?", "How many weeks is advanced excel?"])
def test_a_product_whose_description_says_how_long_answers_a_duration_question(tenant, message):
    found = facts_for(intent="services", message=message, services=COURSES)
    assert found.matched_services == ["Advanced Excel for the Office"] and found.answers_alone
    assert "4 weeks, evenings or Saturdays" in " ".join(text for _key, text in found.sentences())


def test_how_many_weeks_is_not_answered_by_a_bookings_minutes(tenant):
    found = facts_for(intent="services", message="How many weeks does the Class B course take?", services=COURSES)
    assert found.matched_services == ["Class B Course (Manual)"]  # "weeks" does not name the Weekend Course
    assert not found.answers_alone  # its 60 minutes are a lesson's: the knowledge says how many weeks


def test_a_row_is_named_by_the_words_the_knowledge_does_not_use_everywhere(tenant):
    from knowledge.services import service_upsert, snippet_version_create

    for key, body in [("intakes", "A new course starts every month."), ("exams", "Every course ends in an exam."),
                      ("fees", "Pay the course fee in instalments."), ("map", "We are opposite the bank."),
                      ("parking", "Park behind the building."), ("wifi", "Free Wi-Fi in the lab.")]:
        snippet_version_create(key=key, title=key.title(), body=body, category="policy", role="retrieved",
                               queue_embedding=False)
    service_upsert(name="Computer Packages (Full Course)", price=Decimal("7500"), currency="KES",
                   description="Introduction to computers, typing practice, Word and Excel.")
    service_upsert(name="Touch Typing & Keyboard Skills", price=Decimal("3000"), currency="KES",
                   description="Touch typing up to 35 words per minute.")
    result = facts_for(intent="services", message="How much is the typing course?")
    assert result.matched_services == ["Touch Typing & Keyboard Skills"]
