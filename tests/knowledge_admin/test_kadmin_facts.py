"""Services, weekly opening hours, special days and smoke tests in the admin, validated by the services."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from knowledge.models import OpeningHours, Service, SmokeTest, SpecialDay
from knowledge.services import opening_hours_set, smoke_test_upsert, special_day_set
from tests.support.builders import make_version as snippet

pytestmark = pytest.mark.usefixtures("tenant")
HOURS_URL = "/admin/knowledge/openinghours/"
WEEK = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def week_rows() -> list[tuple[int, str, str]]:
    return [(row.weekday, f"{row.opens:%H:%M}", f"{row.closes:%H:%M}") for row in OpeningHours.objects.all()]


# ----------------------------------------------------------------------------- services

def service_post(**changes) -> dict:
    data = {"name": "Swedish massage", "description": "Full body, 60 minutes.", "duration_minutes": "90",
            "price": "3500", "currency": "kes", "is_active": "on"}
    data.update(changes)
    return data


def test_adding_a_service_goes_through_the_service_and_normalises_currency(owner_client):
    response = owner_client.post("/admin/knowledge/service/add/", service_post())
    assert response.status_code == 302
    service = Service.objects.get()
    assert (service.name, service.duration_minutes, service.price, service.currency) == (
        "Swedish massage", 90, Decimal("3500.00"), "KES")
    listing = owner_client.get("/admin/knowledge/service/").content.decode()
    assert "1 h 30 min" in listing and "KES 3,500.00" in listing


def test_a_bad_currency_gets_the_services_message(owner_client):
    response = owner_client.post("/admin/knowledge/service/add/", service_post(currency="XYZ"))
    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {
        "currency": ["Unknown currency 'XYZ': use an ISO 4217 code such as KES."]}
    assert not Service.objects.exists()


def test_every_bad_service_field_is_reported_at_once(owner_client):
    response = owner_client.post("/admin/knowledge/service/add/", service_post(price="12.345", currency="XYZ"))
    assert response.context["adminform"].form.errors == {
        "price": ["Ensure that there are no more than 2 decimal places."],
        "currency": ["Unknown currency 'XYZ': use an ISO 4217 code such as KES."]}
    assert not Service.objects.exists()


def test_editing_a_service_updates_it_in_place(owner_client):
    owner_client.post("/admin/knowledge/service/add/", service_post())
    service = Service.objects.get()
    response = owner_client.post(f"/admin/knowledge/service/{service.pk}/change/",
                                 service_post(price="4000.50", currency="usd"))
    assert response.status_code == 302
    service.refresh_from_db()
    assert (service.price, service.currency, Service.objects.count()) == (Decimal("4000.50"), "USD", 1)


def test_a_duplicate_service_name_is_refused(owner_client):
    owner_client.post("/admin/knowledge/service/add/", service_post())
    response = owner_client.post("/admin/knowledge/service/add/", service_post(price="1"))
    assert response.status_code == 200
    assert list(response.context["adminform"].form.errors) == ["name"]
    assert Service.objects.get().price == Decimal("3500.00")


# ----------------------------------------------------------------------------- weekly hours

def test_the_week_is_edited_on_one_page(owner_client):
    opening_hours_set(weekday=0, ranges=["09:00-17:00"])
    page = owner_client.get(HOURS_URL)
    assert page.status_code == 200
    assert page.context["form"].initial["monday"] == "09:00-17:00"
    data = {day: "" for day in WEEK}
    data.update(monday="09:00-13:00, 14:00–18:00", saturday="10:00-14:00", sunday="closed")
    response = owner_client.post(HOURS_URL, data, follow=True)
    assert week_rows() == [(0, "09:00", "13:00"), (0, "14:00", "18:00"), (5, "10:00", "14:00")]
    assert "Opening hours saved (Monday, Saturday)." in response.content.decode()


def test_overlapping_ranges_are_refused_and_nothing_is_written(owner_client):
    opening_hours_set(weekday=0, ranges=["09:00-17:00"])
    data = {day: "" for day in WEEK}
    data.update(monday="09:00-17:00", tuesday="09:00-13:00, 12:00-18:00")
    response = owner_client.post(HOURS_URL, data)
    assert response.status_code == 200
    assert response.context["form"].errors == {"tuesday": ["09:00-13:00 overlaps 12:00-18:00."]}
    assert week_rows() == [(0, "09:00", "17:00")]


def test_a_range_ending_before_it_starts_is_refused(owner_client):
    data = {day: "" for day in WEEK}
    data.update(friday="18:00-09:00", saturday="9am to 5pm")
    response = owner_client.post(HOURS_URL, data)
    assert response.context["form"].errors == {
        "friday": ["'18:00-09:00': closing time must be after opening time."],
        "saturday": ["Enter a range as HH:MM-HH:MM, not '9am to 5pm'."]}
    assert week_rows() == []


def test_single_opening_hours_rows_redirect_to_the_week(owner_client):
    assert owner_client.get(HOURS_URL + "add/")["Location"] == HOURS_URL


# ----------------------------------------------------------------------------- special days

def test_a_special_day_with_ranges_is_saved_by_the_service(owner_client):
    response = owner_client.post("/admin/knowledge/specialday/add/", {
        "date": "2026-12-24", "note": "Christmas Eve", "hours": "09:00-12:00, 13:00-14:00"})
    assert response.status_code == 302
    day = SpecialDay.objects.get()
    assert (day.date, day.note) == (dt.date(2026, 12, 24), "Christmas Eve")
    assert [(f"{r.opens:%H:%M}", f"{r.closes:%H:%M}") for r in day.ranges.all()] == [("09:00", "12:00"),
                                                                                   ("13:00", "14:00")]
    listing = owner_client.get("/admin/knowledge/specialday/").content.decode()
    assert "Thursday" in listing and "09:00-12:00, 13:00-14:00" in listing


def test_an_empty_range_means_closed_all_day(owner_client):
    owner_client.post("/admin/knowledge/specialday/add/", {"date": "2026-12-25", "note": "Christmas", "hours": ""})
    assert SpecialDay.objects.get().ranges.count() == 0
    assert '<span class="kn-badge kn-alert">closed</span>' in owner_client.get(
        "/admin/knowledge/specialday/").content.decode()


def test_special_day_ranges_are_validated(owner_client):
    response = owner_client.post("/admin/knowledge/specialday/add/", {
        "date": "2026-12-24", "note": "", "hours": "09:00-12:00, 11:00-13:00"})
    assert response.context["adminform"].form.errors == {"hours": ["09:00-12:00 overlaps 11:00-13:00."]}
    response = owner_client.post("/admin/knowledge/specialday/add/", {
        "date": "2026-12-24", "note": "", "hours": "14:00-10:00"})
    assert response.context["adminform"].form.errors == {
        "hours": ["'14:00-10:00': closing time must be after opening time."]}
    assert not SpecialDay.objects.exists()


def test_moving_a_special_day_to_another_date_keeps_one_row(owner_client):
    day = special_day_set(date="2026-12-24", ranges=["09:00-12:00"], note="Eve")
    response = owner_client.post(f"/admin/knowledge/specialday/{day.pk}/change/", {
        "date": "2026-12-31", "note": "New Year's Eve", "hours": "09:00-12:00"})
    assert response.status_code == 302
    assert list(SpecialDay.objects.values_list("date", "note")) == [(dt.date(2026, 12, 31), "New Year's Eve")]


# ----------------------------------------------------------------------------- smoke tests

def test_smoke_tests_flag_keys_no_snippet_has(owner_client):
    snippet("parking")
    smoke_test_upsert(query="Is there parking?", expected_keys=["parking", "parkng"])
    html = owner_client.get("/admin/knowledge/smoketest/").content.decode()
    assert '<span class="kn-chip" title="">parking</span>' in html
    assert '<span class="kn-chip kn-chip-missing" title="No snippet has this key">parkng</span>' in html


def test_a_smoke_test_is_saved_through_the_service(owner_client):
    snippet("parking")
    response = owner_client.post("/admin/knowledge/smoketest/add/", {"query": "  Where do I park? ",
                                                                     "expected_keys": ["parking"]})
    assert response.status_code == 302
    assert list(SmokeTest.objects.values_list("query", "expected_keys")) == [("Where do I park?", ["parking"])]


def test_running_the_smoke_tests_shows_pass_and_fail(owner_client):
    snippet("parking", title="Parking", body="Free parking behind the building for all customers.")
    snippet("arrive-early", title="Arrive early", body="Please arrive ten minutes before your appointment.",
            category="prep")
    smoke_test_upsert(query="Is there parking?", expected_keys=["parking"])
    smoke_test_upsert(query="Do you sell gift vouchers?", expected_keys=["gift-vouchers"])
    response = owner_client.get("/admin/knowledge/smoketest/run/")
    assert response.status_code == 200
    results = {row["result"].query: row["result"] for row in response.context["rows"]}
    assert (results["Is there parking?"].passed, results["Is there parking?"].rank) == (True, 1)
    assert results["Do you sell gift vouchers?"].passed is False
    html = response.content.decode()
    assert "1 of 2 passed." in html
    assert '<span class="kn-badge kn-ok">pass · #1</span>' in html
    assert "/admin/knowledge/test-retrieval/?query=Is+there+parking%3F&amp;intent=other&amp;channel=chat" in html
