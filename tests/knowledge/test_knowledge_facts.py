"""Structured facts: services, weekly hours and special days, with validation; token estimates."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError

from knowledge.models import OpeningHours, Service, SpecialDay
from knowledge.services import (
    currency_check,
    opening_hours_set,
    opening_hours_set_week,
    service_update,
    service_upsert,
    special_day_set,
    time_range_parse,
)
from knowledge.tokens import token_estimate

pytestmark = pytest.mark.usefixtures("tenant")


def test_service_upsert_creates_then_updates_by_name():
    first = service_upsert(name="Haircut", duration_minutes=30, price="600", currency="kes")
    assert (first.price, first.currency, first.position) == (Decimal("600.00"), "KES", 1)
    second = service_upsert(name="Shave", duration_minutes=20, price=Decimal("350.50"))
    assert second.position == 2
    updated = service_upsert(name="Haircut", duration_minutes=45, price="650")
    assert (updated.pk, updated.duration_minutes, updated.price) == (first.pk, 45, Decimal("650.00"))
    assert Service.objects.count() == 2


def test_invalid_service_fields_are_reported_together():
    with pytest.raises(ValidationError) as caught:
        service_upsert(name=" ", duration_minutes=0, price="-5", currency="SHILLINGS")
    assert sorted(caught.value.message_dict) == ["currency", "duration_minutes", "name", "price"]
    with pytest.raises(ValidationError) as caught:
        service_upsert(name="Cut", duration_minutes=30, price="10.005")
    assert list(caught.value.message_dict) == ["price"]


def test_a_service_may_last_longer_than_a_day_up_to_a_year():
    weekly = service_upsert(name="Weekly Saloon Self-Drive (7 days)", duration_minutes=7 * 24 * 60, price="21000")
    assert weekly.duration_minutes == 10080
    with pytest.raises(ValidationError) as caught:
        service_upsert(name="Forever Hire", duration_minutes=366 * 24 * 60, price="1")
    assert caught.value.message_dict == {"duration_minutes": [
        "Enter a whole number of minutes between 1 and 525600 (a year), or leave it empty for a product."]}


def test_renaming_a_service_onto_another_is_refused():
    service_upsert(name="Haircut", duration_minutes=30, price="600")
    shave = service_upsert(name="Shave", duration_minutes=20, price="350")
    with pytest.raises(ValidationError) as caught:
        service_update(service=shave, changes={"name": "Haircut"})
    assert caught.value.message_dict == {"name": ["A service called 'Haircut' already exists."]}


@pytest.mark.parametrize("code, ok", [("KES", True), ("usd", True), ("TZS", True), ("KSH", False), ("", False)])
def test_currencies_are_iso_4217(code, ok):
    if ok:
        assert currency_check(currency=code) == code.upper()
    else:
        with pytest.raises(ValidationError):
            currency_check(currency=code)


def test_a_weekday_can_have_several_ranges_and_is_replaced_whole():
    opening_hours_set(weekday=0, ranges=["09:00-13:00", "14:00-18:00"])
    opening_hours_set(weekday=0, ranges=["10:00-16:00"])
    assert [str(row) for row in OpeningHours.objects.all()] == ["Monday 10:00-16:00"]
    opening_hours_set(weekday=0, ranges=[])
    assert OpeningHours.objects.count() == 0


@pytest.mark.parametrize("ranges, message", [
    (["09:00-13:00", "12:59-18:00"], "09:00-13:00 overlaps 12:59-18:00."),
    (["18:00-09:00"], "'18:00-09:00': closing time must be after opening time."),
    (["9-5"], "Enter a range as HH:MM-HH:MM, not '9-5'."),
    (["25:00-26:00"], "'25:00-26:00' is not a valid time of day."),
])
def test_bad_ranges_are_refused(ranges, message):
    with pytest.raises(ValidationError) as caught:
        opening_hours_set(weekday=1, ranges=ranges)
    assert caught.value.message_dict == {"ranges": [message]}


def test_touching_ranges_are_not_an_overlap():
    rows = opening_hours_set(weekday=2, ranges=["09:00-12:00", "12:00-15:00"])
    assert len(rows) == 2


def test_a_bad_day_in_a_week_update_writes_nothing():
    with pytest.raises(ValidationError) as caught:
        opening_hours_set_week(week={0: ["09:00-17:00"], 6: ["17:00-10:00"]})
    assert list(caught.value.message_dict) == ["sunday"]
    assert OpeningHours.objects.count() == 0


def test_special_days_replace_their_ranges_and_notes():
    special_day_set(date="2026-12-24", ranges=["09:00-15:00"], note="Christmas Eve")
    day = special_day_set(date=dt.date(2026, 12, 24), ranges=[], note="Closed after all")
    assert (SpecialDay.objects.count(), day.note, day.ranges.count()) == (1, "Closed after all", 0)
    with pytest.raises(ValidationError):
        special_day_set(date="24/12/2026", ranges=[])


def test_time_range_parse_returns_times():
    assert time_range_parse(text=" 7:30 - 20:00 ") == (dt.time(7, 30), dt.time(20, 0))


def test_token_estimate_is_monotonic_and_plausible():
    assert token_estimate("") == 0
    assert token_estimate("Free parking behind the building.") == 9  # 6 pieces x 1.3, rounded up
    long_text = "word " * 300
    assert 300 <= token_estimate(long_text) <= 450
