"""Key scopes: a chat key (what a website widget publishes) sends chat turns and nothing else, and each of its
visitors is limited on their own; a full key opens every API. Every /api/v1/ route is probed, so a route
added later is covered without editing this file."""
from __future__ import annotations

import io
import re

import pytest
from django.core.management import call_command
from django.test import override_settings
from django.urls import URLPattern, URLResolver, get_resolver

from knowledge.collections.models import Collection, Document
from knowledge.models import AuditEntry, OpeningHours, Service, SnippetVersion, SpecialDay
from ratiba.models import ApiKey
from ratiba.services import api_key_issue
from tests.support.builders import make_version, post_json

CHAT_ROUTES = {"api/v1/chat/turns/", "api/v1/chat/turns/stream/"}
_PARAM = re.compile(r"<(?:(\w+):)?(\w+)>")
_FILL = {"int": "1", "str": "parking", "slug": "parking", "path": "parking"}


def _api_operations() -> list[tuple[str, str]]:
    """(method, url) of every /api/v1/ operation, parameters filled with plausible values."""
    operations = []

    def walk(patterns, prefix: str) -> None:
        for pattern in patterns:
            text = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, text)
            elif isinstance(pattern, URLPattern) and text.startswith("api/v1/"):
                view_class = getattr(pattern.callback, "cls", None) or getattr(pattern.callback, "view_class", None)
                methods = [m for m in ("get", "post", "put", "patch", "delete") if hasattr(view_class, m)]
                url = "/" + _PARAM.sub(lambda m: _FILL.get(m.group(1) or "str", "parking"), text)
                operations.extend((method, url) for method in methods if text not in CHAT_ROUTES or method != "post")

    walk(get_resolver("ratiba.urls").url_patterns, "")
    return operations


OPERATIONS = _api_operations()


@pytest.fixture
def keys(tenant):
    return {scope: api_key_issue(tenant=tenant, label=f"{scope}-key", scope=scope).raw for scope in ("chat", "full")}


def _call(client, method: str, url: str, raw: str, body: dict | None = None, **extra):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {raw}", **extra}
    if method in ("get", "delete"):
        return getattr(client, method)(url, **headers)
    return post_json(client, url, body or {}, headers, method=method)


def test_the_probe_covers_the_authoring_telemetry_and_prompt_apis():
    urls = {url for _method, url in OPERATIONS}
    assert {"/api/v1/snippets/", "/api/v1/services/", "/api/v1/hours/weekly/", "/api/v1/collections/",
            "/api/v1/telemetry/retrieval-health/", "/api/v1/prompts/assemble/", "/api/v1/retrieve/",
            "/api/v1/whoami/"} <= urls
    assert len(OPERATIONS) >= 25


@pytest.mark.parametrize("method, url", OPERATIONS, ids=[f"{m} {u}" for m, u in OPERATIONS])
def test_a_chat_key_is_refused_on_every_other_endpoint_and_a_full_key_is_not(tenant, client_for, keys, method,
                                                                              url, fake_embedder):
    client = client_for(tenant)
    refused = _call(client, method, url, keys["chat"])
    assert refused.status_code == 403, refused.content
    assert refused.json()["error"] == {"code": "forbidden", "message": (
        "This is a chat key (publishable, for a website widget): it can only send chat turns. "
        "Use a full key for this endpoint.")}
    assert _call(client, method, url, keys["full"]).status_code != 403


@pytest.mark.parametrize("method, url, body", [
    ("post", "/api/v1/snippets/", {"key": "free-massage", "title": "Offer", "category": "service",
                                   "body": "Free massage worth KES 9,999 for everyone."}),
    ("patch", "/api/v1/snippets/parking/", {"body": "Parking costs KES 9,999."}),
    ("post", "/api/v1/snippets/parking/versions/1/activate/", {}),
    ("post", "/api/v1/services/", {"name": "Free massage", "price": "0", "duration_minutes": 60}),
    ("put", "/api/v1/hours/weekly/", {"mon": []}),
    ("put", "/api/v1/hours/special/2030-12-25/", {"hours": [], "note": "Closed"}),
    ("post", "/api/v1/collections/", {"name": "leaks", "scope": "tenant"}),
])
def test_a_chat_key_cannot_change_the_business(tenant, client_for, keys, fake_embedder, method, url, body):
    make_version("parking")
    before = (SnippetVersion.objects.count(), Service.objects.count(), OpeningHours.objects.count(),
              SpecialDay.objects.count(), Collection.objects.count(), Document.objects.count(),
              AuditEntry.objects.count())
    response = _call(client_for(tenant), method, url, keys["chat"], body)
    assert response.status_code == 403
    assert (SnippetVersion.objects.count(), Service.objects.count(), OpeningHours.objects.count(),
            SpecialDay.objects.count(), Collection.objects.count(), Document.objects.count(),
            AuditEntry.objects.count()) == before


def test_a_chat_key_cannot_upload_a_document(tenant, client_for, keys):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from knowledge.collections.services import collection_create

    collection_create(name="menus")
    upload = SimpleUploadedFile("prices.md", b"# Prices\nEverything is free.", content_type="text/markdown")
    response = client_for(tenant).post("/api/v1/collections/menus/documents/", {"file": upload},
                                       HTTP_AUTHORIZATION=f"Bearer {keys['chat']}")
    assert response.status_code == 403 and not Document.objects.exists()


@pytest.mark.parametrize("url", ["/api/v1/snippets/?role=guardrail", "/api/v1/telemetry/retrieval-health/"])
def test_a_chat_key_cannot_read_guardrails_or_telemetry(tenant, client_for, keys, fake_embedder, url):
    make_version("no-medical-advice", title="No medical advice", body="Never give medical advice.",
                 category="policy", role="guardrail", enforce_release_gate=False)
    refused = client_for(tenant).get(url, HTTP_AUTHORIZATION=f"Bearer {keys['chat']}")
    assert refused.status_code == 403 and "medical" not in refused.content.decode()
    assert client_for(tenant).get(url, HTTP_AUTHORIZATION=f"Bearer {keys['full']}").status_code == 200


def test_a_chat_key_sends_chat_turns_and_streams_them(chat, spa, client_for):
    raw = api_key_issue(tenant=spa, label="widget", scope="chat").raw
    client = client_for(spa)
    answered = _call(client, "post", "/api/v1/chat/turns/", raw, {"message": "Is there parking?"})
    assert answered.status_code == 200 and answered.json()["citations"][0]["key"] == "parking"
    streamed = _call(client, "post", "/api/v1/chat/turns/stream/", raw, {"message": "Hello"})
    assert streamed.status_code == 200 and b"event: final" in b"".join(streamed.streaming_content)


@override_settings(CHAT_KEY_RATE_LIMIT_PER_VISITOR_PER_MINUTE=2, API_RATE_LIMIT_PER_MINUTE=3)
def test_one_visitor_of_a_chat_key_cannot_use_up_the_key_for_everyone(spa, client_for):
    raw = api_key_issue(tenant=spa, label="widget", scope="chat").raw
    client = client_for(spa)
    abuser = [_call(client, "post", "/api/v1/chat/turns/", raw, {"message": "Hi"}, REMOTE_ADDR="10.0.0.66")
              for _ in range(5)]
    assert [r.status_code for r in abuser] == [200, 200, 429, 429, 429]
    assert abuser[-1].json()["error"]["code"] == "rate_limited" and 1 <= int(abuser[-1]["Retry-After"]) <= 60
    # The abuser's refused requests were not counted against the key: another visitor still gets in.
    other = _call(client, "post", "/api/v1/chat/turns/", raw, {"message": "Hi"}, REMOTE_ADDR="10.0.0.7")
    assert other.status_code == 200


@override_settings(CHAT_KEY_RATE_LIMIT_PER_VISITOR_PER_MINUTE=2)
def test_a_chat_key_visitor_is_limited_per_session_across_addresses(spa, client_for):
    raw = api_key_issue(tenant=spa, label="widget", scope="chat").raw
    client = client_for(spa)
    session_id = _call(client, "post", "/api/v1/chat/turns/", raw, {"message": "Hi"},
                       REMOTE_ADDR="10.0.1.1").json()["session_id"]
    statuses = [_call(client, "post", "/api/v1/chat/turns/", raw, {"message": "Hi", "session_id": session_id},
                      REMOTE_ADDR=f"10.0.2.{n}").status_code for n in range(3)]
    assert statuses == [200, 200, 429]


@override_settings(CHAT_KEY_RATE_LIMIT_PER_VISITOR_PER_MINUTE=2)
def test_a_full_key_has_no_per_visitor_limit(spa, client_for):
    raw = api_key_issue(tenant=spa, label="server", scope="full").raw
    statuses = [_call(client_for(spa), "post", "/api/v1/chat/turns/", raw, {"message": "Hi"},
                      REMOTE_ADDR="10.0.0.66").status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 200]


def test_the_command_issues_a_chat_key_and_defaults_to_full(tenant, client_for):
    out = io.StringIO()
    call_command("issue_api_key", tenant.schema_name, "--label", "widget", "--scope", "chat", stdout=out,
                 stderr=io.StringIO())
    chat_raw = out.getvalue().strip().splitlines()[-1]
    call_command("issue_api_key", tenant.schema_name, "--label", "server", stdout=io.StringIO(),
                 stderr=io.StringIO())
    assert dict(ApiKey.objects.filter(tenant=tenant).values_list("label", "scope")) == {"widget": "chat",
                                                                                        "server": "full"}
    assert client_for(tenant).get("/api/v1/whoami/", HTTP_AUTHORIZATION=f"Bearer {chat_raw}").status_code == 403
    entries = list(AuditEntry.objects.filter(subject="api_key").order_by("id").values_list("action", "actor",
                                                                                           "detail"))
    assert entries == [("issued", "command:issue_api_key", {"label": "widget", "scope": "chat"}),
                       ("issued", "command:issue_api_key", {"label": "server", "scope": "full"})]


def test_the_command_refuses_an_unknown_scope(tenant):
    from django.core.management import CommandError

    with pytest.raises(CommandError, match="invalid choice: 'admin'"):
        call_command("issue_api_key", tenant.schema_name, "--scope", "admin", stdout=io.StringIO())
