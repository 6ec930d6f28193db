"""The owner's /chat/ page, its session-authenticated stream endpoint, citation links and the widget page."""
from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from conversations.models import Turn


@pytest.fixture
def owner(spa):
    return get_user_model().objects.create_user("owner", password="pw-12345678", is_staff=True, is_superuser=True)


@pytest.fixture
def owner_client(owner, client_for, spa):
    client = client_for(spa)
    client.force_login(owner)
    return client


def _events(response) -> list[tuple[str, dict]]:
    text = b"".join(response.streaming_content).decode()
    events = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((lines["event"], json.loads(lines["data"])))
    return events


def test_the_chat_page_needs_a_signed_in_owner(spa, client_for):
    response = client_for(spa).get("/chat/")
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
    customer = get_user_model().objects.create_user("customer", password="pw-12345678", is_staff=False)
    client = client_for(spa)
    client.force_login(customer)
    assert client.get("/chat/").status_code == 302


def test_the_chat_page_carries_no_api_key(owner_client):
    page = owner_client.get("/chat/")
    html = page.content.decode()
    assert page.status_code == 200
    assert 'data-stream-url="/chat/stream/"' in html
    assert "rk_" not in html and "Bearer" not in html
    assert "/static/chat/chat.js" in html


def test_the_page_stream_answers_with_the_owners_session(owner_client):
    response = owner_client.post("/chat/stream/", data={"message": "Is there parking at the spa?"},
                                 content_type="application/json")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/event-stream")
    events = _events(response)
    assert events[-1][0] == "final" and {name for name, _ in events[:-1]} == {"delta"}
    final = events[-1][1]
    assert final["citations"][0]["key"] == "parking"
    turn = Turn.objects.get(public_id=final["turn_id"])
    assert turn.session.started_by == "owner" and turn.session.api_key_prefix == ""


def test_the_page_stream_rejects_a_post_without_the_csrf_token(owner, spa):
    client = Client(HTTP_HOST="tenant.test.localhost", enforce_csrf_checks=True)
    client.force_login(owner)
    response = client.post("/chat/stream/", data={"message": "Hi"}, content_type="application/json")
    assert response.status_code == 403
    assert not Turn.objects.exists()


def test_the_page_stream_validates_like_the_api(owner_client, settings):
    blank = owner_client.post("/chat/stream/", data={"message": ""}, content_type="application/json")
    assert blank.status_code == 400
    assert blank.json()["error"]["fields"] == {"message": ["This field may not be blank."]}
    settings.API_MAX_BODY_BYTES = 100
    big = owner_client.post("/chat/stream/", data={"message": "x" * 500}, content_type="application/json")
    assert big.status_code == 413


def test_a_citation_opens_the_snippet_or_the_facts_in_the_admin(owner_client):
    from knowledge.models import Snippet

    parking = Snippet.objects.get(key="parking")
    response = owner_client.get("/chat/citations/parking/1/")
    assert response.status_code == 302
    assert response["Location"] == f"/admin/knowledge/snippet/{parking.pk}/change/"
    assert owner_client.get("/chat/citations/facts:services/0/")["Location"] == "/admin/knowledge/service/"
    assert owner_client.get("/chat/citations/facts:hours/0/")["Location"] == "/admin/knowledge/openinghours/"
    assert owner_client.get("/chat/citations/no_such_key/1/").status_code == 404


def test_the_widget_page_shows_a_snippet_without_a_real_key_and_offers_only_chat_keys(owner_client, spa):
    from ratiba.services import api_key_issue, api_key_revoke

    full = api_key_issue(tenant=spa, label="server", scope="full").api_key
    chat = api_key_issue(tenant=spa, label="website-widget", scope="chat").api_key
    revoked = api_key_issue(tenant=spa, label="old-widget", scope="chat").api_key
    api_key_revoke(api_key=revoked)
    html = owner_client.get("/chat/widget/").content.decode()
    assert "/static/chat/widget.js" in html
    assert 'data-ratiba-key="YOUR_CHAT_KEY"' in html
    assert "issue_api_key test_tenant --scope chat --label website-widget" in html
    assert f"rk_{chat.prefix}_" in html and "never used" in html
    assert full.prefix not in html and revoked.prefix not in html
    assert 'href="/admin/ratiba/apikey/add/?scope=chat&amp;label=website-widget"' in html


def test_the_owner_sees_handoffs_and_turns_in_the_admin(owner_client):
    response = owner_client.post("/chat/stream/", data={"message": "I want to book a hot stone massage on Saturday"},
                                 content_type="application/json")
    b"".join(response.streaming_content)
    listing = owner_client.get("/admin/conversations/handoffrequest/")
    html = listing.content.decode()
    assert listing.status_code == 200
    assert "Hot Stone Massage" in html and "Saturday" in html
    turns = owner_client.get("/admin/conversations/turn/")
    assert turns.status_code == 200 and "I want to book a hot stone massage" in turns.content.decode()
    sessions = owner_client.get("/admin/conversations/session/")
    assert sessions.status_code == 200
