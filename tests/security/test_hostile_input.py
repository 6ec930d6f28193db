"""Hostile and malformed input, by hand: every answer is a clean 4xx or a normal answer, never a 5xx or script.

Body-level attacks (too big, 10,000 levels deep, invalid UTF-8, wrong media type) run against every
operation of the served schema that takes a body, so new endpoints are covered automatically.
"""
from __future__ import annotations

import html
import re
from html.parser import HTMLParser

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client, override_settings

from fuzz_support import seed_fuzz_data
from knowledge.models import Snippet, SnippetVersion

# These tests are about status codes and leaks, not meaning: the instant fake embedder serves them.
pytestmark = pytest.mark.usefixtures("fake_embedder")

HOST = "tenant.test.localhost"
DEEP_JSON = "[" * 10_000 + "]" * 10_000
DEEP_OBJECT = '{"message": ' + '{"a":' * 5_000 + "1" + "}" * 5_000 + "}"  # 5,000 levels within the 64 KB limit
HOSTILE_QUERIES = ['"', '""', "&|!:*()", "' OR 1=1 --", "<->", "\\", "\\\\", "a:*", "!!!", "(((", ")))", "-",
                   "or or or", "'; DROP TABLE knowledge_snippetversion; --", '"unterminated', "parking <-> free",
                   "*:*", "& & &", "%", "_%_", "\u202eparking", "💆‍♀️🚗", "هل يوجد موقف سيارات؟", "פרקינג?",
                   "parking:* & !free | (spa <2> steam)", "x" * 1999]
XSS = {
    "script": "<script>window.__xss=1;alert('xss-script')</script>",
    "img": "<img src=x onerror=\"window.__xss=1;alert('xss-img')\">",
    "svg": "\"><svg onload=alert('xss-svg')>",
    "link": "[click me](javascript:alert('xss-link'))",
    "iframe": "<iframe src=\"javascript:alert('xss-iframe')\"></iframe>",
}
XSS_TEXT = " ".join(XSS.values())


class _ExecutableMarkup(HTMLParser):
    """Collects markup a browser would run: inline event handlers, javascript: URLs, payload scripts."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name.startswith("on"):
                self.found.append(f"<{tag} {name}={value!r}>")
            elif name in ("href", "src", "action", "formaction") and (value or "").strip().lower().startswith(
                    "javascript:"):
                self.found.append(f"<{tag} {name}={value!r}>")
        # A JSON data block (json_script) is not run; the payload inside it is \u003C-escaped data.
        self._in_script = tag == "script" and dict(attrs).get("type", "text/javascript") != "application/json"

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script and "__xss" in data:
            self.found.append(f"<script>{data[:60]}")


def executable_markup(page: str) -> list[str]:
    """What in `page` would execute (the project's own templates use no inline handlers or javascript: URLs)."""
    parser = _ExecutableMarkup()
    parser.feed(page)
    parser.close()
    return parser.found


@pytest.fixture
def api(tenant, api_client):
    client, headers = api_client

    def call(method: str, path: str, body=None, *, content_type: str = "application/json", **extra):
        kwargs = dict(headers, **extra)
        if body is not None:
            kwargs.update(data=body, content_type=content_type)
        return getattr(client, method.lower())(path, **kwargs)

    call.client, call.headers = client, headers
    return call


def _body_operations(client) -> list[tuple[str, str, list[str]]]:
    """(METHOD, path with sample ids, request media types) for every operation that takes a body."""
    schema = client.get("/api/schema/?format=json").json()
    found = []
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if "requestBody" in operation:
                sample = re.sub(r"\{date\}", "2026-12-24", re.sub(r"\{\w*id\}|\{number\}", "1", path))
                found.append((method.upper(), re.sub(r"\{\w+\}", "parking", sample),
                              list(operation["requestBody"]["content"])))
    return found


def _text(response) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode()
    return response.content.decode()


# ----------------------------------------------------------------------------- bodies, schema-driven


def test_every_body_taking_operation_is_probed(api):
    operations = _body_operations(api.client)
    assert len(operations) >= 13
    assert ("POST", "/api/v1/chat/turns/") in {(m, p) for m, p, _ in operations}


def test_a_body_over_the_limit_is_413_on_every_operation(api, settings):
    settings.DOCUMENT_MAX_BYTES = 2_000
    for method, path, media_types in _body_operations(api.client):
        limit = settings.DOCUMENT_MAX_BYTES if path.endswith("/documents/") else settings.API_MAX_BODY_BYTES
        body = '{"message": "' + "a" * (limit + 10) + '"}'
        response = api(method, path, body)
        assert response.status_code == 413, (method, path)
        assert response.json()["error"]["code"] == "payload_too_large"


def test_json_nested_ten_thousand_levels_deep_is_a_400_on_every_json_operation(api):
    for method, path, media_types in _body_operations(api.client):
        for body in (DEEP_JSON, DEEP_OBJECT):
            response = api(method, path, body)
            expected = 400 if "application/json" in media_types else 415
            assert response.status_code in (expected, 404), (method, path, response.status_code)
            if response.status_code == 400:
                assert response.json()["error"]["code"] == "malformed_request", (method, path)


def test_invalid_utf8_and_non_json_bodies_are_clean_4xx_on_every_operation(api):
    for method, path, media_types in _body_operations(api.client):
        broken = api(method, path, b'{"message": "caf\xe9 \xff\xfe", "query": "\xc3\x28"}')
        assert broken.status_code in (400, 404, 415), (method, path, broken.status_code)
        assert broken.json()["error"]["code"] in ("malformed_request", "not_found", "session_not_found",
                                                  "unsupported_media_type")
        plain = api(method, path, "message=hi", content_type="text/plain")
        assert plain.status_code in (404, 415), (method, path, plain.status_code)


def test_a_deep_or_broken_body_on_the_chat_page_stream_is_a_400(tenant):
    owner = get_user_model().objects.create_user("owner", is_staff=True)
    client = Client(HTTP_HOST=HOST)
    client.force_login(owner)
    for body in (DEEP_JSON, DEEP_OBJECT, b'{"message": "\xff"}', '{"message": ' + "[" * 40 + "]" * 40 + "}"):
        response = client.post("/chat/stream/", data=body, content_type="application/json")
        assert response.status_code == 400
        assert response.json()["error"]["code"] in ("malformed_request", "invalid_request")
    big = client.post("/chat/stream/", data='{"message": "' + "a" * 70_000 + '"}', content_type="application/json")
    assert big.status_code == 413


# ----------------------------------------------------------------------------- NUL bytes


@pytest.mark.parametrize(("method", "path", "body", "field"), [
    ("post", "/api/v1/chat/turns/", {"message": "park\x00ing"}, "message"),
    ("post", "/api/v1/chat/turns/stream/", {"message": "park\x00ing"}, "message"),
    ("post", "/api/v1/chat/turns/", {"message": "hi", "session_id": "s_\x00"}, "session_id"),
    ("post", "/api/v1/chat/turns/", {"message": "parking", "filters": {"tags": ["spa\x00"]}}, "filters"),
    ("post", "/api/v1/retrieve/", {"query": "park\x00ing"}, "query"),
    ("post", "/api/v1/retrieve/", {"query": "parking", "filters": {"keys": ["a\x00"]}}, "filters"),
    ("post", "/api/v1/prompts/assemble/", {"channel": "chat", "message": "a\x00b"}, "message"),
    ("post", "/api/v1/prompts/assemble/", {"channel": "chat", "message": "hi", "filters": {"category": "a\x00"}},
     "filters"),
    ("post", "/api/v1/snippets/", {"key": "k", "title": "t", "body": "b\x00", "category": "policy"}, "body"),
    ("post", "/api/v1/snippets/", {"key": "k", "title": "t\x00", "body": "b", "category": "policy"}, "title"),
    ("post", "/api/v1/snippets/", {"key": "k", "title": "t", "body": "b", "category": "policy", "tags": ["\x00"]},
     "tags"),
    ("post", "/api/v1/services/", {"name": "x\x00", "duration_minutes": 5, "price": "1"}, "name"),
    ("put", "/api/v1/hours/weekly/", {"mon": ["09:00\x00-10:00"]}, "mon"),
    ("put", "/api/v1/hours/special/2026-12-24/", {"hours": [], "note": "\x00"}, "note"),
    ("post", "/api/v1/collections/", {"name": "menu", "description": "d\x00"}, "description"),
])
def test_nul_bytes_in_body_fields_are_a_400_naming_the_field(api, method, path, body, field):
    response = api(method, path, body)
    assert response.status_code == 400
    assert field in response.json()["error"]["fields"]
    assert not Snippet.objects.exists()


@pytest.mark.parametrize("url", [
    "/api/v1/sessions/s_a%00b/collections/", "/api/v1/snippets/?q=park%00ing", "/api/v1/snippets/a%00b/",
    "/api/v1/hours/special/2026-12-2%00/", "/api/v1/telemetry/retrieval-health/?days=7%00",
    "/admin/knowledge/snippet/?q=park%00ing", "/admin/knowledge/test-retrieval/?q=%00", "/telemetry/gaps/?language=%00",
    "/admin/conversations/turn/?q=%00", "/chat/citations/%00/1/", "/telemetry/digests/%00/",
])
def test_nul_bytes_in_paths_and_query_strings_are_a_400(api, url):
    owner = get_user_model().objects.create_superuser("owner", password=None, email="")
    api.client.force_login(owner)
    response = api("get", url)
    assert response.status_code == 400
    assert b"NUL" in response.content


def test_uploads_with_nul_bytes_are_refused_as_binary_or_stored_without_them(api):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from knowledge.collections.models import Document
    from knowledge.collections.services import document_ingest

    api("post", "/api/v1/collections/", {"name": "menu"})

    def upload(name: str, data: bytes):
        return api.client.post("/api/v1/collections/menu/documents/", **api.headers,
                               data={"file": SimpleUploadedFile(name, data, content_type="text/markdown")})

    binary = upload("menu.md", b"# Menu\n\nA facial\x00 costs KES 3,000.\n")
    assert (binary.status_code, binary.json()["error"]["code"]) == (400, "invalid_document")
    assert not Document.objects.exists()
    named = upload("me\x00nu\x01.md", b"# Menu\n\nA facial costs KES 3,000.\n")
    assert named.status_code == 201
    document_ingest(document_id=named.json()["id"])
    document = Document.objects.get()
    assert (document.filename, document.status) == ("menu.md", "done")


# ----------------------------------------------------------------------------- long, emoji, RTL text


@pytest.mark.parametrize(("path", "body", "field"), [
    ("/api/v1/chat/turns/", {"message": "a" * 10_000}, "message"),
    ("/api/v1/chat/turns/stream/", {"message": "ab " * 3_400}, "message"),
    ("/api/v1/prompts/assemble/", {"channel": "chat", "message": "a" * 10_000}, "message"),
    ("/api/v1/retrieve/", {"query": "parking " * 1_300}, "query"),
    ("/api/v1/snippets/", {"key": "long", "title": "t", "body": "a" * 20_001, "category": "policy"}, "body"),
])
def test_ten_thousand_character_text_is_a_400_field_error(api, path, body, field):
    response = api("post", path, body)
    assert response.status_code == 400
    assert "no more than" in response.json()["error"]["fields"][field][0]


@pytest.mark.parametrize("message", ["💆‍♀️ Is there parking? 🚗🅿️", "هل يوجد موقف سيارات في السبا؟",
                                     "\u202eIs there parking?\u202c", "מה שעות הפתיחה? 🙏", "Je, kuna parking? 👍🏾"])
def test_emoji_and_right_to_left_messages_are_answered(api, message):
    seed_fuzz_data(client=api.client, headers=api.headers)
    response = api("post", "/api/v1/chat/turns/", {"message": message})
    assert response.status_code == 200
    body = response.json()
    assert body["answer"].strip()
    stored = api("post", "/api/v1/chat/turns/", {"message": "thanks", "session_id": body["session_id"]})
    assert stored.status_code == 200
    from conversations.models import Turn

    assert Turn.objects.filter(message=message).count() == 1


def test_emoji_and_rtl_snippet_text_round_trips_through_the_api(api):
    text = "Maegesho ya bure 🚗 — موقف مجاني — חניה חינם ‮reversed‬"
    created = api("post", "/api/v1/snippets/", {"key": "parking-intl", "title": "Parking 🅿️", "body": text,
                                                "category": "facility"})
    assert created.status_code == 201
    assert api("get", "/api/v1/snippets/parking-intl/").json()["body"] == text


# ----------------------------------------------------------------------------- SQL / FTS operators


def test_sql_and_search_operator_strings_never_break_any_search(api):
    seed_fuzz_data(client=api.client, headers=api.headers)
    owner = get_user_model().objects.create_superuser("owner", password=None, email="")
    page = Client(HTTP_HOST=HOST)
    page.force_login(owner)
    before = SnippetVersion.objects.count()
    for text in HOSTILE_QUERIES:
        assert api("post", "/api/v1/retrieve/", {"query": text}).status_code == 200, text
        assert api("post", "/api/v1/retrieve/", {"query": text, "intent": "services"}).status_code == 200, text
        assert api("post", "/api/v1/chat/turns/", {"message": text}).status_code == 200, text
        assert api("post", "/api/v1/prompts/assemble/", {"channel": "email", "message": text}).status_code == 200
        assert api("get", "/api/v1/snippets/", data={"q": text[:200]}).status_code == 200, text
        for url in ("/admin/knowledge/test-retrieval/", "/admin/knowledge/snippet/", "/admin/conversations/turn/"):
            assert page.get(url, {"q": text}).status_code == 200, (url, text)
        assert page.get("/telemetry/gaps/", {"language": text, "status": text}).status_code == 200, text
    assert SnippetVersion.objects.count() == before
    with connection.cursor() as cursor:
        for text in HOSTILE_QUERIES:
            cursor.execute("SELECT websearch_to_tsquery('english', %s)::text", [text])


# ----------------------------------------------------------------------------- XSS, server-rendered pages


@pytest.fixture
def xss_world(api, answers_whatever_is_retrieved):
    """Customer questions, snippets (two versions), a service and a digest, all carrying script payloads."""
    from knowledge.services import snippet_versions_embed
    from telemetry.digest import daily_digest_run, gap_digest_refresh

    # Asked while the knowledge base is empty: refused, so they land in the gap digest as written.
    for message in (f"Can I bring my {XSS['img']} iguana to the sauna?",
                    f"{XSS['script']} is there a swimming pool on the roof?"):
        assert api("post", "/api/v1/chat/turns/", {"message": message}).json()["refusal_reason"]
    assert api("post", "/api/v1/snippets/", {"key": "parking", "title": f"Parking {XSS['svg']}", "category": "facility",
                                             "body": "Free parking is in the basement for guests."}
               ).status_code == 201
    snippet_versions_embed()  # embedding tasks wait for a commit that never comes in a test transaction
    answered = api("post", "/api/v1/chat/turns/", {"message": "Is there parking?"}).json()
    assert api("post", "/api/v1/snippets/", {"key": "house-rules", "title": f"Rules {XSS['img']}", "category": "policy",
                                             "body": f"Towels are provided. {XSS_TEXT}"}).status_code == 201
    assert api("patch", "/api/v1/snippets/house-rules/", {"body": f"Robes are provided. {XSS_TEXT}"}).status_code == 200
    assert api("post", "/api/v1/services/", {"name": f"Massage {XSS['svg']}", "duration_minutes": 60, "price": "4500",
                                             "description": XSS_TEXT}).status_code == 201
    gap_digest_refresh()
    daily_digest_run(send=False)
    owner = get_user_model().objects.create_superuser("owner", password=None, email="")
    page = Client(HTTP_HOST=HOST)
    page.force_login(owner)
    return page, answered


def test_script_in_snippets_and_questions_is_inert_on_every_owner_page(xss_world):
    from telemetry.models import Digest, GapGroup

    page, _ = xss_world
    snippet = Snippet.objects.get(key="house-rules")
    urls = ["/admin/knowledge/snippet/", f"/admin/knowledge/snippet/{snippet.pk}/change/",
            f"/admin/knowledge/snippet/{snippet.pk}/versions/",
            f"/admin/knowledge/snippet/{snippet.pk}/versions/diff/?a=1&b=2",
            "/admin/knowledge/test-retrieval/?q=is+there+parking", "/admin/knowledge/service/",
            "/admin/conversations/turn/", "/admin/conversations/session/", "/admin/telemetry/event/",
            "/admin/telemetry/gapgroup/", "/telemetry/", "/telemetry/gaps/", "/telemetry/gaps/?status=resolved",
            "/telemetry/digests/",
            f"/telemetry/digests/{Digest.objects.get().day.isoformat()}/", "/chat/",
            f"/admin/knowledge/snippet/add/?title={XSS['img']}&body={XSS['script']}"]
    assert GapGroup.objects.exists()
    shown = {}
    for url in urls:
        response = page.get(url)
        assert response.status_code == 200, url
        text = _text(response)
        assert not executable_markup(text), (url, executable_markup(text)[:3])
        shown[url] = text
    # The payloads were really on the pages, as text.
    escaped_img = html.escape(XSS["img"], quote=False)
    assert escaped_img in shown[f"/admin/knowledge/snippet/{snippet.pk}/versions/"] or \
        "&lt;img src=x onerror" in shown[f"/admin/knowledge/snippet/{snippet.pk}/versions/"]
    gaps = shown["/telemetry/gaps/"] + shown["/telemetry/gaps/?status=resolved"]
    assert "&lt;img src=x onerror" in gaps and "&lt;script&gt;" in gaps
    assert "&lt;script&gt;" in shown["/admin/conversations/turn/"]


def test_the_digest_email_escapes_customer_questions(xss_world, mailoutbox):
    from telemetry.digest import daily_digest_run

    get_user_model().objects.filter(username="owner").update(email="owner@example.com")
    daily_digest_run(send=True, force=True)
    html_body = mailoutbox[-1].alternatives[0][0]
    assert not executable_markup(html_body)
    assert "&lt;img src=x onerror" in html_body


def test_the_chat_apis_return_payloads_as_json_data_not_markup(api, xss_world):
    _, answer = xss_world
    assert "Free parking" in answer["answer"]
    assert XSS["svg"] in answer["citations"][0]["title"]  # data, exactly as written: the client must not render it
    stream = api("post", "/api/v1/chat/turns/stream/", {"message": "Is there parking?"})
    assert stream["Content-Type"].startswith("text/event-stream")
    for line in _text(stream).splitlines():
        assert not line.startswith("data:") or not re.search(r"<(script|img|svg|iframe)", line[5:].split('"')[0])


# ----------------------------------------------------------------------------- seed files


SEED_HEADER = "tenant:\n  schema: bomb_tenant\n  name: Bomb\n  domain: bomb.test.localhost\n"
BILLION_LAUGHS = SEED_HEADER + 'lol0: &lol0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"lol{i}: &lol{i} [{','.join([f'*lol{i - 1}'] * 10)}]\n" for i in range(1, 10)) + "snippets: *lol9\n"


@pytest.mark.parametrize(("name", "content", "message"), [
    ("billion-laughs.yaml", BILLION_LAUGHS, "YAML aliases"),
    ("merge-keys.yaml", SEED_HEADER + "base: &b {key: parking}\nsnippets:\n  - <<: *b\n", "YAML aliases"),
    ("deep.yaml", SEED_HEADER + "snippets: " + "[" * 10_000 + "]" * 10_000 + "\n", "Nested deeper than"),
    ("wide.yaml", SEED_HEADER + "snippets: [" + ",".join(["1"] * 250_000) + "]\n", "Too many YAML nodes"),
    ("python.yaml", SEED_HEADER + "snippets: !!python/object/apply:os.system ['touch /tmp/pwned']\n",
     "could not determine a constructor"),
    ("nul.yaml", SEED_HEADER + "snippets:\n  - key: a\x00b\n", "unacceptable character"),
    ("binary.yaml", b"\xff\xfe\x00\x00snippets: []", "not UTF-8"),
    ("huge.yaml", SEED_HEADER + "snippets: []\n" + "#" * 3_000_000, "limit"),
])
def test_hostile_seed_files_fail_clearly_and_write_nothing(tenants, db, tmp_path, name, content, message):
    from ratiba.models import Tenant

    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(CommandError, match=message):
        call_command("seed_knowledge", str(path), "--skip-embeddings")
    connection.set_schema_to_public()
    assert not Tenant.objects.filter(schema_name="bomb_tenant").exists()
    with connection.cursor() as cursor:
        cursor.execute("select count(*) from pg_namespace where nspname = 'bomb_tenant'")
        assert cursor.fetchone() == (0,)
    assert not list(tmp_path.glob("pwned")) and not __import__("os").path.exists("/tmp/pwned")


def test_a_hostile_seed_file_for_an_existing_tenant_leaves_its_knowledge_untouched(tenant, tmp_path):
    Snippet.objects.create(key="kept")
    path = tmp_path / "bomb.yaml"
    path.write_text("snippets: " + "[" * 5_000 + "]" * 5_000 + "\n")
    with pytest.raises(CommandError, match="Nested deeper than"):
        call_command("seed_knowledge", str(path), "--tenant", tenant.schema_name, "--skip-embeddings")
    connection.set_tenant(tenant)
    assert list(Snippet.objects.values_list("key", flat=True)) == ["kept"]


# ----------------------------------------------------------------------------- unknown API URLs


@override_settings(DEBUG=True)
def test_unknown_api_urls_are_json_404s_even_in_debug(api):
    for method, url in (("get", "/api/v1/nope/"), ("post", "/api/v2/chat/turns/"), ("get", "/api/v1/snippets/a b/"),
                        ("get", "/api/v1/services/not-a-number/")):
        response = api(method, url)
        assert response.status_code == 404, url
        assert response.json()["error"]["code"] == "not_found"
    hint = api("get", "/api/v1/whoami")
    assert hint.status_code == 404 and "/api/v1/whoami/" in hint.json()["error"]["message"]
