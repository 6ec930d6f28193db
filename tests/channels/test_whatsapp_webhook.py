"""The WhatsApp webhook: handshake, signatures, routing, one answer per message id, the documented payloads."""
from __future__ import annotations

import json

import pytest
from django_tenants.utils import schema_context

from channels.models import WhatsAppContact, WhatsAppStatus
from channels_support import (APP_SECRET, CUSTOMER, PHONE_NUMBER_ID, SCHEMA, TOKEN, VERIFY_TOKEN, documented,
                              message_delivery, rows, status_delivery)
from conversations.models import Session, Turn


def test_the_handshake_answers_the_challenge_only_for_a_known_verify_token(wa_number, client_for, settings):
    client = client_for("localhost")
    ok = client.get("/webhooks/whatsapp/", {"hub.mode": "subscribe", "hub.verify_token": VERIFY_TOKEN,
                                            "hub.challenge": "1158201444"})
    assert (ok.status_code, ok.content, ok["Content-Type"]) == (200, b"1158201444", "text/plain")
    wrong = client.get("/webhooks/whatsapp/", {"hub.mode": "subscribe", "hub.verify_token": "nope",
                                               "hub.challenge": "1158201444"})
    assert wrong.status_code == 403 and b"1158201444" not in wrong.content
    settings.WHATSAPP_VERIFY_TOKEN = "platform-token"
    platform = client.get("/webhooks/whatsapp/", {"hub.mode": "subscribe", "hub.verify_token": "platform-token",
                                                  "hub.challenge": "42"})
    assert platform.content == b"42"


def test_a_documented_text_message_is_answered_once_in_swahili_through_the_graph_api(spa, deliver, graph_api):
    body = documented("text_message")
    response = deliver(body)
    assert response.status_code == 200
    assert response.json() == {"accepted": 1, "duplicates": 0, "statuses": 0}
    assert len(graph_api.requests) == 1
    sent = graph_api.requests[0]
    assert sent["url"] == f"https://graph.test/v23.0/{PHONE_NUMBER_ID}/messages"
    assert sent["auth"] == f"Bearer {TOKEN}"
    assert sent["json"]["to"] == CUSTOMER and sent["json"]["type"] == "text"
    assert sent["json"]["context"] == {"message_id": body["entry"][0]["changes"][0]["value"]["messages"][0]["id"]}
    text = sent["json"]["text"]["body"]
    assert "Jumapili" in text and "10:00" in text
    assert "[1]" not in text and "**" not in text
    inbound, reply = rows()
    assert (inbound.direction, inbound.status, inbound.kind) == ("in", "answered", "text")
    assert (reply.direction, reply.source, reply.status, reply.reply_to_id) == ("out", "bot", "sent", inbound.pk)
    assert reply.wamid == "wamid.OUT000001"
    with schema_context(SCHEMA):
        turn = Turn.objects.get(pk=inbound.turn_id)
        assert (turn.channel, turn.language, turn.session.channel) == ("whatsapp", "sw", "whatsapp")
        contact = WhatsAppContact.objects.get(wa_id=CUSTOMER)
        assert (contact.name, contact.session_id, contact.language) == ("Wanjiku", turn.session_id, "sw")


def test_a_redelivery_of_the_same_message_is_not_answered_again(spa, deliver, graph_api):
    body = documented("text_message")
    assert deliver(body).json()["accepted"] == 1
    again = deliver(body)
    assert again.status_code == 200 and again.json() == {"accepted": 0, "duplicates": 1, "statuses": 0}
    assert len(graph_api.requests) == 1
    assert len(rows(direction="in")) == 1 and len(rows(direction="out")) == 1


def test_a_wrong_signature_is_refused_and_nothing_is_stored_or_sent(spa, deliver, graph_api):
    body = documented("text_message")
    assert deliver(body, secret="someone-elses-secret").status_code == 403
    assert deliver(body, signature="").status_code == 403
    assert deliver(body, signature="sha256=" + "0" * 64).status_code == 403
    raw = json.dumps(body).encode()
    from channels.whatsapp.payloads import signature_for

    tampered = raw.replace(b"Mnafungua", b"Mnafunga")
    assert deliver(tampered, signature=signature_for(raw_body=raw, app_secret=APP_SECRET)).status_code == 403
    assert rows() == [] and graph_api.requests == []
    with schema_context(SCHEMA):
        assert WhatsAppContact.objects.count() == 0 and Session.objects.count() == 0


def test_the_platform_app_secret_signs_for_numbers_without_their_own(tenant, deliver, graph_api, settings):
    from channels.registry.services import whatsapp_number_connect

    whatsapp_number_connect(tenant=tenant, phone_number_id=PHONE_NUMBER_ID, access_token=TOKEN)
    settings.WHATSAPP_APP_SECRET = "platform-secret"
    body = message_delivery("reaction", message_id="wamid.X", emoji="👍")
    assert deliver(body, secret=APP_SECRET).status_code == 403
    assert deliver(body, secret="platform-secret").json()["accepted"] == 1


def test_a_number_with_its_own_secret_does_not_accept_the_platform_signature(spa, deliver, graph_api, settings):
    settings.WHATSAPP_APP_SECRET = "platform-secret"
    body = message_delivery("reaction", message_id="wamid.X", emoji="👍")
    response = deliver(body, secret="platform-secret")
    assert response.status_code == 200 and response.json()["accepted"] == 0
    assert rows() == []


def test_a_delivery_for_an_unconnected_number_is_acknowledged_and_ignored(spa, deliver, graph_api, settings):
    settings.WHATSAPP_APP_SECRET = "platform-secret"
    body = documented("text_message")
    body["entry"][0]["changes"][0]["value"]["metadata"]["phone_number_id"] = "999000111"
    response = deliver(body, secret="platform-secret")
    assert response.status_code == 200 and response.json()["accepted"] == 0
    assert rows() == [] and graph_api.requests == []


def test_a_documented_image_gets_a_short_polite_reply_in_the_customers_language(spa, deliver, graph_api):
    assert deliver(documented("image_message")).status_code == 200
    assert graph_api.texts == ["Thanks for this. I can only read text messages, so please type your question and "
                               "I'll answer it."]
    swahili = message_delivery("audio", id="55", mime_type="audio/ogg; codecs=opus", voice=True)
    with schema_context(SCHEMA):
        WhatsAppContact.objects.update(language="sw")
    deliver(swahili)
    assert graph_api.texts[-1].startswith("Asante. Ninaweza kusoma ujumbe wa maandishi tu")
    assert [m.status for m in rows(direction="in")] == ["answered", "answered"]
    assert rows(direction="in")[0].body == "Is this stain removable?"  # the caption is kept


@pytest.mark.parametrize("kind,part", [
    ("video", {"id": "1", "mime_type": "video/mp4"}),
    ("document", {"id": "2", "filename": "menu.pdf", "mime_type": "application/pdf"}),
    ("location", {"latitude": -1.29, "longitude": 36.82, "name": "Westlands"}),
    ("sticker", {"id": "3", "mime_type": "image/webp", "animated": False}),
])
def test_media_and_locations_each_get_the_polite_text_reply(spa, deliver, graph_api, kind, part):
    deliver(message_delivery(kind, **part))
    assert len(graph_api.texts) == 1 and graph_api.texts[0].startswith("Thanks for this.")
    assert rows(direction="out")[0].source == "bot"


@pytest.mark.parametrize("kind,part", [
    ("reaction", {"message_id": "wamid.OUT000001", "emoji": "❤️"}),
    ("unsupported", {}),
    ("some_future_type", {"whatever": {"nested": [1, 2]}}),
])
def test_reactions_and_unknown_types_are_recorded_not_answered(spa, deliver, graph_api, kind, part):
    response = deliver(message_delivery(kind, **part))
    assert response.status_code == 200 and response.json()["accepted"] == 1
    (inbound,) = rows()
    assert (inbound.kind, inbound.status) == (kind[:24], "recorded")
    assert graph_api.requests == []


def test_malformed_parts_of_a_delivery_never_break_the_webhook(spa, deliver, graph_api):
    body = documented("text_message")
    value = body["entry"][0]["changes"][0]["value"]
    value["messages"].insert(0, {"type": "text"})  # no id, no sender
    value["messages"].append("not an object")
    body["entry"].append({"changes": "nope"})
    body["entry"].append({"changes": [{"field": "account_update", "value": {"x": 1}}]})
    response = deliver(body)
    assert response.status_code == 200 and response.json()["accepted"] == 1
    assert len(graph_api.requests) == 1


def test_statuses_are_stored_against_the_reply_and_only_move_forward(spa, deliver, graph_api):
    deliver(documented("text_message"))
    (reply,) = rows(direction="out")
    for status in ("delivered", "sent", "read", "read"):
        deliver(status_delivery(reply.wamid, status))
    (reply,) = rows(direction="out")
    assert reply.status == "read"
    with schema_context(SCHEMA):
        assert list(WhatsAppStatus.objects.filter(message=reply).values_list("status", flat=True)) == [
            "delivered", "sent", "read"]
    deliver(status_delivery(reply.wamid, "failed", errors=[{"code": 131026, "title": "Message undeliverable"}]))
    (reply,) = rows(direction="out")
    assert (reply.status, reply.error_code, reply.error_message) == ("failed", "131026", "Message undeliverable")


def test_the_documented_status_for_an_unknown_message_is_kept_until_the_send_returns_its_id(spa, deliver, graph_api):
    body = documented("status_delivered")
    wamid = body["entry"][0]["changes"][0]["value"]["statuses"][0]["id"]
    assert deliver(body).json() == {"accepted": 0, "duplicates": 0, "statuses": 1}
    graph_api.respond(200, {"messages": [{"id": wamid}]})
    deliver(documented("text_message"))
    (reply,) = rows(direction="out")
    assert (reply.wamid, reply.status) == (wamid, "delivered")
