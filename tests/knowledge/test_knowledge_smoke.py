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
