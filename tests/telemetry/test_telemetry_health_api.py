"""GET /api/v1/telemetry/retrieval-health/?days=N."""
from __future__ import annotations

from django.db import connection

from telemetry.services import retrieval_log_record

URL = "/api/v1/telemetry/retrieval-health/"


def test_it_returns_the_dashboard_figures(api_client):
    client, headers = api_client
    retrieval_log_record(intent="other", retrieved_sections=[{"key": "parking", "similarity": 0.5, "tokens": 900}],
                         core_tokens=3000, embedding_latency_ms=10, retrieval_latency_ms=5)
    retrieval_log_record(intent="other", refusal_reason="no_relevant_context", core_tokens=3000)
    response = client.get(URL, {"days": 30}, **headers)
    assert response.status_code == 200
    data = response.json()
    assert data["days"] == 30 and len(data["daily"]) == 30
    assert data["totals"]["turns"] == 2
    assert data["totals"]["empty_rate"] == 50.0
    assert data["totals"]["avg_retrieved_tokens"] == 450.0
    states = {f["metric"]: f["state"] for f in data["figures"]}
    assert states["empty_rate"] == "alert" and states["avg_retrieved_tokens"] == "warn"
    assert data["top_sections"] == [{"key": "parking", "count": 1, "avg_similarity": 0.5, "latest_version": 0}]
    assert data["refusal_reasons"] == [{"name": "no_relevant_context", "count": 1, "pct": 100.0}]


def test_days_default_to_seven(api_client):
    client, headers = api_client
    assert client.get(URL, **headers).json()["days"] == 7


def test_bad_days_are_a_400_in_the_error_shape(api_client):
    client, headers = api_client
    for value in ("0", "91", "abc"):
        response = client.get(URL, {"days": value}, **headers)
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "invalid_request"
        assert "days" in response.json()["error"]["fields"]


def test_it_needs_an_api_key(tenant_client):
    response = tenant_client.get(URL)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthenticated"


def test_a_key_of_another_tenant_is_rejected(tenant, other_tenant, client_for, api_key):
    response = client_for(other_tenant).get(URL, HTTP_AUTHORIZATION=f"Bearer {api_key}")
    assert response.status_code == 401


def test_it_only_counts_its_own_tenant(tenant, other_tenant, api_client):
    client, headers = api_client
    retrieval_log_record(intent="mine")
    connection.set_tenant(other_tenant)
    for _ in range(4):
        retrieval_log_record(intent="theirs")
    connection.set_tenant(tenant)
    data = client.get(URL, **headers).json()
    assert data["totals"]["turns"] == 1
    assert [row["name"] for row in data["intent_mix"]] == ["mine"]
