"""Automatic graduation from inline to hybrid, owner pins, and the event trail."""
from __future__ import annotations

import pytest
from retrieval_kb import kb, mode  # noqa: F401 (fixtures)

from knowledge.models import RetrievalSettings
from knowledge.retrieval import fetch_snippets
from knowledge.retrieval.config import retrieval_settings_get
from knowledge.retrieval.graduation import OVERFLOW_EVENTS, graduation_reevaluate, mode_pin_applied
from telemetry.models import Event

pytestmark = pytest.mark.django_db


def events(name):
    return list(Event.objects.filter(name=name).order_by("created_at").values_list("payload", flat=True))


def test_settings_row_is_created_on_first_use_with_sop_defaults(tenant):
    assert RetrievalSettings.objects.count() == 0
    result = fetch_snippets("other", query="Is there parking?", channel="chat")
    row = RetrievalSettings.objects.get()
    assert (row.mode, row.current_mode, row.similarity_threshold, row.budget_chat_tokens) == ("auto", "inline", 0.25, 1500)
    assert result.mode == "inline"


def test_an_automatic_tenant_graduates_when_overflow_keeps_firing(kb, mode):
    kb.spa()
    mode("auto")
    for turn in range(OVERFLOW_EVENTS - 1):
        assert fetch_snippets("other", query="parking", channel="chat", limit=2).mode == "inline"
    assert retrieval_settings_get().current_mode == "inline"
    assert events("retrieval_mode_changed") == []
    last_inline = fetch_snippets("other", query="parking", channel="chat", limit=2)
    assert last_inline.mode == "inline" and last_inline.debug["graduated"] is True
    row = retrieval_settings_get()
    assert row.current_mode == "hybrid" and row.graduated_at is not None
    assert events("retrieval_mode_changed") == [{"from": "inline", "to": "hybrid", "overflows_in_window": 3,
                                                 "needed": 3, "window_days": 7,
                                                 "reason": "knowledge_overflow fired 3 times in 7 days"}]
    assert fetch_snippets("other", query="parking", channel="chat").mode == "hybrid"


def test_a_kb_past_the_caps_graduates_on_its_first_overflow_and_that_turn_reads_all_of_it(kb, mode):
    # The oldest snippet answers; inline (newest first, 20 snippets) would have cut it.
    kb(key="parking", title="Parking", body="Free basement parking for guests at Mirage Tower.")
    for n in range(21):
        kb(key=f"treatment_{n}", title=f"Treatment {n}", body=f"Treatment number {n} uses warm oils and stones.")
    mode("auto")
    first = fetch_snippets("other", query="Is there parking for my car?", channel="chat")
    assert first.mode == "hybrid" and first.debug["graduated"] is True
    assert first.refusal_reason is None and first.snippets[0].key == "parking"
    assert retrieval_settings_get().current_mode == "hybrid"
    assert events("retrieval_mode_changed") == [{"from": "inline", "to": "hybrid", "overflows_in_window": 1,
                                                 "needed": 3, "window_days": 7,
                                                 "reason": "the knowledge base exceeds the inline caps"}]


def test_a_kb_that_fits_never_overflows_or_graduates(kb, mode):
    kb.spa()
    mode("auto")
    for _ in range(5):
        assert fetch_snippets("other", query="parking", channel="chat").mode == "inline"
    assert events("knowledge_overflow") == [] and retrieval_settings_get().current_mode == "inline"


def test_a_pinned_inline_tenant_never_graduates(kb, mode):
    kb.spa()
    mode("inline")
    for _ in range(OVERFLOW_EVENTS + 1):
        assert fetch_snippets("other", query="parking", channel="chat", limit=1).mode == "inline"
    assert len(events("knowledge_overflow")) == OVERFLOW_EVENTS + 1
    assert retrieval_settings_get().current_mode == "inline" and events("retrieval_mode_changed") == []


def test_pinning_and_reevaluating(kb, mode):
    kb.spa()
    row = mode("auto")
    row.mode = "hybrid"
    mode_pin_applied(row)
    assert retrieval_settings_get().current_mode == "hybrid"
    assert fetch_snippets("other", query="parking", channel="chat").mode == "hybrid"
    row.mode = "auto"
    row.save()
    # Back on automatic with a KB that fits and no recent overflow: inline again.
    assert graduation_reevaluate(row, kb_fits=True) == "inline"
    assert graduation_reevaluate(row, kb_fits=False) == "hybrid"
    assert [(e["from"], e["to"]) for e in events("retrieval_mode_changed")] == [
        ("inline", "hybrid"), ("hybrid", "inline"), ("inline", "hybrid")]
