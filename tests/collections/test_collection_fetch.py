"""fetch_snippets in hybrid mode: chunks compete with snippets in one fusion, honouring collection scope."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from collection_docs import GUIDE_MD, price_list_pdf
from knowledge.collections.services import collection_create
from knowledge.models import RetrievalSettings
from knowledge.retrieval import fetch_snippets
from knowledge.services import snippet_version_create


@pytest.fixture
def hybrid_library(tenant, ingest, django_capture_on_commit_callbacks):
    RetrievalSettings.objects.all().delete()
    RetrievalSettings.objects.create(mode="hybrid")
    with django_capture_on_commit_callbacks(execute=True):
        snippet_version_create(key="cancellation", title="Cancellation policy", category="policy", role="retrieved",
                               body="Cancel at least 24 hours before your appointment for a full refund.")
    guides = collection_create(name="guides")
    prices = collection_create(name="prices", scope="session")
    guide = ingest(guides, "guest-guide.md", GUIDE_MD).document
    price_list = ingest(prices, "prices.pdf", price_list_pdf(pages=3)).document
    return SimpleNamespace(guide=guide, price_list=price_list)


def keys(retrieval) -> list[str]:
    return [snippet.key for snippet in retrieval.snippets]


def test_chunks_and_snippets_are_ranked_together(hybrid_library):
    parking = fetch_snippets("other", query="Where can I park my car?", channel="chat")
    cancel = fetch_snippets("other", query="Can I cancel my appointment?", channel="chat")
    assert parking.mode == "hybrid"
    assert parking.snippets[0].key == f"doc:{hybrid_library.guide.pk}#2"
    assert parking.snippets[0].source == "chunk" and parking.snippets[0].citation["heading"] == "Parking"
    fusion = {row["key"]: row for row in parking.debug["fusion"]}
    # Of the query terms {park, car}, "park" is in the heading path.
    assert fusion[f"doc:{hybrid_library.guide.pk}#2"]["heading_score"] == 0.5
    assert cancel.snippets[0].key == "cancellation" and cancel.snippets[0].source == "snippet"


def test_session_scope_and_the_collections_filter(hybrid_library):
    question = "How much does a manicure cost?"
    session = SimpleNamespace(collections=["prices"], last_retrieval=None)
    anonymous = fetch_snippets("other", query=question, channel="chat")
    with_session = fetch_snippets("other", query=question, channel="chat", session=session)
    only_prices = fetch_snippets("other", query=question, channel="chat", session=session,
                                 filters={"collections": ["prices"]})
    price_key = f"doc:{hybrid_library.price_list.pk}#2"
    assert price_key not in keys(anonymous)
    assert keys(with_session)[0] == price_key
    assert keys(only_prices)[0] == price_key
    assert all(snippet.citation["collection"] == "prices" for snippet in only_prices.snippets)
