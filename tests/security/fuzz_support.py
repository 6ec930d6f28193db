"""Schemathesis fuzzing of the REST API through the WSGI app.

Shared by tests/security/test_fuzz_schema.py (a bounded run in `make test`) and bench/fuzz_long.py (a long
run). Operations come from the live OpenAPI schema served at /api/schema/ on a tenant host, so a new
endpoint is fuzzed without editing anything here.
"""
from __future__ import annotations

import collections
import contextlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import hypothesis
import schemathesis
from hypothesis import HealthCheck, Phase
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.core.failures import FailureGroup

SCHEMA_PATH = "/api/schema/?format=json"


def _checks() -> list[Callable]:
    from schemathesis import checks
    from schemathesis.specs.openapi import checks as openapi_checks

    # No 5xx; every status documented; responses of the documented media type and shape.
    return [checks.not_a_server_error, openapi_checks.status_code_conformance,
            openapi_checks.content_type_conformance, openapi_checks.response_schema_conformance]


@dataclass
class OperationReport:
    """What fuzzing one operation did: examples sent, statuses seen, distinct failures."""

    label: str
    examples: int = 0
    seconds: float = 0.0
    statuses: collections.Counter = field(default_factory=collections.Counter)
    failures: dict[str, str] = field(default_factory=dict)  # short title -> first full report

    @property
    def ok(self) -> bool:
        return not self.failures


@contextlib.contextmanager
def connections_kept_open():
    """Keep Django from closing the database connection around each request (as its test Client does).

    Inside a test, requests share the test's transaction; the WSGI handler's request_started/finished
    signals would otherwise close that connection and roll everything back mid-test.
    """
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


def load_schema(*, app, host: str):
    """The OpenAPI schema exactly as a tenant host serves it, bound to the WSGI app."""
    return schemathesis.openapi.from_wsgi(SCHEMA_PATH, app, headers={"Host": host})


def operations(schema) -> list:
    return [result.ok() for result in schema.get_all_operations()]


def _failure_titles(exc: FailureGroup) -> list[str]:
    return sorted({f"{type(failure).__name__}: {failure.title}" for failure in exc.exceptions})


def fuzz_operation(operation, *, app, host: str, headers: dict, max_examples: int, seed: int = 0,
                   known_path_values: dict[str, Iterable] | None = None, keep_going: bool = False,
                   modes: Iterable[GenerationMode] = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE),
                   always_known: bool = False, on_response: Callable | None = None) -> OperationReport:
    """Send up to `max_examples` generated requests to one operation and check every response.

    Path parameters (and top-level body fields of the same name) sometimes take a value known to exist
    (`known_path_values`), so requests reach past the 404; with `always_known` they always do. With
    `keep_going`, failures are collected and the run continues; otherwise the first failure raises (after
    the report records it). `on_response(case, response)` may add its own assertions.
    """
    report = OperationReport(label=operation.label)
    known = {name: list(values) for name, values in (known_path_values or {}).items() if values}
    strategy = st.one_of([operation.as_strategy(generation_mode=mode) for mode in modes])
    checks = _checks()
    base_url = f"http://{host}"

    def use_known(data, name: str) -> bool:
        return name in known and (always_known or data.draw(st.booleans(), label=f"known {name}"))

    @hypothesis.seed(seed)
    @hypothesis.settings(max_examples=max_examples, deadline=None, database=None, print_blob=False,
                         suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate],
                         derandomize=False)
    @hypothesis.given(case=strategy, data=st.data())
    def run(case, data):
        for name in list(case.path_parameters or {}):
            if use_known(data, name):
                case.path_parameters[name] = data.draw(st.sampled_from(known[name]), label=name)
        if isinstance(case.body, dict):
            for name in list(case.body):
                if use_known(data, name):
                    case.body[name] = data.draw(st.sampled_from(known[name]), label=f"body {name}")
        response = case.call(base_url=base_url, headers=headers, app=app)
        report.examples += 1
        report.statuses[response.status_code] += 1
        try:
            case.validate_response(response, checks=checks, headers=headers)
            if on_response is not None:
                on_response(case, response)
        except FailureGroup as exc:
            for title in _failure_titles(exc):
                report.failures.setdefault(title, str(exc))
            if not keep_going:
                raise
        except AssertionError as exc:
            report.failures.setdefault(f"AssertionError: {str(exc).splitlines()[0][:120]}",
                                       f"{case.method} {case.formatted_path}: {exc}")
            if not keep_going:
                raise

    started = time.monotonic()
    try:
        run()
    finally:
        report.seconds = time.monotonic() - started
    return report


def seed_fuzz_data(*, client, headers: dict) -> dict[str, list]:
    """Create a little of everything through the API itself; return path values that exist (for the fuzzer).

    `client` is a Django test Client on the tenant host; `headers` its Authorization header as WSGI META.
    """
    def post(path: str, payload: dict) -> dict:
        response = client.post(path, data=payload, content_type="application/json", **headers)
        assert response.status_code in (200, 201), (path, response.status_code, response.content[:300])
        return response.json()

    keys = []
    for key, title, body, category in [
        ("parking", "Parking", "Free parking for guests in the basement; bring your ticket to reception.", "facility"),
        ("cancellation", "Cancellation policy", "Cancel free of charge up to 12 hours before your visit.", "policy"),
        ("arrive-early", "Arrive early", "Please arrive 15 minutes before your appointment.", "prep"),
    ]:
        keys.append(post("/api/v1/snippets/", {"key": key, "title": title, "body": body, "category": category})["key"])
    client.patch("/api/v1/snippets/parking/", data={"body": "Free parking in the basement for 3 hours."},
                 content_type="application/json", **headers)
    service = post("/api/v1/services/", {"name": "Swedish Massage", "duration_minutes": 60, "price": "4500.00"})
    collection = post("/api/v1/collections/", {"name": "price-list", "scope": "tenant"})["name"]
    upload = client.post(f"/api/v1/collections/{collection}/documents/",
                         data={"file": _upload("prices.md", b"# Prices\n\nA facial costs KES 3,000.\n")}, **headers)
    assert upload.status_code in (200, 201), upload.content[:300]
    session = post("/api/v1/chat/turns/", {"message": "Is there parking?"})["session_id"]
    client.put("/api/v1/hours/special/2026-12-24/", data={"hours": ["09:00-13:00"], "note": "Christmas Eve"},
               content_type="application/json", **headers)
    return {"key": keys, "name": [collection], "document_id": [upload.json()["id"]], "service_id": [service["id"]],
            "session_id": [session], "date": ["2026-12-24"], "number": [1, 2]}


def _upload(name: str, data: bytes):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, data, content_type="text/markdown")
