"""Tenant isolation, pages: no page of tenant A's host ever shows tenant B's data, whoever asks.

Every route of the tenant URLconf (admin pages of every registered model, version history, diff, release,
rollback, test retrieval, collections upload/documents, smoke tests, /chat/, the widget, citations,
/telemetry/, the gap digest, kept digests) is requested on A's host with B's real identifiers (primary
keys, keys, version numbers, collection and document ids, digest days): by A's owner, by an anonymous
visitor and by a browser carrying B's owner's session cookie. B's secret never appears in a body or a
redirect, nothing answers 5xx, and B's tables are byte-for-byte unchanged afterwards.
"""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client

from fuzz_support import seed_fuzz_data
from isolation_data import PASSWORD, SECRET, body_text, leaked, seed_other_tenant, tenant_fingerprint
from isolation_routes import route_urls, tenant_routes

# These tests are about status codes and leaks, not meaning: the instant fake embedder serves them.
pytestmark = pytest.mark.usefixtures("fake_embedder")

A_HOST = "tenant.test.localhost"
B_HOST = "other.test.localhost"


@pytest.fixture
def world(tenant, other_tenant, api_client, client_for):
    """A with a little data and a signed-in superuser; B full of SECRET-bearing data."""
    client, meta = api_client
    seed_fuzz_data(client=client, headers=meta)
    owner = get_user_model().objects.create_superuser(username="owner-a", password=PASSWORD, email="a@example.com")
    b = seed_other_tenant(other_tenant, client_for)
    connection.set_tenant(tenant)
    return owner, b


def _probe(client: Client, url: str) -> tuple[int, str, str]:
    response = client.get(url, HTTP_HOST=A_HOST)
    if response.status_code == 405:
        response = client.post(url, data={}, HTTP_HOST=A_HOST)
    return response.status_code, body_text(response), response.get("Location", "")


def _all_urls(b) -> list[str]:
    urls = []
    for route in tenant_routes():
        urls += route_urls(route, values=b.path_values(), pks=b.pks)
    return urls


def test_every_route_is_enumerated_with_other_tenant_identifiers(world):
    _, b = world
    routes = {route.name for route in tenant_routes()}
    assert {"admin:knowledge_snippet_versions", "admin:knowledge_snippet_diff", "knowledge-test-retrieval",
            "admin:knowledge_collection_upload", "chat", "chat-widget", "chat-citation", "telemetry:dashboard",
            "telemetry:gaps", "telemetry:digest", "admin:telemetry_digest_change"} <= routes
    urls = _all_urls(b)
    assert f"/telemetry/digests/{b.digest_day}/" in urls
    assert f"/chat/citations/{b.snippet_keys[0]}/1/" in urls
    assert len(urls) > 150


def test_an_owner_of_a_gets_nothing_of_b_on_any_page(world, client_for, other_tenant):
    owner, b = world
    before = tenant_fingerprint(other_tenant.schema_name)
    client = Client()
    client.force_login(owner)
    problems = []
    statuses = {}
    for url in _all_urls(b):
        status, body, location = _probe(client, url)
        statuses[url] = status
        if status >= 500 or leaked(body + location, sent=url):
            problems.append((url, status, leaked(body + location, sent=url)))
    assert problems == []
    # The owner really was signed in: A's own pages rendered.
    assert statuses["/admin/knowledge/snippet/"] == statuses["/telemetry/"] == statuses["/chat/"] == 200
    assert tenant_fingerprint(other_tenant.schema_name) == before


def test_an_anonymous_visitor_and_bs_session_cookie_get_nothing_on_as_host(world, client_for):
    _, b = world
    b_browser = Client()
    assert b_browser.login(username=b.username, password=PASSWORD) is False  # not a user on the default host
    b_browser = client_for(B_HOST)
    signed_in = b_browser.post("/admin/login/", {"username": b.username, "password": PASSWORD})
    assert signed_in.status_code == 302 and "sessionid" in b_browser.cookies
    assert b_browser.get("/admin/knowledge/snippet/").status_code == 200  # B's owner, on B's host
    problems = []
    for client in (Client(), b_browser):
        for url in _all_urls(b):
            status, body, location = _probe(client, url)
            if status >= 500 or leaked(body + location, sent=url):
                problems.append((url, status))
            if url.startswith(("/admin/knowledge", "/telemetry/gaps/", "/chat/")) and "login" not in url:
                assert status in (302, 403, 404, 405), (url, status)
    assert problems == []


@pytest.mark.parametrize("login_path", ["/admin/login/", "/telemetry/login/"])
def test_a_user_of_a_cannot_sign_in_on_bs_host(world, client_for, login_path):
    owner, _ = world
    client = client_for(B_HOST)
    response = client.post(login_path, {"username": owner.username, "password": PASSWORD})
    assert response.status_code == 200  # the form again, with an error
    assert "sessionid" not in client.cookies
    assert client.get("/telemetry/").status_code == 302
    assert client.get("/admin/knowledge/snippet/").status_code == 302
    # The same credentials work on A's own host.
    own = client_for(A_HOST)
    assert own.post(login_path, {"username": owner.username, "password": PASSWORD}).status_code == 302


def test_searches_on_as_pages_for_words_only_b_uses_never_surface_bs_knowledge(world):
    owner, b = world
    client = Client(HTTP_HOST=A_HOST)
    client.force_login(owner)
    # Words that match B's snippets, document, services, turns and gaps (but not the secret itself).
    for url in ("/admin/knowledge/test-retrieval/?q=park+free+behind+the+salon",
                "/admin/knowledge/test-retrieval/?q=gift+cards+valid+for+a+year&intent=other&channel=chat",
                "/admin/knowledge/snippet/?q=gift", f"/admin/knowledge/snippet/?q={b.snippet_keys[0]}",
                "/admin/knowledge/document/?q=menu", "/admin/knowledge/service/?q=hot+stones",
                "/admin/conversations/turn/?q=groom", "/admin/telemetry/event/?q=moon",
                "/telemetry/gaps/?status=open", "/telemetry/gaps/?status=dismissed", "/telemetry/?days=30"):
        response = client.get(url)
        assert response.status_code == 200, url
        assert SECRET not in body_text(response), url
    assert client.get(f"/chat/citations/{b.snippet_keys[0]}/2/").status_code == 404
    assert client.get(f"/telemetry/digests/{b.digest_day}/").status_code == 404


def test_the_public_host_shows_no_tenant_data_to_visitors(world, client_for):
    _, b = world
    public = client_for("localhost")
    for url in ("/", "/platform/", "/admin/", "/admin/ratiba/apikey/"):
        response = public.get(url)
        assert response.status_code in (200, 302), url
        assert b.key_prefix not in body_text(response)
        assert SECRET not in body_text(response)


def test_the_probe_notices_a_leak_when_there_is_one(world):
    """The harness itself: the same secret in A's own data is found on A's pages (so silence means absence)."""
    from knowledge.services import snippet_version_create

    owner, _ = world
    snippet_version_create(key="planted", title=f"Planted {SECRET}", body="x", category="general", role="retrieved",
                           queue_embedding=False)
    client = Client(HTTP_HOST=A_HOST)
    client.force_login(owner)
    _, body, _ = _probe(client, "/admin/knowledge/snippet/")
    assert leaked(body, sent="/admin/knowledge/snippet/") == [SECRET]


def test_exports_of_a_contain_nothing_of_b(world, tenant, tmp_path):
    """The data export and the knowledge export of A, byte for byte free of B (and of B's key prefix)."""
    from django.core.management import call_command

    _, b = world
    data_file, seed_file = tmp_path / "a.json", tmp_path / "a.yaml"
    call_command("export_tenant_data", tenant.schema_name, str(data_file))
    call_command("export_knowledge", str(seed_file), "--tenant", tenant.schema_name)
    for path in (data_file, seed_file):
        text = path.read_text(encoding="utf-8")
        assert "parking" in text  # A's own data is there
        assert leaked(text) == [] and b.key_prefix not in text, path.name
