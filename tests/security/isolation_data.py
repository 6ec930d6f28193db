"""Tenant B's distinctive data, built through B's own API and services, for the isolation suite.

Everything B stores carries SECRET (in titles, bodies, messages, names, notes, user names): if SECRET
ever appears in a response on tenant A's host, B's data leaked. Identifiers the probes *send* (keys,
collection names) carry ID_MARK instead, so an error message that echoes the request cannot be taken
for a leak.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.db import connection
from django_tenants.utils import schema_context

SECRET = "wildebeest-umbrella-9431"
ID_MARK = "qzxb7"
PASSWORD = "correct-horse-battery-staple-41"
SPECIAL_DAY = "2026-12-24"


@dataclass
class OtherTenantData:
    """What B holds, by identifier, so probes can guess exactly the ids and keys that exist in B."""

    api_key: str
    key_prefix: str
    username: str
    snippet_keys: list[str]
    session_id: str
    turn_id: str
    collection: str
    document_id: int
    service_id: int
    special_day: str
    digest_day: str
    pks: dict[str, list[int]] = field(default_factory=dict)  # model label -> B's primary keys

    def path_values(self) -> dict[str, list]:
        """Candidate values for URL and body parameters, by parameter name: B's real identifiers."""
        return {
            "key": self.snippet_keys, "name": [self.collection], "collection": [self.collection],
            "document_id": [self.document_id], "service_id": [self.service_id], "session_id": [self.session_id],
            "date": [self.special_day], "day": [self.digest_day], "number": [1, 2], "version": [1, 2],
            "pk": self.pks.get("telemetry.GapGroup", [1]),
            "collection_id": self.pks.get("knowledge.Collection", [1]),
            "object_id": sorted({pk for pks in self.pks.values() for pk in pks})[:3] or [1],
        }


def _api(client, method: str, path: str, key: str, payload: dict | None = None):
    response = getattr(client, method)(path, data=payload or {}, content_type="application/json",
                                       HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code < 300, (path, response.status_code, response.content[:300])
    return response


def seed_other_tenant(other, client_for) -> OtherTenantData:
    """Fill tenant B (`other`) with snippets, versions, facts, a collection, chats, gaps and a digest."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from knowledge.collections.services import document_ingest
    from knowledge.services import smoke_test_upsert
    from ratiba.services import api_key_issue
    from telemetry.digest import daily_digest_run, gap_digest_refresh

    issued = api_key_issue(tenant=other, label=f"key {SECRET}")
    key = issued.raw
    client = client_for(other)
    keys = [f"{ID_MARK}-parking", f"{ID_MARK}-gift-cards"]
    _api(client, "post", "/api/v1/snippets/", key, {
        "key": keys[0], "title": f"Parking ({SECRET})", "category": "facility",
        "body": f"Guests of {SECRET} park free behind the salon; the gate code is {SECRET}-gate.",
        "notes": f"internal note {SECRET}", "tags": [f"tag-{SECRET}"]})
    _api(client, "patch", f"/api/v1/snippets/{keys[0]}/", key,
         {"body": f"Guests of {SECRET} park free behind the salon for two hours ({SECRET}-v2)."})
    _api(client, "post", "/api/v1/snippets/", key, {
        "key": keys[1], "title": f"Gift cards {SECRET}", "category": "policy",
        "body": f"Gift cards from {SECRET} are valid for a year."})
    _api(client, "post", "/api/v1/snippets/", key, {
        "key": f"{ID_MARK}-voice", "title": f"Voice {SECRET}", "category": "general", "role": "behaviour",
        "body": f"You are the {SECRET} receptionist; keep answers short."})
    service = _api(client, "post", "/api/v1/services/", key, {
        "name": f"Hot stones {SECRET}", "description": f"Only at {SECRET}.", "duration_minutes": 75,
        "price": "6100.00"}).json()
    _api(client, "put", "/api/v1/hours/weekly/", key, {"mon": ["08:00-18:00"], "sat": ["10:00-14:00"]})
    _api(client, "put", f"/api/v1/hours/special/{SPECIAL_DAY}/", key, {"hours": [], "note": f"Closed {SECRET}"})
    collection = f"{ID_MARK}-menu"
    _api(client, "post", "/api/v1/collections/", key, {"name": collection, "description": f"Menu {SECRET}"})
    upload = client.post(f"/api/v1/collections/{collection}/documents/", HTTP_AUTHORIZATION=f"Bearer {key}",
                         data={"file": SimpleUploadedFile(f"menu-{SECRET}.md", (
                             f"# Menu {SECRET}\n\nThe {SECRET} facial costs KES 7,300.\n").encode(),
                             content_type="text/markdown")})
    assert upload.status_code == 201, upload.content[:300]
    document_id = upload.json()["id"]
    turns = [_api(client, "post", "/api/v1/chat/turns/", key, {"message": message}).json() for message in (
        f"Where can I park at {SECRET}?", f"Do you groom {SECRET} dogs on the moon?",
        f"I want to book hot stones tomorrow at 10 for {SECRET}, call 0712 345 678")]
    with schema_context(other.schema_name):
        document_ingest(document_id=document_id)
        smoke_test_upsert(query=f"parking {SECRET}", expected_keys=[keys[0]])
        user = get_user_model().objects.create_superuser(username=f"owner-{SECRET}", password=PASSWORD,
                                                         email=f"{SECRET}@example.com")
        gap_digest_refresh()
        digest = daily_digest_run(send=False)
        pks = _primary_keys()
    connection.set_schema_to_public()
    return OtherTenantData(api_key=key, key_prefix=issued.api_key.prefix, username=user.username,
                           snippet_keys=keys, session_id=turns[0]["session_id"], turn_id=turns[0]["turn_id"],
                           collection=collection, document_id=document_id, service_id=service["id"],
                           special_day=SPECIAL_DAY, digest_day=digest.day.isoformat(), pks=pks)


def _primary_keys() -> dict[str, list[int]]:
    from django.apps import apps

    pks = {}
    for label in ("knowledge", "conversations", "telemetry", "auth"):
        for model in apps.get_app_config(label).get_models():
            values = list(model.objects.order_by("pk").values_list("pk", flat=True)[:50])
            if values and all(isinstance(value, int) for value in values):
                pks[model._meta.label] = values
    return pks


def tenant_fingerprint(schema: str) -> dict[str, list]:
    """Every row of a tenant's own tables (minus vectors), to prove nothing in it changed."""
    from django.apps import apps

    snapshot = {}
    with schema_context(schema):
        for label in ("knowledge", "conversations", "telemetry", "auth", "sessions"):
            for model in apps.get_app_config(label).get_models():
                fields = [f.attname for f in model._meta.concrete_fields
                          if f.attname not in ("embedding", "search_vector", "last_login")]
                snapshot[model._meta.label] = [tuple(str(v) for v in row) for row in
                                               model.objects.order_by("pk").values_list(*fields)]
    return snapshot


def body_text(response) -> str:
    """A response's full body as text (streamed responses are consumed)."""
    if getattr(response, "streaming", False):
        data = b"".join(response.streaming_content)
    else:
        data = response.content
    return data.decode("utf-8", errors="replace")


def leaked(text: str, *, sent: str = "") -> list[str]:
    """B's markers found in `text`; ID_MARK only counts when the request did not carry it itself."""
    lowered = text.lower()
    found = [SECRET] if SECRET in lowered else []
    if ID_MARK in lowered and ID_MARK not in sent.lower():
        found.append(ID_MARK)
    return found
