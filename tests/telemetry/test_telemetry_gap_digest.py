"""Gap digest: unanswered questions grouped by meaning (real local embeddings), dismissed, and resolved
when a new snippet answers them."""
from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from knowledge.services import snippet_version_create, snippet_versions_embed
from telemetry.digest import gap_digest_refresh, gap_groups_resolve, gap_questions_group
from telemetry.models import Event, GapGroup, GapQuestion
from telemetry.selectors import gap_groups, gap_language_breakdown

T0 = dt.datetime(2026, 3, 1, 8, 0, tzinfo=dt.timezone.utc)


def gap_event(question: str, *, minutes: int, language: str = "en", refused: bool = True, snippets: int = 0):
    event = Event.objects.create(name="knowledge_gap_candidate", payload={
        "question": question, "snippets_available": snippets, "refused": refused,
        "refusal_reason": "no_relevant_context" if refused else "", "language": language})
    Event.objects.filter(pk=event.pk).update(created_at=T0 + dt.timedelta(minutes=minutes))
    return event


def snippet(key: str, title: str, body: str):
    version = snippet_version_create(key=key, title=title, body=body, category="facility", role="retrieved",
                                     queue_embedding=False)
    snippet_versions_embed(version_ids=[version.pk])
    return version


@pytest.fixture
def asked(tenant):
    gap_event("Is there parking?", minutes=0)
    gap_event("Where can I park my car?", minutes=10)
    gap_event("Do you have parking space for customers?", minutes=20, refused=False)  # answered with nothing
    gap_event("Do you accept credit cards?", minutes=30)
    gap_event("Do you take card payments?", minutes=40)
    gap_event("Is there wifi?", minutes=50, language="en")
    # Answered with snippets and not refused: not a gap.
    gap_event("What time do you open?", minutes=60, refused=False, snippets=3)
    gap_event("Je, kuna wifi?", minutes=70, language="sw")
    gap_event("is there PARKING?", minutes=80)
    return tenant


def _groups():
    return {g.label: g for g in GapGroup.objects.all()}


def test_questions_are_grouped_by_meaning_and_sorted_by_count(asked):
    result = gap_questions_group()
    assert result.questions == 8
    groups = gap_groups()
    summary = [(g.count, sorted(g.examples)) for g in groups]
    # Phrasings are kept once, case-insensitively (the newest spelling wins).
    assert summary[0] == (4, sorted(["is there PARKING?", "Do you have parking space for customers?",
                                     "Where can I park my car?"]))
    assert summary[1] == (2, sorted(["Do you take card payments?", "Do you accept credit cards?"]))
    assert [g.count for g in groups] == [4, 2, 1, 1]
    assert GapQuestion.objects.count() == 8


def test_a_group_keeps_its_phrasings_languages_and_first_and_last_seen(asked):
    gap_questions_group()
    parking = gap_groups()[0]
    assert parking.examples[0] == "is there PARKING?"  # newest first
    assert parking.languages == {"en": 4}
    assert parking.refused_count == 3
    assert parking.first_seen == T0
    assert parking.last_seen == T0 + dt.timedelta(minutes=80)
    assert parking.label in {"Is there parking?", "is there PARKING?", "Where can I park my car?",
                             "Do you have parking space for customers?"}


def test_the_language_breakdown_counts_questions(asked):
    gap_questions_group()
    assert [(row.name, row.count, row.pct) for row in gap_language_breakdown()] == [("en", 7, 87.5), ("sw", 1, 12.5)]
    assert [g.languages for g in gap_groups(language="sw")] == [{"sw": 1}]


def test_grouping_again_changes_nothing(asked):
    gap_questions_group()
    before = sorted(GapGroup.objects.values_list("label", "count"))
    again = gap_questions_group()
    assert (again.questions, again.created) == (0, [])
    assert sorted(GapGroup.objects.values_list("label", "count")) == before


def test_a_later_paraphrase_joins_its_group(asked):
    gap_questions_group()
    gap_event("Can customers park near the spa?", minutes=200)
    result = gap_questions_group()
    assert (result.questions, result.created) == (1, [])
    assert gap_groups()[0].count == 5


def test_the_closest_snippets_are_recorded(asked):
    snippet("garden", "Our garden", "Guests can relax in the garden before treatments.")
    snippet("street-parking", "Street parking", "There is street parking on Ngong Road; the car park closes at 8pm.")
    gap_questions_group()
    parking = gap_groups()[0]
    assert parking.closest[0]["key"] == "street-parking"
    assert parking.closest[0]["similarity"] > parking.closest[1]["similarity"]


def test_a_new_snippet_that_answers_a_group_resolves_it_on_the_next_digest(asked):
    snippet("garden", "Our garden", "Guests can relax in the garden before treatments.")
    gap_questions_group()
    assert gap_groups_resolve() == []  # nothing written since the questions were asked
    snippet("parking", "Parking", "Is there parking? Yes: free customer parking behind the building, "
                                  "and street parking on Ngong Road. Park your car in bays 1-10.")
    refresh = gap_digest_refresh()
    resolved = [g.label for g in refresh.resolved]
    assert len(resolved) == 1 and "park" in resolved[0].lower()
    group = GapGroup.objects.get(status="resolved")
    assert group.resolved_by[0]["key"] == "parking"
    assert group.status_changed_at is not None
    # The other groups stay open: the parking snippet does not answer them.
    assert GapGroup.objects.filter(status="open").count() == 3


def test_asking_again_after_resolution_reopens_the_group(asked):
    gap_questions_group()
    group = gap_groups()[0]
    group.status = "resolved"
    group.save()
    gap_event("Where do I park?", minutes=500)
    result = gap_questions_group()
    assert result.reopened == [group.pk]
    group.refresh_from_db()
    assert (group.status, group.count) == ("open", 5)


def test_a_dismissed_group_stays_dismissed_when_asked_again(asked):
    from telemetry.digest import gap_group_set_status

    gap_questions_group()
    group = gap_groups()[0]
    gap_group_set_status(group=group, status="dismissed")
    gap_event("Where do I park?", minutes=500)
    gap_questions_group()
    group.refresh_from_db()
    assert (group.status, group.count) == ("dismissed", 5)


def test_an_event_without_a_question_is_skipped(tenant):
    Event.objects.create(name="knowledge_gap_candidate", payload={"refused": True, "question": "  "})
    assert gap_questions_group().questions == 0
    assert GapGroup.objects.count() == 0
