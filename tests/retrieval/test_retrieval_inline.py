"""Inline mode: eligibility, no narrowing by intent, newest first, caps and the knowledge_overflow event."""
from __future__ import annotations

import datetime as dt

import pytest
from retrieval_kb import kb, mode  # noqa: F401 (fixtures)
from django.utils import timezone

from knowledge.retrieval import fetch_snippets
from knowledge.retrieval.config import tenant_today
from telemetry.models import Event

pytestmark = pytest.mark.django_db


def keys(result):
    return sorted(snippet.key for snippet in result.snippets)


def overflow_events():
    return list(Event.objects.filter(name="knowledge_overflow").values_list("payload", flat=True))


ALL_SPA_KEYS = ["cancellation", "gift_vouchers", "holiday_hours", "location", "massage_styles", "parking"]


@pytest.mark.parametrize("intent", ["services", "hours", "booking", "cancel", "reschedule", "other"])
def test_the_intent_never_narrows_what_inline_returns(kb, mode, intent):
    kb.spa()
    mode("inline")
    result = fetch_snippets(intent, query="Is there a fee if I cancel late?", channel="chat")
    baseline = fetch_snippets("other", query="Is there a fee if I cancel late?", channel="chat")
    assert keys(result) == ALL_SPA_KEYS
    assert [s.key for s in result.snippets] == [s.key for s in baseline.snippets]
    # The policy snippet answers it, whatever the classifier made of the question.
    assert result.snippets[0].key == "cancellation"


def test_other_intent_gets_every_category_ranked_by_relevance(kb, mode):
    kb.spa()
    mode("inline")
    result = fetch_snippets("other", query="Is there parking?", channel="chat")
    assert keys(result) == ["cancellation", "gift_vouchers", "holiday_hours", "location", "massage_styles", "parking"]
    assert result.snippets[0].key == "parking"
    assert {snippet.match_type for snippet in result.snippets} == {"inline"}
    assert result.snippets[0].score > result.snippets[-1].score
    assert overflow_events() == []
    assert result.overflowed is False


def test_limit_cap_keeps_the_newest_and_records_overflow(kb, mode):
    kb.spa()
    mode("inline")
    result = fetch_snippets("other", query="Is there parking?", channel="chat", limit=2)
    # The two most recently saved snippets, whatever their relevance.
    assert keys(result) == ["gift_vouchers", "holiday_hours"]
    assert result.overflowed is True
    assert overflow_events() == [{"intent": "other", "returned": 2, "total": 6}]


def test_character_cap_stops_before_the_snippet_that_would_pass_it(kb, mode):
    first = kb(key="a_first", title="A", body="x" * 100)
    second = kb(key="b_second", title="B", body="y" * 100)
    mode("inline")
    result = fetch_snippets("other", query="anything about x", channel="chat", max_chars=150)
    assert keys(result) == [second.key]
    assert overflow_events() == [{"intent": "other", "returned": 1, "total": 2}]
    assert first.key not in keys(result)


def test_drafts_guardrails_behaviour_other_channels_and_expired_are_never_returned(kb, mode):
    today = tenant_today()
    kb(key="ok_one", title="Parking", body="Parking in the basement.")
    kb(key="draft_one", title="Parking draft", body="Parking draft text.", status="draft")
    kb(key="guard_one", title="Parking guardrail", body="Never promise parking.", role="guardrail")
    kb(key="behave_one", title="Parking voice", body="Talk about parking warmly.", role="behaviour")
    kb(key="email_only", title="Parking by email", body="Parking details for email.", channels=["email"])
    kb(key="expired_one", title="Old parking", body="Parking was free.", valid_until=today - dt.timedelta(days=1))
    kb(key="future_one", title="New parking", body="Parking will cost.", valid_from=today + dt.timedelta(days=1))
    kb(key="today_one", title="Parking today", body="Parking valid today.", valid_from=today, valid_until=today)
    for run_mode in ("inline", "hybrid"):
        mode(run_mode)
        result = fetch_snippets("other", query="parking", channel="chat")
        assert keys(result) == ["ok_one", "today_one"], run_mode


def test_an_old_version_is_never_returned_after_a_new_one_is_activated(kb, mode):
    kb(key="parking", title="Parking", body="Parking costs 100 shillings.")
    kb(key="parking", title="Parking", body="Parking is free for guests.")
    mode("inline")
    result = fetch_snippets("other", query="parking", channel="chat")
    assert [(s.key, s.version) for s in result.snippets] == [("parking", 2)]
    assert "free" in result.snippets[0].body


def test_validity_uses_the_tenants_time_zone(kb, mode, tenant, monkeypatch):
    # 20:00 UTC on 1 June is already 2 June in Kiritimati (UTC+14), still 1 June in UTC.
    monkeypatch.setattr(timezone, "now", lambda: dt.datetime(2026, 6, 1, 20, 0, tzinfo=dt.timezone.utc))
    kb(key="june_second", title="Holiday parking", body="Parking closed.", valid_from=dt.date(2026, 6, 2))
    mode("inline")
    monkeypatch.setattr(tenant, "timezone", "UTC")
    assert keys(fetch_snippets("other", query="parking", channel="chat")) == []
    monkeypatch.setattr(tenant, "timezone", "Pacific/Kiritimati")
    assert keys(fetch_snippets("other", query="parking", channel="chat")) == ["june_second"]
