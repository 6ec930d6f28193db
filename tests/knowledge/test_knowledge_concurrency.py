"""Two real connections activating two versions of one key at once never leave zero or two active."""
from __future__ import annotations

import threading

from django.db import connection, connections
from django_tenants.utils import schema_context

from knowledge.models import SnippetVersion
from knowledge.services import snippet_edit, snippet_version_activate
from tests.support.builders import make_version


def _activate_in_thread(schema: str, version_id: int, barrier: threading.Barrier, errors: list) -> None:
    try:
        with schema_context(schema):
            version = SnippetVersion.objects.get(pk=version_id)
            barrier.wait(timeout=10)
            snippet_version_activate(version=version)
    except Exception as exc:  # noqa: BLE001 — reported to the test thread
        errors.append(exc)
    finally:
        connections.close_all()  # this thread's own connection


def test_concurrent_activations_leave_exactly_one_active(committed):
    schema = committed.schema_name
    first = make_version("parking", body="Free parking.")
    second = snippet_edit(key="parking", changes={"body": "Paid parking."})
    for round_number in range(6):
        barrier = threading.Barrier(2)
        errors: list = []
        threads = [threading.Thread(target=_activate_in_thread, args=(schema, vid, barrier, errors))
                   for vid in (first.pk, second.pk)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert errors == []
        active = list(SnippetVersion.objects.filter(key="parking", is_active=True).values_list("version", flat=True))
        assert len(active) == 1, f"round {round_number}: active versions {active}"
    assert connection.schema_name == schema
