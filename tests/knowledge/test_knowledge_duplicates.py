"""A second snippet with a key, or service with a name, is refused by the unique index inside the writer's
transaction, even when the first is not committed yet (a look-before would let both through)."""
from __future__ import annotations

import json
import threading
import time

import pytest
from django.db import connection, connections, transaction
from django_tenants.utils import schema_context

from knowledge.models import Service, SnippetVersion
from knowledge.services import (ServiceExists, SnippetExists, service_create, service_update, snippet_create,
                                snippet_version_create)


def _locks_waited() -> int:
    with connection.cursor() as cursor:
        cursor.execute("select count(*) from pg_stat_activity where datname = current_database() "
                       "and wait_event_type = 'Lock'")
        return cursor.fetchone()[0]


def _race_an_open_transaction(schema: str, first, second):
    """Run `first` in a transaction held open, then `second` on another connection; commit `first` only once
    `second` waits on its lock. Returns what `second` returned (or raised)."""
    inserted, release = threading.Event(), threading.Event()
    outcome: dict = {}

    def hold():
        try:
            with schema_context(schema), transaction.atomic():
                first()
                inserted.set()
                release.wait(timeout=20)
        except Exception as exc:  # noqa: BLE001 - reported to the test thread
            outcome["first"] = exc
            inserted.set()
        finally:
            connections.close_all()

    def race():
        try:
            with schema_context(schema):
                outcome["second"] = second()
        except Exception as exc:  # noqa: BLE001 - reported to the test thread
            outcome["second"] = exc
        finally:
            connections.close_all()

    holder, racer = threading.Thread(target=hold), threading.Thread(target=race)
    holder.start()
    assert inserted.wait(timeout=20)
    racer.start()
    deadline = time.monotonic() + 20
    while _locks_waited() == 0 and racer.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    release.set()
    holder.join(timeout=30)
    racer.join(timeout=30)
    assert "first" not in outcome, outcome
    return outcome["second"]


def _snippet(key: str, body: str):
    return lambda: snippet_create(key=key, title="Parking", body=body, category="facility", role="retrieved",
                                  queue_embedding=False)


@pytest.fixture
def api_headers(committed):
    from ratiba.models import ApiKey
    from ratiba.services import api_key_issue

    issued = api_key_issue(tenant=committed, label="duplicates")
    yield {"HTTP_AUTHORIZATION": f"Bearer {issued.raw}"}
    ApiKey.objects.filter(pk=issued.api_key.pk).delete()


def test_an_api_create_racing_an_uncommitted_create_of_its_key_is_a_409(committed, client_for, api_headers):
    def post():
        response = client_for(committed).post(
            "/api/v1/snippets/", data=json.dumps({"key": "parking", "title": "P", "body": "Second writer.",
                                                  "category": "facility"}),
            content_type="application/json", **api_headers)
        return response.status_code, response.json()

    answer = _race_an_open_transaction(committed.schema_name, _snippet("parking", "First writer."), post)
    assert answer == (409, {"error": {"code": "snippet_exists", "message": "A snippet with this key already "
                                                                           "exists: PATCH it to save a new version."}})
    assert list(SnippetVersion.objects.values_list("key", "version", "body")) == [("parking", 1, "First writer.")]


def test_an_api_create_racing_an_uncommitted_service_of_its_name_is_a_409(committed, client_for, api_headers):
    def post():
        response = client_for(committed).post(
            "/api/v1/services/", data=json.dumps({"name": "Facial", "price": "2500"}),
            content_type="application/json", **api_headers)
        return response.status_code, response.json()

    answer = _race_an_open_transaction(committed.schema_name, lambda: service_create(name="Facial", price="2000"),
                                       post)
    assert answer == (409, {"error": {"code": "service_exists", "message": "A service with this name exists: "
                                                                           "PATCH it."}})
    assert list(Service.objects.values_list("name", "price")) == [("Facial", 2000)]


def test_a_rename_racing_an_uncommitted_service_of_that_name_is_refused_on_name(committed):
    shave = service_create(name="Shave", price="350")
    answer = _race_an_open_transaction(committed.schema_name, lambda: service_create(name="Facial", price="2000"),
                                       lambda: service_update(service=shave, changes={"name": "Facial"}))
    assert answer.message_dict == {"name": ["A service called 'Facial' already exists."]}
    assert sorted(Service.objects.values_list("name", flat=True)) == ["Facial", "Shave"]
    assert shave.name == "Shave"


def test_a_create_of_a_taken_key_is_refused_and_saves_nothing(tenant):
    snippet_version_create(key="parking", title="Parking", body="Free parking.", category="facility",
                           role="retrieved", queue_embedding=False)
    with pytest.raises(SnippetExists):
        _snippet("parking", "Paid parking.")()
    with pytest.raises(ServiceExists):
        service_create(name="Facial", price="2000")
        service_create(name="Facial", price="2500")
    assert list(SnippetVersion.objects.values_list("version", "body")) == [(1, "Free parking.")]
    assert list(Service.objects.values_list("name", "price")) == [("Facial", 2000)]
