"""The snippet audit log: who saved, activated, rolled back or took out of use which version — written in the
change's own transaction, append-only in the database, read-only in the admin."""
from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import DatabaseError, connection, transaction

from knowledge import services
from knowledge.models import AuditEntry, SnippetVersion
from tests.support.builders import make_user, make_version, post_json


def _entries(key: str = "parking") -> list[tuple]:
    return [(e.action, e.version, e.actor, e.detail)
            for e in AuditEntry.objects.filter(key=key).order_by("id")]


def test_saving_and_activating_as_a_user_names_the_user_and_the_version_replaced(tenant, fake_embedder):
    alice = make_user("alice")
    make_version("parking", created_by=alice)
    services.snippet_edit(key="parking", changes={"body": "Paid parking."}, created_by=alice)
    assert _entries() == [
        ("created", 1, "user:alice", {}),
        ("activated", 1, "user:alice", {"previous_active": None}),
        ("created", 2, "user:alice", {}),
        ("activated", 2, "user:alice", {"previous_active": 1}),
    ]
    assert set(AuditEntry.objects.values_list("user_id", flat=True)) == {alice.pk}


def test_rollback_and_deactivation_are_recorded_with_who_did_them(tenant, fake_embedder):
    make_version("parking", body="Free parking.")
    services.snippet_edit(key="parking", changes={"body": "Paid parking."})
    bob = make_user("bob")
    before = AuditEntry.objects.count()
    rolled = services.snippet_rollback(key="parking", to_version=1, user=bob)
    services.snippet_deactivate(key="parking", user=bob)
    new = [(e.action, e.version, e.actor, e.detail) for e in AuditEntry.objects.order_by("id")[before:]]
    assert new == [
        ("created", 3, "user:bob", {}),
        ("rolled_back", 3, "user:bob", {"to_content_of": 1}),
        ("activated", 3, "user:bob", {"previous_active": 2}),
        ("deactivated", 3, "user:bob", {}),
    ]
    assert rolled.version == 3 and not SnippetVersion.objects.filter(key="parking", is_active=True).exists()


def test_re_activating_the_live_version_writes_nothing(tenant, fake_embedder):
    version = make_version("parking")
    count = AuditEntry.objects.count()
    services.snippet_version_activate(version=version)
    assert AuditEntry.objects.count() == count


def test_api_key_changes_are_attributed_to_the_key_prefix(api_client, fake_embedder):
    from ratiba.models import ApiKey

    client, headers = api_client
    prefix = ApiKey.objects.get().prefix
    created = post_json(client, "/api/v1/snippets/", {"key": "parking", "title": "Parking",
                                                      "body": "Free parking.", "category": "facility"}, headers)
    assert created.status_code == 201
    assert post_json(client, "/api/v1/snippets/parking/", {"body": "Paid parking."}, headers,
                     method="patch").status_code == 200
    assert client.post("/api/v1/snippets/parking/versions/1/activate/", **headers).status_code == 200
    actor = f"api_key:{prefix}"
    assert _entries() == [
        ("created", 1, actor, {}), ("activated", 1, actor, {"previous_active": None}),
        ("created", 2, actor, {}), ("activated", 2, actor, {"previous_active": 1}),
        ("activated", 1, actor, {"previous_active": 2}),
    ]
    assert set(AuditEntry.objects.values_list("user_id", flat=True)) == {None}


def test_the_admin_deactivate_action_records_the_owner(tenant, client_for, fake_embedder):
    owner = make_user("owner", superuser=True)
    version = make_version("parking")
    client = client_for(tenant)
    client.force_login(owner)
    response = client.post("/admin/knowledge/snippet/", {"action": "deactivate_selected",
                                                          "_selected_action": [version.snippet_id]})
    assert response.status_code == 302
    last = AuditEntry.objects.order_by("-id").first()
    assert (last.action, last.key, last.version, last.actor, last.user_id) == (
        "deactivated", "parking", 1, "user:owner", owner.pk)


def test_seed_files_are_recorded_as_the_seed_command(tenant, fake_embedder, tmp_path: Path):
    seed = tmp_path / "tiny.yaml"
    seed.write_text("snippets:\n  - {key: parking, category: facility, role: retrieved, title: Parking, body: Free parking.}\n")
    call_command("seed_knowledge", str(seed), "--tenant", tenant.schema_name, stdout=io.StringIO())
    connection.set_tenant(tenant)  # the command leaves the connection on the public schema
    assert _entries() == [("created", 1, "command:seed_knowledge", {}),
                          ("activated", 1, "command:seed_knowledge", {"previous_active": None})]


def test_an_entry_that_cannot_be_written_undoes_the_activation(tenant, fake_embedder, monkeypatch):
    first = make_version("parking", body="Free parking.")
    second = services.snippet_edit(key="parking", changes={"body": "Paid parking."}, activate=False)
    count = AuditEntry.objects.count()

    def refuse(**kwargs):
        raise DatabaseError("audit table unavailable")

    monkeypatch.setattr(AuditEntry.objects, "create", refuse)
    with pytest.raises(DatabaseError):
        services.snippet_version_activate(version=second)
    monkeypatch.undo()
    active = list(SnippetVersion.objects.filter(key="parking", is_active=True).values_list("pk", flat=True))
    assert active == [first.pk] and AuditEntry.objects.count() == count


def test_the_log_is_append_only_in_the_database(tenant, fake_embedder):
    make_version("parking")
    entry = AuditEntry.objects.first()
    for change in (lambda: AuditEntry.objects.filter(pk=entry.pk).update(actor="someone else"),
                   lambda: AuditEntry.objects.filter(pk=entry.pk).delete()):
        with pytest.raises(DatabaseError, match="append-only"):
            with transaction.atomic():
                change()
    entry.refresh_from_db()
    assert entry.actor == "system"


def test_the_admin_shows_the_log_read_only(tenant, client_for, fake_embedder):
    owner = make_user("owner", superuser=True)
    make_version("parking", created_by=owner)
    entry = AuditEntry.objects.filter(action="activated").get()
    client = client_for(tenant)
    client.force_login(owner)
    listing = client.get("/admin/knowledge/auditentry/")
    assert listing.status_code == 200
    page = listing.content.decode()
    assert "<code>parking</code>" in page and "user:owner" in page and "Activated" in page
    detail = client.get(f"/admin/knowledge/auditentry/{entry.pk}/change/")
    assert detail.status_code == 200 and 'name="_save"' not in detail.content.decode()
    assert client.get("/admin/knowledge/auditentry/add/").status_code == 403
    assert client.post(f"/admin/knowledge/auditentry/{entry.pk}/delete/", {"post": "yes"}).status_code == 403
    assert client.post(f"/admin/knowledge/auditentry/{entry.pk}/change/",
                       {"actor": "forged"}).status_code == 403
    entry.refresh_from_db()
    assert entry.actor == "user:owner"
