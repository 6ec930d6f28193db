"""Chat API guards: auth, 400 field errors, 413, 404, per-key 429, ADD_KB / CLEAR_KB, and the OpenAPI docs."""
from __future__ import annotations

import json

import pytest
from django.test import override_settings

from conversations.models import Session, Turn

URL = "/api/v1/chat/turns/"


def test_it_needs_an_api_key(spa, client_for):
    response = client_for(spa).post(URL, data={"message": "Hi"}, content_type="application/json")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthenticated"


def test_a_key_of_another_tenant_is_rejected(spa, api_key, client_for, other_tenant):
    response = client_for(other_tenant).post(URL, data={"message": "Hi"}, content_type="application/json",
                                             HTTP_AUTHORIZATION=f"Bearer {api_key}")
    assert response.status_code == 401


@pytest.mark.parametrize("payload, fields", [
    ({}, {"message": ["This field is required."]}),
    ({"message": "   "}, {"message": ["This field may not be blank."]}),
    ({"message": "x" * 2001}, {"message": ["Ensure this field has no more than 2000 characters."]}),
    ({"message": "Hi", "channel": "sms"}, {"channel": ['"sms" is not a valid choice.']}),
    ({"message": "Hi", "language": "fr"}, {"language": ['"fr" is not a valid choice.']}),
    ({"message": "Hi", "filters": {"colour": "blue"}},
     {"filters": {"colour": ["Unknown filter; use one of: category, tags, channel, collection, keys, updated_since."]}}),
    ({"message": "Hi", "filters": {"category": ["spaceships"]}},
     {"filters": {"category": ["Unknown category 'spaceships'; use one of: policy, facility, prep, service, hours, "
                               "general."]}}),
])
def test_invalid_fields_are_400_with_field_errors_and_nothing_is_stored(chat, payload, fields):
    response = chat(**payload)
    assert response.status_code == 400
    assert response.json() == {"error": {"code": "invalid_request", "message": "Some fields are invalid.",
                                         "fields": fields}}
    assert not Session.objects.exists() and not Turn.objects.exists()


def test_malformed_json_is_400(spa, api_client):
    client, headers = api_client
    response = client.post(URL, data="{not json", content_type="application/json", **headers)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "malformed_request"


@override_settings(API_MAX_BODY_BYTES=1024)
def test_an_oversized_body_is_413_before_anything_runs(spa, api_client):
    client, headers = api_client
    response = client.post(URL, data=json.dumps({"message": "x" * 5000}), content_type="application/json",
                           **headers)
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"
    assert not Turn.objects.exists()


def test_an_unknown_session_is_404_with_a_code(chat):
    response = chat(message="Hi", session_id="s_does_not_exist")
    assert response.status_code == 404
    assert response.json() == {"error": {
        "code": "session_not_found", "message": "No chat session 's_does_not_exist' here; omit session_id to start "
                                                "a new one.", "fields": {"session_id": ["Unknown session."]}}}
    streamed = chat(path="/api/v1/chat/turns/stream/", message="Hi", session_id="s_does_not_exist")
    assert (streamed.status_code, streamed.json()) == (404, response.json())
    assert not Session.objects.exists()


@override_settings(API_RATE_LIMIT_PER_MINUTE=2)
def test_each_key_is_rate_limited_with_retry_after(chat, spa, client_for):
    from ratiba.services import api_key_issue

    statuses = [chat(message="Hi").status_code for _ in range(3)]
    assert statuses == [200, 200, 429]
    limited = chat(message="Hi")
    assert limited.json()["error"]["code"] == "rate_limited"
    assert 1 <= int(limited["Retry-After"]) <= 60
    # Another key of the same business has its own budget.
    other_key = api_key_issue(tenant=spa, label="second").raw
    response = client_for(spa).post(URL, data={"message": "Hi"}, content_type="application/json",
                                    HTTP_AUTHORIZATION=f"Bearer {other_key}")
    assert response.status_code == 200


def test_the_stream_endpoint_is_rate_limited_too(chat, settings):
    settings.API_RATE_LIMIT_PER_MINUTE = 1
    assert chat(path="/api/v1/chat/turns/stream/", message="Hi").status_code == 200
    limited = chat(path="/api/v1/chat/turns/stream/", message="Hi")
    assert limited.status_code == 429 and limited["Content-Type"] == "application/json"


def test_add_and_clear_session_collections(chat, api_client):
    from knowledge.collections.services import collection_create

    collection_create(name="wedding-packages", scope="session")
    collection_create(name="price-list")
    client, headers = api_client
    session_id = chat(message="Hi").json()["session_id"]
    url = f"/api/v1/sessions/{session_id}/collections/"
    added = client.post(url, data={"collection": "wedding-packages"}, content_type="application/json", **headers)
    assert added.status_code == 200
    assert added.json() == {"session_id": session_id, "collections": ["wedding-packages"]}
    client.post(url, data={"collection": "price-list"}, content_type="application/json", **headers)
    again = client.post(url, data={"collection": "price-list"}, content_type="application/json", **headers)
    assert again.json()["collections"] == ["wedding-packages", "price-list"]
    one = client.delete(f"{url}?collection=wedding-packages", **headers)
    assert one.json()["collections"] == ["price-list"]
    everything = client.delete(url, **headers)
    assert everything.json()["collections"] == []
    assert Session.objects.get(public_id=session_id).collections == []


def test_adding_an_unknown_collection_or_to_an_unknown_session_is_404(chat, api_client):
    client, headers = api_client
    session_id = chat(message="Hi").json()["session_id"]
    missing = client.post(f"/api/v1/sessions/{session_id}/collections/", data={"collection": "nope"},
                          content_type="application/json", **headers)
    assert (missing.status_code, missing.json()) == (404, {"error": {
        "code": "collection_not_found", "message": "No collection named 'nope'.",
        "fields": {"collection": ["Unknown collection."]}}})
    no_session = client.post("/api/v1/sessions/s_nope/collections/", data={"collection": "nope"},
                             content_type="application/json", **headers)
    assert (no_session.status_code, no_session.json()) == (404, {"error": {
        "code": "session_not_found", "message": "No chat session 's_nope' here."}})
    bad = client.post(f"/api/v1/sessions/{session_id}/collections/", data={"collection": "no spaces!"},
                      content_type="application/json", **headers)
    assert bad.status_code == 400 and "collection" in bad.json()["error"]["fields"]


def test_the_session_collections_reach_retrieval(chat, monkeypatch):
    from knowledge import retrieval

    seen = []
    original = retrieval.fetch_snippets

    def spy(intent, **kwargs):
        seen.append(list(kwargs["session"].collections))
        return original(intent, **kwargs)

    monkeypatch.setattr(retrieval, "fetch_snippets", spy)
    session_id = chat(message="Hi").json()["session_id"]
    Session.objects.filter(public_id=session_id).update(collections=["wedding-packages"])
    chat(message="Is there parking at the spa?", session_id=session_id)
    assert seen == [["wedding-packages"]]


def test_the_openapi_schema_documents_both_turn_endpoints_with_examples(spa, client_for):
    schema = client_for(spa).get("/api/schema/?format=json").json()
    turns = schema["paths"]["/api/v1/chat/turns/"]["post"]
    stream = schema["paths"]["/api/v1/chat/turns/stream/"]["post"]
    assert set(turns["responses"]) >= {"200", "400", "401", "404", "413", "429"}
    examples = turns["requestBody"]["content"]["application/json"]["examples"]
    assert "ANewConversation" in examples
    assert "text/event-stream" in stream["responses"]["200"]["content"]
    output = schema["components"]["schemas"]["TurnOutput"]
    assert set(output["properties"]) == {"session_id", "turn_id", "intent", "answer", "citations",
                                         "refusal_reason", "meta"}
    assert "/api/v1/sessions/{session_id}/collections/" in schema["paths"]


def test_the_widget_origin_may_call_the_stream_endpoint_cross_origin(chat, api_client, settings):
    settings.CHAT_WIDGET_ORIGINS = ["https://www.aria-spa.example"]
    client, headers = api_client
    preflight = client.options("/api/v1/chat/turns/stream/", HTTP_ORIGIN="https://www.aria-spa.example",
                               HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST",
                               HTTP_ACCESS_CONTROL_REQUEST_HEADERS="authorization, content-type")
    assert preflight.status_code == 204
    assert preflight["Access-Control-Allow-Origin"] == "https://www.aria-spa.example"
    assert "Authorization" in preflight["Access-Control-Allow-Headers"]
    response = client.post(
        "/api/v1/chat/turns/", data={"message": "Hi"}, content_type="application/json",
        HTTP_ORIGIN="https://www.aria-spa.example", **headers)
    assert response.status_code == 200
    assert response["Access-Control-Allow-Origin"] == "https://www.aria-spa.example"
    stranger = client.post("/api/v1/chat/turns/", data={"message": "Hi"}, content_type="application/json",
                           HTTP_ORIGIN="https://evil.example", **headers)
    assert "Access-Control-Allow-Origin" not in stranger
