"""Authoring REST API: snippets and versions, release gate for keys, services, hours, error shape, schema."""
from __future__ import annotations

import json


from knowledge.models import OpeningHours, SnippetVersion
from tests.support.builders import make_version


def _post(client, headers, url, body):
    return client.post(url, data=json.dumps(body), content_type="application/json", **headers)


def _patch(client, headers, url, body):
    return client.patch(url, data=json.dumps(body), content_type="application/json", **headers)


def _put(client, headers, url, body):
    return client.put(url, data=json.dumps(body), content_type="application/json", **headers)


def test_it_requires_an_api_key(tenant_client):
    response = tenant_client.get("/api/v1/snippets/")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthenticated"


def test_post_creates_the_key_and_version_one(api_client):
    client, headers = api_client
    response = _post(client, headers, "/api/v1/snippets/", {
        "key": "parking", "title": "Parking", "body": "Free parking behind the building.", "category": "facility",
        "tags": ["Cars"], "channels": ["chat", "whatsapp"]})
    assert response.status_code == 201
    body = response.json()
    assert {k: body[k] for k in ("key", "version", "is_active", "tags", "channels", "embedding_state",
                                  "awaiting_review", "role", "status")} == {
        "key": "parking", "version": 1, "is_active": True, "tags": ["cars"], "channels": ["chat", "whatsapp"],
        "embedding_state": "pending", "awaiting_review": False, "role": "retrieved", "status": "accepted"}
    again = _post(client, headers, "/api/v1/snippets/", {"key": "parking", "title": "P", "body": "B",
                                                          "category": "facility"})
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "snippet_exists"


def test_validation_errors_use_the_error_shape(api_client):
    client, headers = api_client
    response = _post(client, headers, "/api/v1/snippets/", {"key": "Bad Key", "title": "T", "body": "B",
                                                             "category": "polcy"})
    assert response.status_code == 400
    assert response.json() == {"error": {"code": "invalid_request", "message": "Some fields are invalid.",
                                         "fields": {"key": ["Invalid key 'Bad Key': use 1-100 lowercase letters, "
                                                            "digits, '_' or '-'."]}}}
    response = _post(client, headers, "/api/v1/snippets/", {"key": "ok", "title": "T", "body": "B",
                                                             "category": "polcy", "channels": ["sms"]})
    fields = response.json()["error"]["fields"]
    assert sorted(fields) == ["category", "channels"]


def test_list_shows_active_versions_with_filters_and_pagination(api_client):
    client, headers = api_client
    make_version("parking", category="facility")
    make_version("wifi", title="Wi-Fi", body="Free Wi-Fi.", category="facility", channels=["chat"])
    make_version("cancellation", title="Cancellation", body="Cancel 12 hours ahead.", category="policy")
    page = client.get("/api/v1/snippets/?limit=2", **headers).json()
    assert page["count"] == 3 and [item["key"] for item in page["results"]] == ["cancellation", "parking"]
    assert page["next"].endswith("limit=2&offset=2")
    facility = client.get("/api/v1/snippets/?category=facility&channel=whatsapp", **headers).json()
    assert [item["key"] for item in facility["results"]] == ["parking"]
    bad = client.get("/api/v1/snippets/?category=nope", **headers)
    assert bad.status_code == 400 and list(bad.json()["error"]["fields"]) == ["category"]


def test_patch_saves_a_new_version_and_get_shows_it(api_client):
    client, headers = api_client
    make_version("parking")
    response = _patch(client, headers, "/api/v1/snippets/parking/", {"body": "Paid parking."})
    assert response.status_code == 200
    assert (response.json()["version"], response.json()["is_active"]) == (2, True)
    current = client.get("/api/v1/snippets/parking/", **headers).json()
    assert (current["version"], current["body"]) == (2, "Paid parking.")
    versions = client.get("/api/v1/snippets/parking/versions/", **headers).json()
    assert [(v["version"], v["is_active"]) for v in versions["results"]] == [(2, True), (1, False)]
    assert _patch(client, headers, "/api/v1/snippets/parking/", {"bogus": 1}).status_code == 400
    assert _patch(client, headers, "/api/v1/snippets/nope/", {"body": "x"}).status_code == 404
    assert client.get("/api/v1/snippets/nope/versions/", **headers).status_code == 404


def test_activate_switches_versions(api_client):
    client, headers = api_client
    make_version("parking")
    _patch(client, headers, "/api/v1/snippets/parking/", {"body": "Paid parking."})
    response = client.post("/api/v1/snippets/parking/versions/1/activate/", **headers)
    assert response.status_code == 200 and response.json()["is_active"] is True
    assert list(SnippetVersion.objects.filter(key="parking", is_active=True).values_list("version", flat=True)) == [1]
    assert client.post("/api/v1/snippets/parking/versions/7/activate/", **headers).status_code == 404


def test_an_api_key_cannot_release_a_guardrail(api_client):
    client, headers = api_client
    created = _post(client, headers, "/api/v1/snippets/", {"key": "guardrail_medical", "title": "No diagnosis",
                                                            "body": "Never diagnose.", "category": "policy",
                                                            "role": "guardrail"}).json()
    assert (created["is_active"], created["awaiting_review"]) == (False, True)
    response = client.post("/api/v1/snippets/guardrail_medical/versions/1/activate/", **headers)
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "review_required"
    assert not SnippetVersion.objects.filter(key="guardrail_medical", is_active=True).exists()


def test_services_list_create_and_update(api_client):
    client, headers = api_client
    created = _post(client, headers, "/api/v1/services/", {"name": "Haircut", "duration_minutes": 30,
                                                            "price": "800.00", "currency": "kes"})
    assert created.status_code == 201
    assert {k: created.json()[k] for k in ("name", "price", "currency", "is_active")} == {
        "name": "Haircut", "price": "800.00", "currency": "KES", "is_active": True}
    service_id = created.json()["id"]
    assert _post(client, headers, "/api/v1/services/", {"name": "Haircut", "duration_minutes": 30,
                                                        "price": "1"}).status_code == 409
    bad = _patch(client, headers, f"/api/v1/services/{service_id}/", {"currency": "XXY"})
    assert bad.status_code == 400 and list(bad.json()["error"]["fields"]) == ["currency"]
    updated = _patch(client, headers, f"/api/v1/services/{service_id}/", {"price": "900", "is_active": False})
    assert (updated.json()["price"], updated.json()["is_active"]) == ("900.00", False)
    listing = client.get("/api/v1/services/", **headers).json()
    assert listing["count"] == 1 and listing["results"][0]["price"] == "900.00"


def test_a_service_lasting_a_week_is_accepted_and_one_longer_than_a_year_is_not(api_client):
    client, headers = api_client
    weekly = _post(client, headers, "/api/v1/services/", {"name": "Weekly Saloon Self-Drive", "duration_minutes": 10080,
                                                          "price": "21000"})
    assert weekly.status_code == 201 and weekly.json()["duration_minutes"] == 10080
    too_long = _patch(client, headers, f"/api/v1/services/{weekly.json()['id']}/", {"duration_minutes": 600000})
    assert too_long.status_code == 400 and list(too_long.json()["error"]["fields"]) == ["duration_minutes"]


def test_weekly_hours_are_validated_and_replaced(api_client):
    client, headers = api_client
    response = _put(client, headers, "/api/v1/hours/weekly/", {"mon": ["09:00-13:00", "14:00-18:00"], "sun": []})
    assert response.status_code == 200
    assert response.json()["weekly"]["mon"] == ["09:00-13:00", "14:00-18:00"]
    overlap = _put(client, headers, "/api/v1/hours/weekly/", {"tue": ["09:00-13:00", "12:00-18:00"]})
    assert overlap.status_code == 400
    assert overlap.json()["error"]["fields"] == {"tue": ["09:00-13:00 overlaps 12:00-18:00."]}
    backwards = _put(client, headers, "/api/v1/hours/weekly/", {"wed": ["18:00-09:00"]})
    assert backwards.json()["error"]["fields"] == {"wed": ["'18:00-09:00': closing time must be after opening time."]}
    assert _put(client, headers, "/api/v1/hours/weekly/", {"funday": []}).status_code == 400
    assert OpeningHours.objects.count() == 2


def test_special_days_set_and_delete(api_client):
    client, headers = api_client
    response = _put(client, headers, "/api/v1/hours/special/2026-12-24/", {"hours": ["09:00-15:00"],
                                                                           "note": "Christmas Eve"})
    assert response.status_code == 200
    assert response.json()["special"] == [{"date": "2026-12-24", "hours": ["09:00-15:00"], "note": "Christmas Eve"}]
    assert _put(client, headers, "/api/v1/hours/special/2026-13-40/", {"hours": []}).status_code == 400
    assert client.delete("/api/v1/hours/special/2026-12-24/", **headers).status_code == 204
    assert client.delete("/api/v1/hours/special/2026-12-24/", **headers).status_code == 404
    assert client.get("/api/v1/hours/", **headers).json()["special"] == []


def test_the_openapi_schema_describes_the_authoring_api(tenant_client):
    response = tenant_client.get("/api/schema/?format=json")
    assert response.status_code == 200
    paths = json.loads(response.content)["paths"]
    for path in ("/api/v1/snippets/", "/api/v1/snippets/{key}/", "/api/v1/snippets/{key}/versions/",
                 "/api/v1/snippets/{key}/versions/{number}/activate/", "/api/v1/services/",
                 "/api/v1/services/{service_id}/", "/api/v1/hours/", "/api/v1/hours/weekly/",
                 "/api/v1/hours/special/{date}/"):
        assert path in paths, path
    assert set(paths["/api/v1/snippets/{key}/"]) >= {"get", "patch"}
    assert paths["/api/v1/snippets/"]["get"]["operationId"] == "snippets_list"
