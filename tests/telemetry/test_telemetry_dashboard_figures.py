"""Every dashboard figure, computed from known log rows (worked out by hand in the comments)."""
from __future__ import annotations

import datetime as dt

import pytest

from factories_telemetry import NOW, known_turns
from knowledge.models import RetrievalSettings, Role, Snippet, SnippetVersion, Status
from telemetry.selectors import retrieval_health


def _active(key: str, *, role: str = Role.RETRIEVED, status: str = Status.ACCEPTED, active: bool = True):
    snippet = Snippet.objects.create(key=key)
    return SnippetVersion.objects.create(snippet=snippet, key=key, version=1, title=key.upper(), body="...",
                                         role=role, status=status, is_active=active, token_count=42)


@pytest.fixture
def health(tenant):
    known_turns()
    for key in ("a", "b", "c", "d"):
        _active(key)
    _active("e", active=False)
    _active("f", status=Status.DRAFT)
    _active("g", role=Role.GUARDRAIL)
    RetrievalSettings.objects.create(mode="auto", current_mode="hybrid")
    return retrieval_health(days=7, now=NOW)


def test_the_window_is_the_last_seven_local_days(health):
    assert (health.first_day, health.last_day, health.timezone) == (dt.date(2026, 3, 4), dt.date(2026, 3, 10), "UTC")
    assert [point.day for point in health.daily] == [dt.date(2026, 3, d) for d in range(4, 11)]


def test_totals_follow_the_sop_queries(health):
    t = health.totals
    assert t.turns == 6
    assert t.empty_rate == 16.7  # 1 of 6 (the refused turn; the trivial one is not empty)
    assert t.fallback_rate == 16.7
    assert t.trivial_rate == 16.7
    assert t.avg_retrieved_tokens == 216.7  # (500 + 300 + 0 + 100 + 0 + 400) / 6
    assert t.p95_prompt_tokens == 3475.0  # continuous p95 of 2100,3000,3000,3300,3400,3500
    assert t.avg_embedding_ms == 40.0  # (20+40+60+30+50)/5, trivial turn excluded
    assert t.avg_retrieval_ms == 20.0  # (10+30+20+15+25)/5
    assert (t.refusals, t.refusal_rate) == (1, 16.7)
    assert t.cost_usd == 0.006


def test_each_figure_is_judged_against_its_target(health):
    states = {f.metric: (f.value, f.state) for f in health.figures}
    assert states == {
        "empty_rate": (16.7, "alert"),
        "fallback_rate": (16.7, "warn"),
        "avg_retrieved_tokens": (216.7, "alert"),
        "trivial_rate": (16.7, "ok"),
        "p95_prompt_tokens": (3475.0, "ok"),
        "avg_embedding_ms": (40.0, "ok"),
        "avg_retrieval_ms": (20.0, "ok"),
    }
    assert health.state == "alert"


def test_the_daily_series_has_every_day_including_empty_ones(health):
    by_day = {point.day.day: point.figures for point in health.daily}
    assert [by_day[d].turns for d in range(4, 11)] == [0, 0, 0, 1, 0, 2, 3]
    today = by_day[10]
    assert (today.empty_rate, today.fallback_rate, today.trivial_rate) == (0.0, 33.3, 33.3)
    assert today.avg_retrieved_tokens == 266.7  # (500 + 300 + 0) / 3
    assert today.p95_prompt_tokens == 3480.0  # 3300 + 0.9 * 200
    assert (today.avg_embedding_ms, today.avg_retrieval_ms, today.cost_usd) == (30.0, 20.0, 0.003)
    yesterday = by_day[9]
    assert (yesterday.refusals, yesterday.refusal_rate, yesterday.empty_rate) == (1, 50.0, 50.0)
    quiet = by_day[5]
    assert (quiet.turns, quiet.empty_rate, quiet.p95_prompt_tokens, quiet.cost_usd) == (0, None, None, 0.0)


def test_most_retrieved_sections_with_average_similarity(health):
    assert [(s.key, s.count, s.avg_similarity, s.latest_version) for s in health.top_sections] == [
        ("a", 3, 0.8, 2), ("c", 2, 0.45, 1), ("b", 1, 0.6, 1)]


def test_never_retrieved_lists_active_retrieved_sections_unused_for_30_days(health):
    # b was retrieved 8 days ago (outside the 7-day window, inside 30); e inactive, f draft, g a guardrail.
    assert [(s.key, s.version, s.title, s.token_count) for s in health.never_retrieved] == [("d", 1, "D", 42)]


def test_overflow_per_intent_with_the_current_mode(health):
    assert [(o.intent, o.overflows, o.turns, o.rate) for o in health.overflow_by_intent] == [
        ("other", 2, 3, 66.7), ("hours", 1, 1, 100.0)]
    assert health.overflow_total == 3
    assert (health.mode.configured, health.mode.current) == ("auto", "hybrid")


def test_intent_language_channel_and_refusal_mixes(health):
    assert [(r.name, r.count, r.pct) for r in health.intent_mix] == [
        ("other", 3, 50.0), ("hours", 1, 16.7), ("services", 1, 16.7), ("thanks", 1, 16.7)]
    assert [(r.name, r.count) for r in health.language_mix] == [("en", 4), ("sw", 2)]
    assert [(name, f.turns, f.empty_rate) for name, f in health.channels] == [("chat", 5, 20.0), ("whatsapp", 1, 0.0)]
    assert [(r.name, r.count, r.pct) for r in health.refusal_reasons] == [("no_relevant_context", 1, 100.0)]
    assert [(r.name, r.count) for r in health.events] == [("knowledge_overflow", 3)]


def test_thirty_days_takes_in_the_older_turn(tenant):
    known_turns()
    month = retrieval_health(days=30, now=NOW)
    assert month.totals.turns == 7
    assert month.totals.refusals == 2
    assert month.totals.cost_usd == 1.006
    assert [(r.name, r.count) for r in month.refusal_reasons] == [("no_relevant_context", 1), ("off_topic", 1)]
    assert month.overflow_total == 4


def test_no_turns_means_no_data_not_zero(tenant):
    health = retrieval_health(days=7, now=NOW)
    assert health.totals.turns == 0
    assert {f.state for f in health.figures} == {"no_data"}
    assert health.state == "no_data"
    assert health.top_sections == [] and health.channels == []
    assert (health.mode.configured, health.mode.current) == ("auto", "inline")


def test_days_follow_the_tenant_time_zone(tenant):
    from django.db import connection

    from telemetry.services import retrieval_log_record

    tenant.timezone = "Africa/Nairobi"  # UTC+3: 22:30 UTC on the 9th is 01:30 on the 10th
    connection.set_tenant(tenant)
    try:
        retrieval_log_record(created_at=dt.datetime(2026, 3, 9, 22, 30, tzinfo=dt.timezone.utc), intent="other")
        health = retrieval_health(days=7, now=NOW)
    finally:
        tenant.timezone = "UTC"
    assert health.timezone == "Africa/Nairobi"
    assert {point.day.day: point.figures.turns for point in health.daily}[10] == 1


def test_the_api_dict_carries_the_same_figures(health):
    data = health.as_dict()
    assert data["totals"]["turns"] == 6
    assert data["figures"][0] == {"metric": "empty_rate", "label": "Empty-retrieval rate", "value": 16.7, "unit": "%",
                                  "target": "< 5%", "alert_if": "> 10%", "state": "alert"}
    assert data["daily"][-1]["day"] == "2026-03-10" and data["daily"][-1]["turns"] == 3
    assert data["top_sections"][0] == {"key": "a", "count": 3, "avg_similarity": 0.8, "latest_version": 2}
    assert data["never_retrieved"] == [{"key": "d", "version": 1, "title": "D", "token_count": 42}]
    assert data["overflow"]["current_mode"] == "hybrid"
