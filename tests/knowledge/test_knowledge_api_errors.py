"""Every domain error of the authoring API, byte for byte: status, code, message and fields."""
from __future__ import annotations

import json

import pytest

from knowledge.services import service_upsert, snippet_version_create


def _send(client, headers, method, url, body=None):
    call = getattr(client, method)
    if body is None:
        return call(url, **headers)
    return call(url, data=json.dumps(body), content_type="application/json", **headers)


def _error(code, message, fields=None):
    body = {"code": code, "message": message}
    if fields:
        body["fields"] = fields
    return {"error": body}


@pytest.fixture
def knowledge(tenant):
    # Through the service itself: this module needs no test helpers.
    snippet_version_create(key="parking", title="Parking", body="Free parking.", category="facility",
                           role="retrieved", queue_embedding=False)
    snippet_version_create(key="no-medical-advice", title="No medical advice", body="Never diagnose.",
                           category="policy", role="guardrail", enforce_release_gate=False, queue_embedding=False)
    service_upsert(name="Haircut", duration_minutes=30, price="600")
    service_upsert(name="Shave", duration_minutes=20, price="350")


@pytest.mark.parametrize("method, url, body, status, expected", [
    ("post", "/api/v1/snippets/", {"key": "parking", "title": "P", "body": "B", "category": "facility"}, 409,
     _error("snippet_exists", "A snippet with this key already exists: PATCH it to save a new version.")),
    ("post", "/api/v1/snippets/", {"key": "wifi", "title": "Wi-Fi", "body": "Free.", "category": "facility",
                                   "related_keys": ["nowhere"]}, 400,
     _error("invalid_request", "Some fields are invalid.", {"related_keys": ["Unknown snippet key(s): nowhere."]})),
    ("get", "/api/v1/snippets/nowhere/", None, 404, _error("not_found", "No snippet with key 'nowhere'.")),
    ("patch", "/api/v1/snippets/nowhere/", {"body": "B"}, 404, _error("not_found", "No snippet with key 'nowhere'.")),
    ("patch", "/api/v1/snippets/parking/", {"category": "spaceships"}, 400,
     _error("invalid_request", "Some fields are invalid.", {"category": [
         "Unknown category 'spaceships': expected one of policy, facility, prep, service, hours, general."]})),
    ("get", "/api/v1/snippets/nowhere/versions/", None, 404, _error("not_found", "No snippet with key 'nowhere'.")),
    ("post", "/api/v1/snippets/parking/versions/9/activate/", None, 404,
     _error("not_found", "Snippet 'parking' has no version 9.")),
    ("post", "/api/v1/snippets/no-medical-advice/versions/1/activate/", None, 403,
     _error("review_required", "Guardrail versions change every answer: a reviewer with the review permission "
                               "must release them in the admin.")),
    ("post", "/api/v1/services/", {"name": "Haircut", "price": "700"}, 409,
     _error("service_exists", "A service with this name exists: PATCH it.")),
    ("post", "/api/v1/services/", {"name": "Wax", "price": "700", "currency": "XYZ"}, 400,
     _error("invalid_request", "Some fields are invalid.", {"currency": [
         "Unknown currency 'XYZ': use an ISO 4217 code such as KES."]})),
    ("get", "/api/v1/services/999999/", None, 404, _error("not_found", "No service 999999.")),
    ("patch", "/api/v1/services/999999/", {"price": "1"}, 404, _error("not_found", "No service 999999.")),
    ("put", "/api/v1/hours/weekly/", {"mon": ["17:00-09:00"], "sun": ["09:00-12:00", "11:00-13:00"]}, 400,
     _error("invalid_request", "Some fields are invalid.", {
         "mon": ["'17:00-09:00': closing time must be after opening time."],
         "sun": ["09:00-12:00 overlaps 11:00-13:00."]})),
    ("put", "/api/v1/hours/special/2030-12-24/", {"hours": ["9-5"]}, 400,
     _error("invalid_request", "Some fields are invalid.", {"hours": ["Enter a range as HH:MM-HH:MM, not '9-5'."]})),
    ("put", "/api/v1/hours/special/24-12-2030/", {"hours": []}, 400,
     _error("invalid_request", "Some fields are invalid.", {"date": ["Enter a date as YYYY-MM-DD, not '24-12-2030'."]})),
    ("delete", "/api/v1/hours/special/2030-12-24/", None, 404, _error("not_found", "No special day on 2030-12-24.")),
])
def test_each_domain_error_has_its_status_and_exact_body(knowledge, api_client, method, url, body, status, expected):
    client, headers = api_client
    response = _send(client, headers, method, url, body)
    assert (response.status_code, response.json()) == (status, expected)


def test_renaming_a_service_to_a_taken_name_is_a_400_on_name(knowledge, api_client):
    client, headers = api_client
    shave = _send(client, headers, "get", "/api/v1/services/").json()["results"][1]
    response = _send(client, headers, "patch", f"/api/v1/services/{shave['id']}/", {"name": "Haircut"})
    assert (response.status_code, response.json()) == (400, _error(
        "invalid_request", "Some fields are invalid.", {"name": ["A service called 'Haircut' already exists."]}))
