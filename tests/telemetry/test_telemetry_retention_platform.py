"""Retention pruning, and the platform overview aggregated per tenant into the public schema."""
from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import override_settings
from django.utils import timezone

from ratiba.models import TenantHealthSnapshot
from telemetry.digest import gap_questions_group, telemetry_prune
from telemetry.models import Event, GapGroup, RetrievalLog, RetrievalLogSection
from telemetry.platform import platform_overview, platform_snapshot_take
from telemetry.services import event_record, retrieval_log_record
from telemetry.tasks import platform_snapshot, prune_all

NOW = timezone.now()


def _old_and_new():
    for days in (100, 91, 89, 1):
        retrieval_log_record(created_at=NOW - dt.timedelta(days=days), retrieved_sections=[{"key": f"k{days}"}])
        event = event_record(name="refusal", payload={"days": days})
        Event.objects.filter(pk=event.pk).update(created_at=NOW - dt.timedelta(days=days))


def test_rows_older_than_the_retention_are_pruned(tenant):
    _old_and_new()
    result = telemetry_prune(days=90, now=NOW)
    assert (result.logs, result.sections, result.events) == (2, 2, 2)
    assert sorted(RetrievalLogSection.objects.values_list("key", flat=True)) == ["k1", "k89"]
    assert RetrievalLog.objects.count() == 2
    assert sorted(Event.objects.values_list("payload__days", flat=True)) == [1, 89]


@override_settings(TELEMETRY_RETENTION_DAYS=30)
def test_the_retention_comes_from_settings(tenant):
    _old_and_new()
    assert telemetry_prune(now=NOW).logs == 3


def test_events_behind_a_gap_group_are_kept(tenant):
    event = Event.objects.create(name="knowledge_gap_candidate",
                                 payload={"question": "Is there parking?", "refused": True})
    Event.objects.filter(pk=event.pk).update(created_at=NOW - dt.timedelta(days=200))
    gap_questions_group()
    assert telemetry_prune(days=90, now=NOW).events == 0
    assert GapGroup.objects.get().count == 1


def test_the_prune_beat_task_prunes_every_tenant_in_its_own_schema(tenant, other_tenant):
    _old_and_new()
    connection.set_tenant(other_tenant)
    _old_and_new()
    connection.set_schema_to_public()
    schemas = prune_all.delay().get()
    assert {"test_tenant", "test_other"} <= set(schemas)
    for each in (tenant, other_tenant):
        connection.set_tenant(each)
        assert RetrievalLog.objects.count() == 2
    connection.set_tenant(tenant)


def test_the_snapshot_aggregates_each_tenant_inside_its_schema(tenant, other_tenant):
    for _ in range(3):
        retrieval_log_record(intent="other", retrieved_sections=[{"key": "a", "tokens": 1000}])
    retrieval_log_record(intent="other", refusal_reason="no_relevant_context")
    connection.set_tenant(other_tenant)
    retrieval_log_record(intent="other", retrieved_sections=[{"key": "b", "tokens": 1000}])
    connection.set_schema_to_public()
    assert platform_snapshot.delay().get() >= 2
    mine = TenantHealthSnapshot.objects.get(tenant=tenant)
    theirs = TenantHealthSnapshot.objects.get(tenant=other_tenant)
    assert (mine.turns, mine.refusals, mine.refusal_rate, mine.empty_rate, mine.state) == (4, 1, 25.0, 25.0, "alert")
    assert {a["metric"] for a in mine.alerts} >= {"empty_rate", "trivial_rate"}
    assert (theirs.turns, theirs.refusals, theirs.refusal_rate) == (1, 0, 0.0)
    # Taking it again the same day updates the row.
    platform_snapshot_take()
    assert TenantHealthSnapshot.objects.filter(tenant=tenant).count() == 1


def test_the_overview_reads_only_the_public_table(tenant, other_tenant):
    from django.test.utils import CaptureQueriesContext

    connection.set_schema_to_public()
    platform_snapshot_take()
    with CaptureQueriesContext(connection) as queries:
        rows = platform_overview()
    sql = [q["sql"] for q in queries.captured_queries if not q["sql"].upper().startswith("SET ")]
    assert len(sql) == 2
    assert all("telemetry_" not in q and "knowledge_" not in q and "test_tenant" not in q for q in sql)
    assert {t.schema_name for t, s in rows} >= {"test_tenant", "test_other"}


@pytest.fixture
def platform_staff(tenants, db):
    connection.set_schema_to_public()
    return get_user_model().objects.create_user(username="platform", password=None, is_staff=True)


def test_platform_staff_see_the_overview_on_the_public_host(platform_staff, client_for):
    platform_snapshot_take()
    client = client_for("localhost")
    client.force_login(platform_staff)
    page = client.get("/platform/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-schema="test_tenant"' in html and 'data-schema="test_other"' in html


def test_the_overview_needs_a_platform_staff_login(platform_staff, client_for):
    client = client_for("localhost")
    assert client.get("/platform/")["Location"].startswith("/admin/login/")
    client.force_login(get_user_model().objects.create_user(username="nobody", password=None, is_staff=False))
    assert client.get("/platform/").status_code == 302


def test_the_overview_is_not_served_on_a_tenant_host(tenant_client):
    assert tenant_client.get("/platform/").status_code == 404


def test_the_hourly_snapshot_keeps_thirty_days_of_rollups_warm(tenant):
    from telemetry.models import RetrievalDay

    connection.set_schema_to_public()
    platform_snapshot_take()
    connection.set_tenant(tenant)
    days = sorted(RetrievalDay.objects.values_list("day", flat=True))
    assert len(days) in (29, 30)  # today is never kept; yesterday only once it is sealed
    assert days[-1] < timezone.localdate()


def test_pruning_drops_kept_rollups_older_than_the_retention(tenant):
    from telemetry.models import RetrievalDay

    today = NOW.date()
    for age in (120, 91, 10):
        RetrievalDay.objects.create(day=today - dt.timedelta(days=age), zone="UTC", data={})
    telemetry_prune(days=90, now=NOW)
    assert list(RetrievalDay.objects.values_list("day", flat=True)) == [today - dt.timedelta(days=10)]
