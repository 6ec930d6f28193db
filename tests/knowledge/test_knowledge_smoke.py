"""knowledge_smoke_tests: stored queries run through retrieval; a table; non-zero exit on failure."""
from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from knowledge.seed import seed_apply, seed_parse
from knowledge.services import smoke_test_upsert

KB = """\
snippets:
  - {key: parking, category: facility, role: retrieved, title: "Parking", body: "Free parking behind the building."}
  - {key: arrive_early, category: prep, role: retrieved, title: "Arrive early", body: "Please arrive 10 minutes early."}
  - {key: guardrail_medical, category: policy, role: guardrail, title: "No medical advice", body: "Never diagnose."}
smoke_tests:
  - {query: "Is there parking?", expect: [parking]}
"""


@pytest.fixture
def kb(tenant):
    seed_apply(seed=seed_parse(text=KB))


def test_passing_smoke_tests_print_a_table(kb):
    out = io.StringIO()
    call_command("knowledge_smoke_tests", "--tenant", "test_tenant", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0].split() == ["result", "rank", "query", "expected", "top", "5"]
    assert lines[2].startswith("PASS    1     Is there parking?")
    assert lines[-1].startswith("1/1 passed")


def test_a_failing_smoke_test_exits_non_zero(kb):
    # Guardrails are never retrieved, so this expectation cannot be met.
    smoke_test_upsert(query="Can you diagnose my back pain?", expected_keys=["guardrail_medical"])
    out = io.StringIO()
    with pytest.raises(CommandError, match="1 smoke test"):
        call_command("knowledge_smoke_tests", "--tenant", "test_tenant", stdout=out)
    assert "FAIL    -     Can you diagnose my back pain?" in out.getvalue()
    assert "1/2 passed" in out.getvalue()


def test_an_unknown_tenant_is_an_error(tenant):
    with pytest.raises(CommandError, match="No tenant"):
        call_command("knowledge_smoke_tests", "--tenant", "nope")


def test_a_smoke_test_the_bot_would_refuse_fails_even_with_its_key_in_the_top_results(kb):
    from knowledge.selectors import smoke_tests_run

    # Inline mode puts the whole small KB in the results, so `parking` is found; the bot still refuses.
    smoke_test_upsert(query="Do you sell helicopters?", expected_keys=["parking"])
    result = smoke_tests_run()[1]
    assert ("parking" in result.top_keys, result.refusal_reason, result.passed) == (True, "no_relevant_context",
                                                                                    False)
    out = io.StringIO()
    with pytest.raises(CommandError, match="1 smoke test"):
        call_command("knowledge_smoke_tests", "--tenant", "test_tenant", stdout=out)
    failed = next(line for line in out.getvalue().splitlines() if "helicopters" in line)
    assert failed.startswith("FAIL") and failed.endswith("refuses (no_relevant_context)")


def _overflowing_kb():
    from knowledge.retrieval.config import retrieval_settings_get
    from knowledge.services import snippet_version_create

    for n in range(24):  # more than the inline cap of 20 snippets: an inline turn overflows
        snippet_version_create(key=f"topic-{n}", title=f"Topic {n}", body=f"Parking rule number {n}.",
                               category="facility", role="retrieved", queue_embedding=False)
    smoke_test_upsert(query="Is there parking?", expected_keys=["topic-1"])
    settings_row = retrieval_settings_get()
    assert (settings_row.mode, settings_row.current_mode) == ("auto", "inline")


def _overflow_state():
    from knowledge.retrieval.config import retrieval_settings_get
    from telemetry.models import Event

    return Event.objects.filter(name="knowledge_overflow").count(), retrieval_settings_get().current_mode


def test_background_runs_never_write_overflow_events_nor_graduate_the_tenant(tenant):
    from knowledge.retrieval import fetch_snippets
    from knowledge.selectors import smoke_tests_run
    from telemetry.knowledge_reads import reanswer

    _overflowing_kb()
    for _ in range(4):
        smoke_tests_run()
        reanswer(question="Is there parking?")
    assert _overflow_state() == (0, "inline")
    # The same question from a customer overflows and, the knowledge being past the caps, graduates the tenant.
    fetch_snippets("other", query="Is there parking?", channel="chat")
    assert _overflow_state() == (1, "hybrid")
