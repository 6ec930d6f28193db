"""Every REST operation in the OpenAPI schema, fuzzed with schemathesis: no 5xx, responses match the schema.

Operations are listed from the schema at collection time (a new endpoint becomes a new test item without
editing this file), and each test fuzzes the schema the tenant host actually serves at /api/schema/,
authenticated with a real key, through the WSGI app, inside the test's rolled-back transaction.
Positive and negative examples; checks: not_a_server_error, status_code_conformance,
content_type_conformance, response_schema_conformance. The long run is bench/fuzz_long.py.
"""
from __future__ import annotations

import pytest
from django.core.wsgi import get_wsgi_application
from django.test import override_settings

from fuzz_support import connections_kept_open, fuzz_operation, load_schema, operations, seed_fuzz_data

# These tests are about status codes and leaks, not meaning: the instant fake embedder serves them.
pytestmark = pytest.mark.usefixtures("fake_embedder")

MAX_EXAMPLES = 20
SEED = 20260501
HOST = "tenant.test.localhost"


def _collected_labels() -> list[str]:
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator(urlconf="ratiba.urls").get_schema(request=None, public=True)
    return [f"{method.upper()} {path}" for path, item in schema["paths"].items() for method in item]


LABELS = _collected_labels()


@pytest.fixture
def fuzz_target(tenant, api_client):
    """(WSGI app, the served schema, auth header, path values that exist) with a little data of each kind."""
    client, meta = api_client
    known = seed_fuzz_data(client=client, headers=meta)
    app = get_wsgi_application()
    with connections_kept_open():
        yield app, load_schema(app=app, host=HOST), {"Authorization": meta["HTTP_AUTHORIZATION"]}, known


def test_the_served_schema_lists_exactly_the_operations_fuzzed_here(fuzz_target):
    _, schema, _, _ = fuzz_target
    assert sorted(op.label for op in operations(schema)) == sorted(LABELS)
    assert len(LABELS) >= 31


def test_every_error_status_is_documented_with_the_error_shape(fuzz_target):
    _, schema, _, _ = fuzz_target
    for path, item in schema.raw_schema["paths"].items():
        for method, operation in item.items():
            statuses = set(operation["responses"])
            assert {"401", "429", "503"} <= statuses, (method, path)
            for status, response in operation["responses"].items():
                if int(status) >= 400:
                    assert response["content"]["application/json"]["schema"] == {
                        "$ref": "#/components/schemas/Error"}, (method, path, status)


@pytest.mark.parametrize("label", LABELS)
@override_settings(API_RATE_LIMIT_PER_MINUTE=10**6, API_RATE_LIMIT_PER_IP_PER_MINUTE=10**6)
def test_fuzzed_requests_get_no_server_error_and_documented_responses(label, fuzz_target):
    app, schema, headers, known = fuzz_target
    operation = next(op for op in operations(schema) if op.label == label)
    report = fuzz_operation(operation, app=app, host=HOST, headers=headers, max_examples=MAX_EXAMPLES, seed=SEED,
                            known_path_values=known, keep_going=True)
    assert report.examples >= min(MAX_EXAMPLES, 5)
    assert list(report.failures) == [], "\n\n".join(report.failures.values())
    assert not [status for status in report.statuses if status >= 500]
