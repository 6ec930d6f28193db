"""The audit log beyond snippets: prices and services, weekly hours, special days, retrieval settings, collections
and documents, and hand-off status — each recorded with who and what changed, by the admin, the API and the
seed alike, in the change's own transaction, and nothing when nothing changed."""
from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import DatabaseError, connection

from knowledge import services
from knowledge.models import AuditEntry, Service
from tests.support.builders import make_user, post_json


def _log(subject: str) -> list[tuple]:
    return [(e.action, e.key, e.actor, e.detail) for e in AuditEntry.objects.filter(subject=subject).order_by("id")]


@pytest.fixture
def owner_client(tenant, client_for):
    owner = make_user("owner", superuser=True)
    client = client_for(tenant)
    client.force_login(owner)
    return client


def test_a_price_change_in_the_admin_names_the_owner_and_the_old_and_new_price(owner_client):
    owner_client.post("/admin/knowledge/service/add/", {"name": "Swedish massage", "description": "",
                                                        "duration_minutes": "60", "price": "3500",
                                                        "currency": "KES", "is_active": "on"})
    service = Service.objects.get()
    owner_client.post(f"/admin/knowledge/service/{service.pk}/change/", {
        "name": "Swedish massage", "description": "", "duration_minutes": "60", "price": "3800",
        "currency": "KES", "is_active": "on"})
    assert _log("service") == [
        ("created", "Swedish massage", "user:owner", {"name": [None, "Swedish massage"], "description": [None, ""],
                                                       "duration_minutes": [None, 60], "price": [None, "3500.00"],
                                                       "currency": [None, "KES"], "is_active": [None, True]}),
        ("changed", "Swedish massage", "user:owner", {"price": ["3500.00", "3800.00"]}),
    ]
    entry = AuditEntry.objects.filter(subject="service").last()
    assert entry.user_id == get_user_model().objects.get(username="owner").pk


def test_an_unchanged_save_writes_nothing(tenant):
    services.service_upsert(name="Facial", price="2000", duration_minutes=45)
    services.opening_hours_set(weekday=0, ranges=["09:00-17:00"])
    services.special_day_set(date="2030-12-25", ranges=[], note="Christmas")
    count = AuditEntry.objects.count()
    services.service_upsert(name="Facial", price="2000.00", duration_minutes=45)
    services.opening_hours_set(weekday=0, ranges=["09:00-17:00"])
    services.special_day_set(date="2030-12-25", ranges=[], note="Christmas")
    assert AuditEntry.objects.count() == count == 3


def test_hours_and_special_days_changed_through_the_api_name_the_key(api_client):
    from ratiba.models import ApiKey

    client, headers = api_client
    actor = f"api_key:{ApiKey.objects.get().prefix}"
    assert post_json(client, "/api/v1/hours/weekly/", {"mon": ["09:00-13:00", "14:00-18:00"], "sun": []}, headers,
                     method="put").status_code == 200
    assert post_json(client, "/api/v1/hours/weekly/", {"mon": ["10:00-18:00"]}, headers,
                     method="put").status_code == 200
    assert post_json(client, "/api/v1/hours/special/2030-12-24/", {"hours": ["09:00-12:00"], "note": "Eve"},
                     headers, method="put").status_code == 200
    assert client.delete("/api/v1/hours/special/2030-12-24/", **headers).status_code == 204
    assert _log("opening_hours") == [
        ("changed", "Monday", actor, {"hours": ["closed", "09:00-13:00, 14:00-18:00"]}),
        ("changed", "Monday", actor, {"hours": ["09:00-13:00, 14:00-18:00", "10:00-18:00"]}),
    ]  # Sunday was closed already: nothing changed, nothing written
    assert _log("special_day") == [
        ("created", "2030-12-24", actor, {"note": [None, "Eve"], "hours": [None, "09:00-12:00"]}),
        ("deleted", "2030-12-24", actor, {"note": ["Eve", None], "hours": ["09:00-12:00", None]}),
    ]


def test_the_weekly_hours_page_and_special_days_in_the_admin_are_recorded(owner_client):
    days = {day: "" for day in ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")}
    owner_client.post("/admin/knowledge/openinghours/", {**days, "saturday": "10:00-14:00"})
    owner_client.post("/admin/knowledge/specialday/add/", {"date": "2030-01-01", "ranges": "", "note": "New Year"})
    assert _log("opening_hours") == [("changed", "Saturday", "user:owner", {"hours": ["closed", "10:00-14:00"]})]
    assert _log("special_day") == [("created", "2030-01-01", "user:owner",
                                    {"note": [None, "New Year"], "hours": [None, "closed"]})]


def test_retrieval_settings_changed_in_the_admin_are_recorded_with_the_fields(owner_client):
    from knowledge.retrieval.config import retrieval_settings_get

    row = retrieval_settings_get()
    page = owner_client.get(f"/admin/knowledge/retrievalsettings/{row.pk}/change/")
    form = page.context["adminform"].form
    data = {name: form.initial[name] for name in form.fields}
    data.update({"mode": "hybrid", "top_k": 5})
    assert owner_client.post(f"/admin/knowledge/retrievalsettings/{row.pk}/change/", data).status_code == 302
    row.refresh_from_db()
    assert (row.mode, row.current_mode, row.top_k) == ("hybrid", "hybrid", 5)
    assert _log("retrieval_settings") == [("changed", "retrieval settings", "user:owner",
                                           {"mode": ["auto", "hybrid"], "top_k": [8, 5]})]


def test_collections_and_documents_are_recorded_from_the_api(api_client, monkeypatch):
    from knowledge.collections import services as collection_services
    from ratiba.models import ApiKey

    monkeypatch.setattr(collection_services, "_queue_ingest", lambda document_id: None)  # no ingestion needed
    client, headers = api_client
    actor = f"api_key:{ApiKey.objects.get().prefix}"
    assert post_json(client, "/api/v1/collections/", {"name": "menus", "scope": "tenant"}, headers).status_code == 201
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("prices.md", b"# Prices\nA massage is KES 3,500.", content_type="text/markdown")
    response = client.post("/api/v1/collections/menus/documents/", {"file": upload}, **headers)
    assert response.status_code == 201
    document_id = response.json()["id"]
    assert client.delete(f"/api/v1/collections/menus/documents/{document_id}/", **headers).status_code == 204
    assert client.delete("/api/v1/collections/menus/", **headers).status_code == 204
    assert _log("collection") == [("created", "menus", actor, {"scope": "tenant", "description": ""}),
                                  ("deleted", "menus", actor, {"documents": 0})]
    sha = AuditEntry.objects.get(subject="document", action="created").detail["sha256"]
    assert _log("document") == [("created", "menus/prices.md", actor, {"size": 32, "sha256": sha}),
                                ("deleted", "menus/prices.md", actor, {})]


def test_a_handoff_status_change_names_the_owner(owner_client, tenant):
    from conversations.models import HandoffRequest

    handoff = HandoffRequest.objects.create(kind="booking", message="Book me a massage", what="Massage")
    owner_client.post("/admin/conversations/handoffrequest/", {"action": "mark_contacted",
                                                                "_selected_action": [handoff.pk]})
    owner_client.post(f"/admin/conversations/handoffrequest/{handoff.pk}/change/", {"status": "done"})
    owner_client.post(f"/admin/conversations/handoffrequest/{handoff.pk}/change/", {"status": "done"})
    assert _log("handoff") == [("changed", f"#{handoff.pk} booking", "user:owner", {"status": ["new", "contacted"]}),
                               ("changed", f"#{handoff.pk} booking", "user:owner", {"status": ["contacted", "done"]})]


def test_seed_changes_to_facts_are_recorded_as_the_seed_command(tenant, tmp_path: Path):
    seed = tmp_path / "facts.yaml"
    seed.write_text("services:\n  - {name: Facial, price: 2000, duration_minutes: 45}\n"
                    "hours:\n  weekly: {mon: ['09:00-17:00']}\n  special: [{date: 2030-12-25, hours: [], note: Xmas}]\n")
    call_command("seed_knowledge", str(seed), "--tenant", tenant.schema_name, stdout=io.StringIO())
    seed.write_text("services: []\nhours:\n  weekly: {mon: ['09:00-17:00']}\n  special: []\n")
    call_command("seed_knowledge", str(seed), "--tenant", tenant.schema_name, stdout=io.StringIO())
    connection.set_tenant(tenant)  # the command leaves the connection on the public schema
    assert [(action, key, actor) for action, key, actor, _detail in _log("service")] == [
        ("created", "Facial", "command:seed_knowledge"), ("changed", "Facial", "command:seed_knowledge")]
    assert _log("service")[-1][3] == {"is_active": [True, False]}
    assert [(action, key) for action, key, _a, _d in _log("special_day")] == [("created", "2030-12-25"),
                                                                             ("deleted", "2030-12-25")]


def test_a_price_change_whose_entry_cannot_be_written_is_undone(tenant, monkeypatch):
    service = services.service_upsert(name="Facial", price="2000", duration_minutes=45)

    def refuse(**kwargs):
        raise DatabaseError("audit table unavailable")

    monkeypatch.setattr(AuditEntry.objects, "create", refuse)
    with pytest.raises(DatabaseError):
        services.service_update(service=service, changes={"price": "1"})
    monkeypatch.undo()
    assert str(Service.objects.get(pk=service.pk).price) == "2000.00"
