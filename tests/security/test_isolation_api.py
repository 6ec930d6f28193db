"""Tenant isolation, REST API: every operation of the served OpenAPI schema, probed across tenants.

Operations come from /api/schema/ on A's host (a new endpoint is probed without editing this file):
- B's key on A's host, A's key on B's host and well-formed keys guessed around B's real key prefix: 401;
- A's key on A's host with B's real identifiers (snippet keys, version numbers, collection names, document
  ids, service ids, session ids, special days) in the path and in body fields of the same name, over
  schemathesis-generated requests: never a 5xx and never B's secret, and B's tables unchanged afterwards.
"""
from __future__ import annotations

import secrets

import pytest
from django.core.wsgi import get_wsgi_application
from django.db import connection
from django.test import override_settings

from fuzz_support import connections_kept_open, fuzz_operation, load_schema, operations, seed_fuzz_data
from isolation_data import SECRET, body_text, seed_other_tenant, tenant_fingerprint

# These tests are about status codes and leaks, not meaning: the instant fake embedder serves them.
pytestmark = pytest.mark.usefixtures("fake_embedder")

A_HOST = "tenant.test.localhost"
B_HOST = "other.test.localhost"
EXAMPLES_PER_OPERATION = 4


@pytest.fixture
def world(tenant, other_tenant, api_client, client_for):
    client, meta = api_client
    seed_fuzz_data(client=client, headers=meta)
    b = seed_other_tenant(other_tenant, client_for)
    connection.set_tenant(tenant)
    app = get_wsgi_application()
    with connections_kept_open():
        schema = load_schema(app=app, host=A_HOST)
        yield {"a_key": meta["HTTP_AUTHORIZATION"].split()[1], "b": b, "app": app, "schema": schema,
               "client": client}


def _url(operation, values: dict) -> str:
    path = operation.path
    for parameter in operation.path_parameters:
        path = path.replace("{" + parameter.name + "}", str(values.get(parameter.name, ["1"])[0]))
    return path


def _send(client, method: str, url: str, host: str, key: str):
    return getattr(client, method.lower())(url, data={}, content_type="application/json", HTTP_HOST=host,
                                           HTTP_AUTHORIZATION=f"Bearer {key}")


def test_the_probes_cover_every_operation_of_the_schema(world):
    labels = {op.label for op in operations(world["schema"])}
    assert len(labels) >= 31
    assert {"POST /api/v1/chat/turns/", "POST /api/v1/sessions/{session_id}/collections/",
            "POST /api/v1/snippets/{key}/versions/{number}/activate/",
            "GET /api/v1/collections/{name}/documents/{document_id}/"} <= labels


def test_a_key_works_only_on_its_own_host_for_every_operation(world, client_for):
    b = world["b"]
    values = b.path_values()
    statuses = {}
    for operation in operations(world["schema"]):
        url = _url(operation, values)
        statuses[("b-key-on-a", operation.label)] = _send(world["client"], operation.method, url, A_HOST, b.api_key)
        statuses[("a-key-on-b", operation.label)] = _send(world["client"], operation.method, url, B_HOST,
                                                          world["a_key"])
    wrong = {label: response.status_code for label, response in statuses.items() if response.status_code != 401}
    assert wrong == {}
    assert all(response.json()["error"]["code"] == "unauthenticated" for response in statuses.values())
    assert not [label for label, response in statuses.items() if SECRET in body_text(response)]


@pytest.mark.parametrize("host", [A_HOST, B_HOST])
def test_keys_guessed_around_bs_real_prefix_are_rejected(world, host):
    b = world["b"]
    guesses = [f"rk_{b.key_prefix}_{secrets.token_urlsafe(32)}",  # B's real prefix, a random secret
               b.api_key[:-1] + ("A" if b.api_key[-1] != "A" else "B"),  # one character off
               b.api_key.upper(), f"rk_{b.key_prefix}_", b.api_key + "x" * 10]
    for guess in guesses:
        response = world["client"].get("/api/v1/whoami/", HTTP_HOST=host, HTTP_AUTHORIZATION=f"Bearer {guess}")
        assert response.status_code == 401, guess
    # ... while B's real key works on B's host only.
    ok = world["client"].get("/api/v1/whoami/", HTTP_HOST=B_HOST, HTTP_AUTHORIZATION=f"Bearer {b.api_key}")
    assert ok.status_code == 200 and ok.json()["tenant"] == "test_other"


@override_settings(API_RATE_LIMIT_PER_MINUTE=10**6, API_RATE_LIMIT_PER_IP_PER_MINUTE=10**6)
def test_as_key_with_bs_identifiers_gets_nothing_of_b_from_any_operation(world, other_tenant):
    b = world["b"]
    before = tenant_fingerprint(other_tenant.schema_name)

    def no_secret(case, response):
        assert response.status_code < 500, f"{response.status_code} for {case.method} {case.formatted_path}"
        assert SECRET not in response.text, f"B's data in {case.method} {case.formatted_path}"

    failures, examples = {}, 0
    for operation in operations(world["schema"]):
        report = fuzz_operation(operation, app=world["app"], host=A_HOST,
                                headers={"Authorization": f"Bearer {world['a_key']}"},
                                max_examples=EXAMPLES_PER_OPERATION, seed=7, known_path_values=b.path_values(),
                                always_known=True, keep_going=True, on_response=no_secret)
        examples += report.examples
        if report.failures:
            failures[operation.label] = list(report.failures)
    assert failures == {}
    assert examples >= 31 * 2
    assert tenant_fingerprint(other_tenant.schema_name) == before


def test_bs_session_ids_are_unknown_to_a(world):
    b, client = world["b"], world["client"]
    auth = {"HTTP_HOST": A_HOST, "HTTP_AUTHORIZATION": f"Bearer {world['a_key']}"}
    turn = client.post("/api/v1/chat/turns/", data={"message": "Is there parking?", "session_id": b.session_id},
                       content_type="application/json", **auth)
    assert (turn.status_code, turn.json()["error"]["code"]) == (404, "session_not_found")
    stream = client.post("/api/v1/chat/turns/stream/", data={"message": "hi", "session_id": b.session_id},
                         content_type="application/json", **auth)
    assert stream.status_code == 404
    add = client.post(f"/api/v1/sessions/{b.session_id}/collections/", data={"collection": b.collection},
                      content_type="application/json", **auth)
    assert (add.status_code, add.json()["error"]["code"]) == (404, "session_not_found")
    clear = client.delete(f"/api/v1/sessions/{b.session_id}/collections/", **auth)
    assert clear.status_code == 404


def test_bs_keys_versions_collections_and_documents_are_unknown_to_a(world):
    b, client = world["b"], world["client"]
    auth = {"HTTP_HOST": A_HOST, "HTTP_AUTHORIZATION": f"Bearer {world['a_key']}"}
    for url in (f"/api/v1/snippets/{b.snippet_keys[0]}/", f"/api/v1/snippets/{b.snippet_keys[0]}/versions/",
                f"/api/v1/collections/{b.collection}/", f"/api/v1/collections/{b.collection}/documents/",
                f"/api/v1/collections/{b.collection}/documents/{b.document_id}/"):
        response = client.get(url, **auth)
        assert (response.status_code, response.json()["error"]["code"]) == (404, "not_found"), url
    activate = client.post(f"/api/v1/snippets/{b.snippet_keys[0]}/versions/1/activate/", **auth)
    assert activate.status_code == 404
    retrieve = client.post("/api/v1/retrieve/", data={"query": "park free behind the salon gift cards", "k": 50},
                           content_type="application/json", **auth)
    assert retrieve.status_code == 200
    assert not [r for r in retrieve.json()["results"] if r["key"] in b.snippet_keys]
    listing = client.get("/api/v1/snippets/?limit=200", **auth).json()
    assert {row["key"] for row in listing["results"]} == {"parking", "cancellation", "arrive-early"}
