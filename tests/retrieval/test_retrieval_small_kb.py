"""A tiny knowledge base still answers a question one of its snippets plainly covers."""
import pytest

from knowledge.retrieval import fetch_snippets
from knowledge.services import snippet_version_create, snippet_versions_embed

pytestmark = pytest.mark.django_db


def _snippet(key: str, title: str, body: str):
    version = snippet_version_create(key=key, title=title, body=body, category="facility", role="retrieved",
                                     queue_embedding=False)
    snippet_versions_embed(version_ids=[version.pk])


def test_a_two_snippet_kb_answers_the_question_its_parking_snippet_covers(tenant):
    _snippet("garden", "Our garden", "Guests can relax in the garden before treatments.")
    _snippet("parking", "Parking", "Free customer parking behind the building, and street parking on Ngong Road.")
    result = fetch_snippets("other", query="Is there parking?", channel="chat")
    assert result.refusal_reason is None
    assert result.snippets[0].key == "parking"
    assert result.debug["refusal"]["signals"]["top_coverage"] == 1.0
