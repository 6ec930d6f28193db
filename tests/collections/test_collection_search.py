"""Chunk search: the right passage for a question, live chunks only, collection scope and filters."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from collection_docs import FAQ_HTML, GUIDE_MD, price_list_pdf
from knowledge.collections.models import Chunk
from knowledge.collections.search import chunk_candidates, chunk_query
from knowledge.collections.services import collection_create
from knowledge.retrieval.candidates import QueryText


@pytest.fixture
def library(tenant, ingest):
    guides = collection_create(name="guides")
    prices = collection_create(name="prices", scope="session")
    guide = ingest(guides, "guest-guide.md", GUIDE_MD).document
    faq = ingest(guides, "delivery.html", FAQ_HTML).document
    price_list = ingest(prices, "prices.pdf", price_list_pdf(pages=3)).document
    return SimpleNamespace(guides=guides, prices=prices, guide=guide, faq=faq, price_list=price_list)


def test_a_question_finds_the_passage_that_answers_it(library):
    hits = chunk_query("Is there somewhere to park my car?")
    top = hits[0]
    assert (top.key, top.title, top.heading) == (f"doc:{library.guide.pk}#2", "Aria Spa Guest Guide", "Parking")
    assert top.citation() == {"document": "Aria Spa Guest Guide", "document_id": library.guide.pk,
                              "filename": "guest-guide.md", "collection": "guides", "heading": "Parking",
                              "heading_path": "Aria Spa Guest Guide > Arrival > Parking", "page": None}
    assert top.similarity > 0.4 and top.heading_terms == 1 and top.query_terms >= 2


def test_session_collections_are_searched_only_for_sessions_that_added_them(library):
    question = "How much does a manicure cost?"
    anonymous = {hit.collection for hit in chunk_query(question)}
    added = chunk_query(question, session=SimpleNamespace(collections=["prices"]))
    other_attribute = chunk_query(question, session=SimpleNamespace(active_collections=["prices"]))
    assert anonymous == {"guides"}
    assert added[0].collection == "prices" and added[0].page == 3 and added[0].heading == "Nail care"
    assert other_attribute[0].key == added[0].key


def test_the_collections_filter_narrows_the_search(library):
    only_prices = chunk_query("delivery fees and massage prices", names=["prices"],
                              session=SimpleNamespace(collections=["prices"]))
    not_added = chunk_query("delivery fees and massage prices", names=["prices"])
    assert {hit.collection for hit in only_prices} == {"prices"}
    assert not_added == []


def test_chunks_of_an_unfinished_generation_are_never_returned(library):
    Chunk.objects.create(document=library.guide, collection=library.guides, generation=2, is_live=False, ordinal=0,
                         heading_path="Secret", text="Unreleased parking garage on the roof.", token_count=8,
                         embedding=[0.05] * 384)
    hits = chunk_query("parking garage on the roof")
    assert "Unreleased parking garage on the roof." not in [hit.text for hit in hits]
    assert all(hit.generation == 1 for hit in hits)


def test_candidates_for_fetch_snippets_carry_chunk_identity_and_signals(library):
    from knowledge.embeddings import embed_query

    query = QueryText(or_text="gift or box or returns", and_text="gift box returns",
                      content_text="gift box returns", vector=embed_query("gift box returns"))
    candidates = chunk_candidates(query=query, filters=None, session=None, limit=5)
    snippet_only = chunk_candidates(query=query, filters={"tags": ["x"]}, session=None, limit=5)
    best = max(candidates, key=lambda candidate: candidate.keyword_rank)
    assert best.key == f"doc:{library.faq.pk}#2" and best.id < 0 and best.source == "chunk"
    assert (best.category, best.status, best.title) == ("document", "accepted", "Aria Spa delivery FAQ")
    assert best.citation["heading"] == "Returns" and best.matched_terms == 3 and best.query_terms == 3
    assert snippet_only == []
