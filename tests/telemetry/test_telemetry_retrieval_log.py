"""The per-turn retrieval log: what a row holds, and that a failed write never breaks the turn."""
from __future__ import annotations

from decimal import Decimal
from unittest import mock

from django.db import DatabaseError, connection

from knowledge.retrieval.types import RetrievedSnippet
from telemetry.models import Event, RetrievalLog, RetrievalLogSection
from telemetry.services import event_record, retrieval_log_record


def _snippet(key, version, similarity, tokens, match_type="hybrid"):
    return RetrievedSnippet(key=key, version=version, title=key, body="...", category="general", score=0.9,
                            match_type=match_type, token_count=tokens, similarity=similarity)


def test_it_stores_every_sop_column(tenant):
    row = retrieval_log_record(
        channel="whatsapp", session_id="s-1", turn_id="t-1", message_preview="x" * 300,
        retrieved_sections=[_snippet("parking", 2, 0.61234, 120), {"key": "hours", "version": 1, "similarity": 0.4,
                                                                   "tokens": 80, "match_type": "keyword"}],
        core_tokens=2850, trivial=False, fallback_used=True, candidate_count=9, skipped_for_budget_count=1,
        embedding_latency_ms=21.5, retrieval_latency_ms=7.25, mode="hybrid", intent="other",
        provider="extractive", model="extractive-1", cost_usd=0.0012, refusal_reason=None, language="sw")
    row = RetrievalLog.objects.get(pk=row.pk)
    assert row.channel == "whatsapp"
    assert row.session_id == "s-1" and row.turn_id == "t-1"
    assert row.message_preview == "x" * 200
    assert row.retrieved_sections == [
        {"key": "parking", "version": 2, "similarity": 0.6123, "tokens": 120, "match_type": "hybrid"},
        {"key": "hours", "version": 1, "similarity": 0.4, "tokens": 80, "match_type": "keyword"},
    ]
    assert row.retrieved_tokens == 200
    assert row.returned_count == 2
    assert row.prompt_tokens == 3050
    assert row.empty_retrieval is False and row.trivial is False and row.fallback_used is True
    assert (row.candidate_count, row.skipped_for_budget_count) == (9, 1)
    assert (row.embedding_latency_ms, row.retrieval_latency_ms) == (21.5, 7.25)
    assert (row.mode, row.intent, row.provider, row.model, row.language) == (
        "hybrid", "other", "extractive", "extractive-1", "sw")
    assert row.cost_usd == Decimal("0.001200")
    assert row.refused is False and row.refusal_reason == ""
    sections = list(RetrievalLogSection.objects.filter(log=row).order_by("key").values_list(
        "key", "version", "similarity", "tokens", "match_type", "created_at"))
    assert sections == [("hours", 1, 0.4, 80, "keyword", row.created_at),
                        ("parking", 2, 0.6123, 120, "hybrid", row.created_at)]


def test_an_empty_non_trivial_turn_is_an_empty_retrieval(tenant):
    row = retrieval_log_record(channel="chat", message_preview="Do you sell cars?", refusal_reason="no_relevant_context")
    assert (row.empty_retrieval, row.refused, row.refusal_reason, row.returned_count) == (
        True, True, "no_relevant_context", 0)


def test_a_trivial_turn_is_not_an_empty_retrieval(tenant):
    row = retrieval_log_record(channel="chat", message_preview="asante", trivial=True)
    assert (row.trivial, row.empty_retrieval) == (True, False)


def test_explicit_counts_win_over_derived_ones(tenant):
    row = retrieval_log_record(retrieved_sections=[{"key": "a", "tokens": 10}], retrieved_tokens=500,
                               returned_count=3, prompt_tokens=4000, empty_retrieval=True)
    assert (row.retrieved_tokens, row.returned_count, row.prompt_tokens, row.empty_retrieval) == (500, 3, 4000, True)


def test_a_failed_log_write_returns_none_and_the_turn_goes_on(tenant):
    # The turn's own write happens before and after the log write in the same transaction.
    event_record(name="refusal", payload={"reason": "before"})
    with mock.patch.object(RetrievalLog, "save", side_effect=DatabaseError("disk full")):
        assert retrieval_log_record(channel="chat", message_preview="hi") is None
    event_record(name="refusal", payload={"reason": "after"})
    assert RetrievalLog.objects.count() == 0
    assert sorted(Event.objects.values_list("payload__reason", flat=True)) == ["after", "before"]


def test_a_failed_section_write_rolls_back_the_row_only(tenant):
    with mock.patch.object(RetrievalLogSection.objects, "bulk_create", side_effect=DatabaseError("boom")):
        assert retrieval_log_record(retrieved_sections=[{"key": "a"}]) is None
    assert RetrievalLog.objects.count() == 0
    assert retrieval_log_record(retrieved_sections=[{"key": "a"}]) is not None


def test_bad_arguments_never_raise(tenant):
    assert retrieval_log_record(retrieved_sections=[{"key": "a", "version": "not a number"}]) is None
    assert retrieval_log_record(cost_usd="lots") is None


def test_a_real_database_error_inside_the_write_is_contained(tenant):
    # A negative count violates the column's CHECK constraint in PostgreSQL itself.
    with mock.patch("telemetry.services.max", side_effect=lambda value, floor: value, create=True):
        assert retrieval_log_record(candidate_count=-5) is None
    # The surrounding transaction is still usable.
    with connection.cursor() as cursor:
        cursor.execute("select 1")
        assert cursor.fetchone() == (1,)
    assert retrieval_log_record(candidate_count=5).candidate_count == 5


def test_an_event_is_a_row_and_a_json_log_line(tenant, caplog):
    import json
    import logging

    with caplog.at_level(logging.INFO, logger="ratiba.telemetry"):
        event = event_record(name="provider_error", payload={"provider": "anthropic", "retryable": True})
    assert Event.objects.get(pk=event.pk).payload == {"provider": "anthropic", "retryable": True}
    lines = [json.loads(record.getMessage()) for record in caplog.records if record.name == "ratiba.telemetry"]
    assert len(lines) == 1
    line = lines[0]
    assert (line["event"], line["schema"], line["provider"], line["retryable"], line["level"]) == (
        "provider_error", "test_tenant", "anthropic", True, "info")


def test_a_failed_log_write_is_logged(tenant, caplog):
    with mock.patch.object(RetrievalLog, "save", side_effect=DatabaseError("disk full")):
        retrieval_log_record(channel="chat")
    assert any("retrieval log could not be stored" in r.getMessage() and r.exc_info for r in caplog.records)
