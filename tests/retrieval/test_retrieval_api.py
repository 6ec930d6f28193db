"""POST /api/v1/retrieve/: contract, validation errors in the error shape, API-key auth."""
from __future__ import annotations

import pytest
from retrieval_kb import kb, mode  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db
URL = "/api/v1/retrieve/"


def post(client, headers, body):
    return client.post(URL, body, content_type="application/json", **headers)


def test_it_returns_ranked_results_with_scores_and_the_mode(api_client, kb, mode):
    client, headers = api_client
    kb.spa()
    mode("hybrid")
    response = post(client, headers, {"query": "Is there parking?", "k": 1})
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"mode", "results", "fallback_used", "refusal_reason"}
    assert body["mode"] == "hybrid" and body["fallback_used"] is False and body["refusal_reason"] is None
    assert [(r["key"], r["version"], r["category"], r["match_type"]) for r in body["results"]] == [
        ("parking", 1, "facility", "hybrid"), ("location", 1, "facility", "related")]
    assert set(body["results"][0]) == {"key", "version", "title", "category", "score", "match_type"}
    assert body["results"][0]["score"] > 0.5


def test_it_reports_inline_mode_and_applies_filters(api_client, kb, mode):
    client, headers = api_client
    kb.spa()
    mode("inline")
    response = post(client, headers, {"query": "parking", "intent": "hours", "channel": "whatsapp",
                                      "filters": {"category": "hours"}})
    assert response.status_code == 200
    assert response.json()["mode"] == "inline"
    assert [r["key"] for r in response.json()["results"]] == ["holiday_hours"]


def test_validation_errors_use_the_error_shape(api_client):
    client, headers = api_client
    response = post(client, headers, {"k": 0, "channel": "fax", "filters": {"category": "boats", "colour": "x"}})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    assert set(error["fields"]) == {"query", "k", "channel", "filters"}
    assert any("category" in message for message in error["fields"]["filters"])
    response = post(client, headers, {"query": "   "})
    assert response.status_code == 400 and set(response.json()["error"]["fields"]) == {"query"}


def test_it_needs_an_api_key(tenant_client):
    response = tenant_client.post(URL, {"query": "parking"}, content_type="application/json")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthenticated"


def test_hostile_query_text_is_a_normal_request(api_client, kb, mode):
    client, headers = api_client
    kb.spa()
    mode("hybrid")
    for text in ['"', "&|!:*", "' OR 1=1 --", "parking:* & !free"]:
        assert post(client, headers, {"query": text}).status_code == 200
