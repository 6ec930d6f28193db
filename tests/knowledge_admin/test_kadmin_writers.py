"""The admin writes only through the services: creates refused by the unique index (not the form's look-before),
deletes audited, rows never deleted behind the service's back."""
from __future__ import annotations

import pytest

from conversations.models import HandoffRequest, Session
from knowledge.admin import ServiceForm, SnippetForm, SmokeTestForm
from knowledge.models import AuditEntry, OpeningHours, Service, SmokeTest, SnippetVersion
from knowledge.services import opening_hours_set, service_create, smoke_test_create, snippet_version_create

pytestmark = pytest.mark.usefixtures("tenant")


def _parking():
    return snippet_version_create(key="parking", title="Parking", body="Free parking.", category="facility",
                                  role="retrieved", queue_embedding=False)


@pytest.fixture
def form_saw_nothing(monkeypatch):
    """The moment between the form's unique check and the save, when another owner's row appears."""
    for form in (SnippetForm, ServiceForm, SmokeTestForm):
        monkeypatch.setattr(form, "validate_unique", lambda self: None)


def test_a_snippet_key_taken_after_the_form_checked_is_refused_on_key(owner_client, form_saw_nothing):
    _parking()
    response = owner_client.post("/admin/knowledge/snippet/add/", {
        "key": "parking", "title": "Parking", "body": "Paid parking.", "category": "facility", "role": "retrieved",
        "status": "accepted", "channels": ["chat"], "language": "en", "publish": "on"})
    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {"key": ["A snippet with this key already exists."]}
    assert list(SnippetVersion.objects.values_list("version", "body")) == [(1, "Free parking.")]


def test_a_service_name_taken_after_the_form_checked_is_refused_on_name(owner_client, form_saw_nothing):
    service_create(name="Facial", price="2000")
    response = owner_client.post("/admin/knowledge/service/add/", {
        "name": "Facial", "description": "", "duration_minutes": "45", "price": "2500", "currency": "KES",
        "is_active": "on"})
    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {"name": ["A service called 'Facial' already exists."]}
    assert list(Service.objects.values_list("name", "price")) == [("Facial", 2000)]


def test_a_smoke_question_taken_after_the_form_checked_is_refused_on_query(owner_client, form_saw_nothing):
    _parking()
    smoke_test_create(query="Is there parking?", expected_keys=["parking"])
    response = owner_client.post("/admin/knowledge/smoketest/add/", {"query": "Is there parking?",
                                                                     "expected_keys": ["parking"]})
    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {"query": ["Another smoke test already asks this question."]}
    assert list(SmokeTest.objects.values_list("query", "expected_keys")) == [("Is there parking?", ["parking"])]


def test_deleting_a_service_in_the_admin_is_audited(owner_client, owner):
    facial = service_create(name="Facial", price="2000", duration_minutes=45)
    response = owner_client.post(f"/admin/knowledge/service/{facial.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302 and not Service.objects.exists()
    entry = AuditEntry.objects.filter(subject="service").order_by("id").last()
    assert (entry.action, entry.key, entry.actor, entry.detail["price"]) == ("deleted", "Facial", "user:owner",
                                                                             ["2000.00", None])


def test_renaming_a_smoke_test_changes_the_row_in_place(owner_client):
    _parking()
    test = smoke_test_create(query="Is there parking?", expected_keys=["parking"])
    response = owner_client.post(f"/admin/knowledge/smoketest/{test.pk}/change/", {
        "query": "Where do I park?", "expected_keys": ["parking"]})
    assert response.status_code == 302
    assert list(SmokeTest.objects.values_list("pk", "query")) == [(test.pk, "Where do I park?")]
    owner_client.post("/admin/knowledge/smoketest/", {"action": "delete_selected", "_selected_action": [test.pk],
                                                      "post": "yes"})
    assert not SmokeTest.objects.exists()


def test_an_opening_hours_row_is_never_deleted_on_its_own(owner_client):
    row = opening_hours_set(weekday=0, ranges=["09:00-17:00"])[0]
    response = owner_client.post(f"/admin/knowledge/openinghours/{row.pk}/delete/", {"post": "yes"})
    assert (response.status_code, response["Location"]) == (302, "/admin/knowledge/openinghours/")
    assert OpeningHours.objects.filter(pk=row.pk).exists()


def test_deleting_a_handoff_in_the_admin_is_audited(owner_client):
    handoff = HandoffRequest.objects.create(kind="booking", session=Session.objects.create(channel="chat"),
                                            message="Book me a facial", channel="chat")
    response = owner_client.post(f"/admin/conversations/handoffrequest/{handoff.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302 and not HandoffRequest.objects.exists()
    entry = AuditEntry.objects.filter(subject="handoff").order_by("id").last()
    assert (entry.action, entry.key, entry.actor, entry.detail) == (
        "deleted", f"#{handoff.pk} booking", "user:owner", {"status": ["new", None]})
