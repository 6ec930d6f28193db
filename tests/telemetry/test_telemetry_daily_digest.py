"""The daily digest task: built in each tenant's own schema, kept, and mailed to that tenant's staff."""
from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.utils import timezone

from knowledge.models import Snippet, SnippetVersion
from telemetry.digest import daily_digest_run
from telemetry.models import Digest, Event
from telemetry.services import retrieval_log_record
from telemetry.tasks import daily_digest, daily_digest_all


def _staff(username, email, *, staff=True, active=True):
    return get_user_model().objects.create_user(username=username, email=email, password=None, is_staff=staff,
                                                is_active=active)


def _gap(question, language="en"):
    return Event.objects.create(name="knowledge_gap_candidate", payload={
        "question": question, "refused": True, "refusal_reason": "no_relevant_context", "snippets_available": 0,
        "language": language})


def _version(key, **fields):
    snippet = Snippet.objects.create(key=key)
    return SnippetVersion.objects.create(snippet=snippet, key=key, version=1, title=key.title(), body="...",
                                         is_active=True, **fields)


@pytest.fixture
def busy_day(tenant):
    _staff("owner", "owner@spa.test")
    _staff("manager", "manager@spa.test")
    _staff("reception", "reception@spa.test", staff=False)
    _staff("former", "former@spa.test", active=False)
    _staff("nomail", "")
    for _ in range(3):
        retrieval_log_record(intent="other", message_preview="Do you sell cars?", refusal_reason="off_topic",
                             core_tokens=3000)
    retrieval_log_record(intent="other", message_preview="Is there parking?", refusal_reason="no_relevant_context",
                         core_tokens=3000)
    _gap("Is there parking?")
    _gap("Where can I park?")
    _gap("Je, kuna wifi?", language="sw")
    today = timezone.now().date()
    _version("christmas-hours", valid_until=today + dt.timedelta(days=5), last_reviewed_at=today)
    _version("old-prices", last_reviewed_at=today - dt.timedelta(days=120))
    _version("fresh", last_reviewed_at=today)
    return tenant


def test_the_digest_is_kept_and_mailed_to_active_staff_with_email(busy_day, mailoutbox):
    digest = daily_digest_run()
    assert len(mailoutbox) == 1
    mail = mailoutbox[0]
    assert sorted(mail.to) == ["manager@spa.test", "owner@spa.test"]
    assert mail.subject == digest.subject
    assert "2 new unanswered question group(s)" in mail.subject
    assert mail.alternatives and mail.alternatives[0][1] == "text/html"
    assert "Where can I park?" in mail.body or "Is there parking?" in mail.body
    assert "off_topic: 3" in mail.body
    assert '"do you sell cars?" (3x)' in mail.body
    assert "christmas-hours v1 Christmas-Hours: expires" in mail.body
    assert "old-prices v1 Old-Prices: not reviewed for 90 days" in mail.body
    assert "fresh v1" not in mail.body
    assert "http://tenant.test.localhost:8000/telemetry/gaps/" in mail.body
    stored = Digest.objects.get()
    assert stored.recipients == ["manager@spa.test", "owner@spa.test"] and stored.sent_at is not None
    content = stored.content
    assert content["turns"] == 4 and content["refusals"] == 4
    assert content["refusal_reasons"] == [{"reason": "off_topic", "count": 3},
                                          {"reason": "no_relevant_context", "count": 1}]
    assert [g["count"] for g in content["new_groups"]] == [2, 1]
    assert {a["metric"] for a in content["alerts"]} >= {"empty_rate", "avg_retrieved_tokens"}
    assert [(r["key"], r["reason"]) for r in content["review"]] == [("christmas-hours", "expiring"),
                                                                   ("old-prices", "unreviewed")]


def test_running_twice_in_a_day_mails_once(busy_day, mailoutbox):
    first = daily_digest_run()
    second = daily_digest_run()
    assert first.pk == second.pk
    assert len(mailoutbox) == 1
    assert Digest.objects.count() == 1


def test_no_staff_means_kept_but_not_mailed(tenant, mailoutbox):
    digest = daily_digest_run()
    assert mailoutbox == []
    assert digest.sent_at is None and digest.recipients == []
    assert "0 new unanswered question group(s), 0 health alert(s)" in digest.subject


def test_the_kept_digest_is_viewable_in_the_browser(busy_day, client_for):
    digest = daily_digest_run()
    client = client_for(busy_day)
    client.force_login(get_user_model().objects.get(username="owner"))
    page = client.get(f"/telemetry/digests/{digest.day.isoformat()}/")
    assert page.status_code == 200
    assert "christmas-hours" in page.content.decode()
    assert digest.subject in client.get("/telemetry/digests/").content.decode().replace("&#x27;", "'")


def test_the_digest_task_runs_in_the_schema_it_was_sent_from(busy_day, other_tenant, mailoutbox):
    connection.set_tenant(other_tenant)
    _staff("other-owner", "owner@other.test")
    _gap("Do you do nails?")
    connection.set_schema_to_public()
    schemas = daily_digest_all.delay().get()
    assert {"test_tenant", "test_other"} <= set(schemas)
    by_recipient = {tuple(sorted(mail.to)): mail for mail in mailoutbox}
    assert "Do you do nails?" in by_recipient[("owner@other.test",)].body
    assert "Do you do nails?" not in by_recipient[("manager@spa.test", "owner@spa.test")].body
    assert "park" in by_recipient[("manager@spa.test", "owner@spa.test")].body.lower()
    connection.set_tenant(other_tenant)
    assert Digest.objects.get().content["schema"] == "test_other"
    connection.set_tenant(busy_day)
    assert Digest.objects.get().content["schema"] == "test_tenant"


def test_the_per_tenant_task_reports_its_schema(busy_day, mailoutbox):
    result = daily_digest.delay().get()
    assert result["schema"] == "test_tenant"
    assert result["recipients"] == ["manager@spa.test", "owner@spa.test"] and result["sent"] is True


def test_the_per_tenant_task_refuses_the_public_schema(tenants, db):
    connection.set_schema_to_public()
    with pytest.raises(RuntimeError, match="tenant's schema"):
        daily_digest.apply().get()


def test_the_beat_schedule_runs_the_digest_daily():
    from django.conf import settings

    entry = settings.CELERY_BEAT_SCHEDULE["telemetry-daily-digest"]
    assert entry["task"] == "telemetry.daily_digest_all"
    assert entry["schedule"].hour == {settings.TELEMETRY_DIGEST_HOUR_UTC}
