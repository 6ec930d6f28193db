"""Versioned snippets: create, edit, activate, the release gate, rollback, deactivate."""
from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from knowledge.models import EmbeddingState, Snippet, SnippetVersion
from knowledge.services import (
    ReviewRequired,
    SnippetNotFound,
    snippet_deactivate,
    snippet_edit,
    snippet_rollback,
    snippet_version_activate,
    snippet_version_can_activate,
)
from knowledge.tokens import token_estimate
from tests.support.builders import make_user, make_version

pytestmark = pytest.mark.usefixtures("tenant")


def test_the_first_version_creates_the_key_and_goes_live():
    version = make_version("parking", body="Free parking behind the building.")
    assert (version.version, version.is_active, version.key) == (1, True, "parking")
    assert version.embedding_state == EmbeddingState.PENDING
    assert version.token_count == token_estimate("Parking\nFree parking behind the building.")
    assert Snippet.objects.filter(key="parking").count() == 1
    assert version.channels == ["chat", "whatsapp", "email"]


def test_editing_saves_a_new_active_version_and_keeps_the_old_one():
    first = make_version("parking", body="Free parking behind the building.")
    second = snippet_edit(key="parking", changes={"body": "Parking costs KES 100 an hour."})
    first.refresh_from_db()
    assert (second.version, second.is_active, first.is_active) == (2, True, False)
    assert first.body == "Free parking behind the building."
    assert list(SnippetVersion.objects.filter(key="parking").values_list("version", "is_active")) == [(2, True), (1, False)]


def test_editing_without_a_change_creates_no_version():
    first = make_version("parking")
    same = snippet_edit(key="parking", changes={"body": "  Free parking behind the building.  "})
    assert same.pk == first.pk
    assert SnippetVersion.objects.filter(key="parking").count() == 1


def test_invalid_fields_are_reported_together():
    with pytest.raises(ValidationError) as caught:
        make_version("bad", category="polcy", role="oracle", body="", channels=["sms"])
    assert set(caught.value.message_dict) == {"category", "role", "body", "channels"}
    assert "policy" in caught.value.message_dict["category"][0]
    assert not Snippet.objects.filter(key="bad").exists()


def test_an_unknown_related_key_is_rejected():
    with pytest.raises(ValidationError) as caught:
        make_version("parking", related_keys=["valet"])
    assert caught.value.message_dict == {"related_keys": ["Unknown snippet key(s): valet."]}


def test_an_invalid_key_is_rejected():
    with pytest.raises(ValidationError) as caught:
        make_version("Has Spaces")
    assert list(caught.value.message_dict) == ["key"]


def test_activating_an_older_version_deactivates_the_current_one():
    first = make_version("parking")
    second = snippet_edit(key="parking", changes={"body": "Valet parking only."})
    snippet_version_activate(version=first)
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.is_active, second.is_active) == (True, False)
    assert first.activated_at is not None


def test_a_guardrail_by_its_author_waits_for_review():
    author = make_user("author", reviewer=True)
    version = make_version("guardrail_medical", role="guardrail", category="policy", created_by=author,
                           enforce_release_gate=True)
    assert version.is_active is False
    allowed, reason = snippet_version_can_activate(version=version, user=author)
    assert allowed is False and "author cannot approve" in reason
    with pytest.raises(ReviewRequired):
        snippet_version_activate(version=version, user=author)


def test_a_second_reviewer_releases_a_guardrail():
    author = make_user("author")
    reviewer = make_user("reviewer", reviewer=True)
    version = make_version("guardrail_medical", role="guardrail", category="policy", created_by=author,
                           enforce_release_gate=True)
    released = snippet_version_activate(version=version, user=reviewer)
    assert (released.is_active, released.activated_by_id) == (True, reviewer.pk)


def test_a_user_without_review_permission_cannot_release_behaviour():
    version = make_version("voice", role="behaviour", category="general", enforce_release_gate=True)
    clerk = make_user("clerk")
    assert snippet_version_can_activate(version=version, user=clerk)[0] is False
    assert snippet_version_can_activate(version=version, user=None)[0] is False
    with pytest.raises(ReviewRequired):
        snippet_version_activate(version=version, user=None)
    version.refresh_from_db()
    assert version.is_active is False


def test_editing_a_live_guardrail_keeps_the_reviewed_version_live():
    author = make_user("author")
    reviewer = make_user("reviewer", reviewer=True)
    first = make_version("guardrail_medical", role="guardrail", category="policy", enforce_release_gate=False)
    second = snippet_edit(key="guardrail_medical", changes={"body": "Never diagnose."}, created_by=author)
    first.refresh_from_db()
    assert (first.is_active, second.is_active) == (True, False)
    snippet_version_activate(version=second, user=reviewer)
    first.refresh_from_db()
    assert first.is_active is False


def test_rollback_copies_the_old_content_into_a_new_active_version():
    make_version("parking", body="Free parking.")
    snippet_edit(key="parking", changes={"body": "Paid parking."})
    SnippetVersion.objects.filter(key="parking", version=1).update(
        embedding=[0.1] * 384, title_embedding=[0.2] * 384, embedding_state=EmbeddingState.DONE,
        embedding_model="all-MiniLM-L6-v2")
    rolled = snippet_rollback(key="parking", to_version=1)
    assert (rolled.version, rolled.is_active, rolled.body) == (3, True, "Free parking.")
    assert rolled.notes == "Rollback to v1."
    # Both vectors of the old version are reused: nothing to embed again.
    assert rolled.embedding_state == EmbeddingState.DONE
    assert list(rolled.title_embedding) == pytest.approx([0.2] * 384)
    assert list(SnippetVersion.objects.filter(key="parking", is_active=True).values_list("version", flat=True)) == [3]


def test_rolling_back_a_guardrail_needs_a_second_reviewer():
    reviewer = make_user("reviewer", reviewer=True)
    other = make_user("other", reviewer=True)
    make_version("guardrail_x", role="guardrail", category="policy", body="One.", enforce_release_gate=False)
    snippet_edit(key="guardrail_x", changes={"body": "Two."}, enforce_release_gate=False)
    rolled = snippet_rollback(key="guardrail_x", to_version=1, user=reviewer)
    assert (rolled.version, rolled.is_active) == (3, False)
    assert snippet_version_activate(version=rolled, user=other).is_active is True


def test_rollback_to_a_missing_version_raises():
    make_version("parking")
    with pytest.raises(SnippetNotFound):
        snippet_rollback(key="parking", to_version=9)


def test_deactivating_keeps_every_version():
    make_version("parking")
    snippet_edit(key="parking", changes={"body": "Paid parking."})
    deactivated = snippet_deactivate(key="parking")
    assert deactivated.version == 2
    assert SnippetVersion.objects.filter(key="parking").count() == 2
    assert not SnippetVersion.objects.filter(key="parking", is_active=True).exists()


def test_valid_until_before_valid_from_is_rejected():
    with pytest.raises(ValidationError) as caught:
        make_version("xmas", valid_from="2026-12-24", valid_until="2026-12-01")
    assert caught.value.message_dict == {"valid_until": ["Must be on or after valid_from."]}
