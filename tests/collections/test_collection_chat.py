"""A chat turn cites document chunks: tenant collections always, a session collection only after ADD_KB."""
from __future__ import annotations

import pytest

from collection_docs import GUIDE_MD, price_list_pdf
from knowledge.collections.services import collection_create


@pytest.fixture
def documents(tenant, ingest):
    guides = collection_create(name="guides")
    prices = collection_create(name="prices", scope="session")
    guide = ingest(guides, "guest-guide.md", GUIDE_MD).document
    price_list = ingest(prices, "prices.pdf", price_list_pdf(pages=3)).document
    return guide, price_list


@pytest.fixture
def chat(api_client):
    client, headers = api_client

    def turn(message: str, session_id: str | None = None) -> dict:
        payload = {"message": message} | ({"session_id": session_id} if session_id else {})
        response = client.post("/api/v1/chat/turns/", payload, content_type="application/json", **headers)
        assert response.status_code == 200, response.content
        return response.json()

    def kb(method: str, session_id: str, body: dict | None = None) -> dict:
        url = f"/api/v1/sessions/{session_id}/collections/"
        if method == "add":
            response = client.post(url, body, content_type="application/json", **headers)
        else:
            response = client.delete(url, **headers)
        assert response.status_code == 200, response.content
        return response.json()

    turn.kb = kb
    return turn


def document_citations(body: dict, document_id: int) -> list[dict]:
    return [citation for citation in body["citations"] if citation["key"].startswith(f"doc:{document_id}#")]


def test_a_tenant_collection_is_cited_with_document_heading_and_page(documents, chat):
    guide, _ = documents
    body = chat("Is there parking near the spa?")
    cited = document_citations(body, guide.pk)
    assert body["refusal_reason"] is None
    assert cited and cited[0]["source"] == "chunk"
    assert cited[0]["title"] == "Aria Spa Guest Guide"
    assert cited[0]["location"]["heading"] == "Parking" and cited[0]["location"]["page"] is None
    assert "Free parking is available behind the building." in body["answer"]


def test_adding_and_clearing_a_session_collection_changes_what_a_turn_can_cite(documents, chat):
    _, price_list = documents
    question = "How much is a pedicure with a foot soak?"
    before = chat(question)
    session_id = before["session_id"]
    assert document_citations(before, price_list.pk) == []

    assert chat.kb("add", session_id, {"collection": "prices"}) == {"session_id": session_id,
                                                                    "collections": ["prices"]}
    added = chat(question, session_id)
    cited = document_citations(added, price_list.pk)
    assert cited, added
    assert cited[0]["location"] | {"document_id": None} == {
        "document": "Aria Spa Price List 2026", "document_id": None, "filename": "prices.pdf",
        "collection": "prices", "heading": "Nail care", "heading_path": "Aria Spa Price List > Nail care", "page": 3}
    assert "1,800 shillings" in added["answer"]

    assert chat.kb("clear", session_id) == {"session_id": session_id, "collections": []}
    cleared = chat(question, session_id)
    assert document_citations(cleared, price_list.pk) == []
    assert "1,800" not in cleared["answer"]
