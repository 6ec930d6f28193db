"""Replies: one session per customer, retries on 500/429, nothing lost while the Graph API is down, the 24-hour
window, STOP/START, takeover, two simultaneous deliveries, and secrets that never show."""
from __future__ import annotations

import datetime as dt
import json
import logging
import threading
import time

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone
from django_tenants.utils import schema_context

from channels.models import WhatsAppContact, WhatsAppMessage
from channels.registry.models import WhatsAppNumber
from channels.secrets import secret_decrypt
from channels.whatsapp import services
from channels_support import (APP_SECRET, CUSTOMER, PHONE_NUMBER_ID, SCHEMA, TOKEN, VERIFY_TOKEN, documented,
                              message_delivery, rows)
from conversations.models import Session, Turn
from tests.support.spa import seed_all


def test_messages_from_one_number_share_one_whatsapp_session(spa, deliver, graph_api):
    deliver(message_delivery(text="Is there parking?"))
    deliver(message_delivery(text="How much is a deep tissue massage?"))
    deliver(message_delivery(text="Is there parking?", wa_id="254700000001"))
    with schema_context(SCHEMA):
        mine = WhatsAppContact.objects.get(wa_id=CUSTOMER)
        assert mine.session.turn_count == 2
        assert list(mine.session.turns.values_list("channel", flat=True)) == ["whatsapp", "whatsapp"]
        assert Session.objects.filter(channel="whatsapp").count() == 2
    assert "basement of Mirage Tower" in graph_api.texts[0]
    assert "5,500" in graph_api.texts[1] or "5500" in graph_api.texts[1]


def test_a_graph_api_500_then_200_is_retried_within_the_send(spa, deliver, graph_api):
    graph_api.respond(500, {"error": {"message": "An unknown error occurred", "code": 1}})
    deliver(message_delivery(text="Is there parking?"))
    assert len(graph_api.requests) == 2
    assert graph_api.requests[0]["json"] == graph_api.requests[1]["json"]
    (reply,) = rows(direction="out")
    assert (reply.status, reply.attempts, reply.error_code) == ("sent", 1, "")


def test_a_429_is_retried_and_a_400_is_not(spa, deliver, graph_api):
    graph_api.respond(429, {"error": {"message": "Rate limit hit", "code": 130429}})
    deliver(message_delivery(text="Is there parking?"))
    assert rows(direction="out")[0].status == "sent" and len(graph_api.requests) == 2
    graph_api.respond(400, {"error": {"message": "Invalid parameter", "code": 100}})
    deliver(message_delivery(text="Do you take M-Pesa?"))
    assert len(graph_api.requests) == 3
    failed = rows(direction="out")[1]
    assert (failed.status, failed.error_code, failed.error_message) == ("failed", "100", "Invalid parameter")


def test_nothing_is_lost_while_the_graph_api_is_down(spa, deliver, graph_api, settings):
    settings.WHATSAPP_SEND_ATTEMPTS = 3
    graph_api.respond(503, {}, times=3)
    deliver(message_delivery(text="Is there parking?"))
    (reply,) = rows(direction="out")
    assert (reply.status, reply.error_code) == ("retrying", "503")
    assert reply.next_attempt_at > timezone.now()
    assert "basement of Mirage Tower" in reply.body  # the answer is kept, ready to go
    with schema_context(SCHEMA):
        assert services.sweep() == {"inbound": 0, "outbound": 0}  # not due yet
        later = timezone.now() + dt.timedelta(minutes=2)
        assert services.outbound_send(message_id=reply.pk, now=later) == "sent"
    assert len(graph_api.requests) == 4 and graph_api.texts[-1] == reply.body
    assert rows(direction="out")[0].status == "sent"


def test_a_reply_outside_the_24_hour_window_is_not_sent_and_says_why(spa, deliver, graph_api):
    deliver(documented("text_message", fresh=False))  # the file's own timestamp: a year ago
    assert graph_api.requests == []
    (inbound, reply) = rows()
    assert inbound.status == "answered"
    assert (reply.status, reply.error_code) == ("failed", "outside_window")
    assert "24 hours" in reply.error_message


def test_meta_saying_outside_the_window_is_a_terminal_failure(spa, deliver, graph_api):
    graph_api.respond(400, {"error": {"message": "Re-engagement message", "code": 131047}})
    deliver(message_delivery(text="Is there parking?"))
    (reply,) = rows(direction="out")
    assert (reply.status, reply.error_code) == ("failed", "outside_window") and len(graph_api.requests) == 1


def test_stop_opts_a_number_out_and_start_opts_it_back_in(spa, deliver, graph_api):
    deliver(message_delivery(text="STOP"))
    assert graph_api.texts == ["You won't get any more messages from us here. Send START if you change your mind."]
    deliver(message_delivery(text="Is there parking?"))
    assert len(graph_api.requests) == 1
    assert [m.status for m in rows(direction="in")] == ["recorded", "opted_out"]
    with schema_context(SCHEMA):
        contact = WhatsAppContact.objects.get(wa_id=CUSTOMER)
        assert contact.opted_out_at is not None and Turn.objects.count() == 0
        with pytest.raises(services.ChannelError) as refused:
            services.owner_reply(contact=contact, body="Hello?", by="owner")
        assert refused.value.code == "opted_out"
    deliver(message_delivery(text="start"))
    deliver(message_delivery(text="Is there parking?"))
    assert graph_api.texts[1] == "Welcome back. Send your question any time."
    assert "Mirage Tower" in graph_api.texts[2]


def test_while_a_person_has_taken_over_the_bot_holds_messages_and_the_owner_replies(spa, deliver, graph_api):
    deliver(message_delivery(text="Is there parking?"))
    with schema_context(SCHEMA):
        contact = WhatsAppContact.objects.get(wa_id=CUSTOMER)
        services.contact_takeover(contact=contact, by="owner")
    deliver(message_delivery(text="Can I bring my dog?"))
    assert len(graph_api.requests) == 1
    assert rows(direction="in")[-1].status == "held"
    with schema_context(SCHEMA):
        contact.refresh_from_db()
        reply = services.owner_reply(contact=contact, body="Yes, well-behaved dogs are welcome in the garden.",
                                     by="owner")
        assert services.outbound_send(message_id=reply.pk) == "sent"
    assert graph_api.requests[-1]["json"]["text"]["body"] == "Yes, well-behaved dogs are welcome in the garden."
    assert "context" not in graph_api.requests[-1]["json"]
    sent = rows(direction="out")[-1]
    assert (sent.source, sent.sent_by, sent.status) == ("owner", "owner", "sent")
    with schema_context(SCHEMA):
        services.contact_release(contact=contact)
    deliver(message_delivery(text="Is there parking?"))
    assert len(graph_api.requests) == 3


def test_a_message_that_always_fails_to_be_handled_stops_being_retried(spa, graph_api, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(services.turns, "turn_run", broken)
    with schema_context(SCHEMA):
        contact = WhatsAppContact.objects.create(wa_id=CUSTOMER, phone_number_id=PHONE_NUMBER_ID,
                                                 last_inbound_at=timezone.now())
        row = WhatsAppMessage.objects.create(direction="in", wamid="wamid.BROKEN", contact=contact, kind="text",
                                             body="Is there parking?", source="customer", status="received")
        for _ in range(services.MAX_HANDLE_ATTEMPTS):
            with pytest.raises(RuntimeError):
                services.inbound_handle(message_id=row.pk)
        row.refresh_from_db()
        assert (row.status, row.attempts, row.error_code) == ("failed", 3, "handling_failed")
        assert services.sweep(now=timezone.now() + dt.timedelta(minutes=5))["inbound"] == 0


def test_the_sweep_queues_a_message_the_broker_never_took(spa, graph_api, django_capture_on_commit_callbacks):
    with schema_context(SCHEMA):
        contact = WhatsAppContact.objects.create(wa_id=CUSTOMER, phone_number_id=PHONE_NUMBER_ID,
                                                 last_inbound_at=timezone.now())
        WhatsAppMessage.objects.create(direction="in", wamid="wamid.STRANDED", contact=contact, kind="text",
                                       body="Is there parking?", source="customer", status="received")
        assert services.sweep()["inbound"] == 0  # too fresh: a task may still be on its way
        with django_capture_on_commit_callbacks(execute=True):
            assert services.sweep(now=timezone.now() + dt.timedelta(minutes=1))["inbound"] == 1
    assert "Mirage Tower" in graph_api.texts[0]


def test_two_simultaneous_deliveries_of_one_message_are_answered_once(committed, graph_api, settings):
    from channels.registry.services import whatsapp_number_connect

    seed_all()
    connection.set_schema_to_public()
    number = whatsapp_number_connect(tenant=committed, phone_number_id=PHONE_NUMBER_ID, access_token=TOKEN,
                                     app_secret=APP_SECRET).number
    raw = json.dumps(message_delivery(text="Is there parking?", wamid="wamid.TWICE")).encode()
    from channels.whatsapp.payloads import signature_for

    signature = signature_for(raw_body=raw, app_secret=APP_SECRET)
    barrier = threading.Barrier(2)
    results, errors = [], []

    def post():
        try:
            barrier.wait(timeout=10)
            results.append(services.delivery_accept(raw_body=raw, signature=signature))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    try:
        threads = [threading.Thread(target=post) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert errors == []
        assert sorted((r.accepted, r.duplicates) for r in results) == [(0, 1), (1, 0)]
        assert len(graph_api.requests) == 1
        with schema_context(committed.schema_name):
            assert WhatsAppMessage.objects.filter(direction="in").count() == 1
            assert WhatsAppMessage.objects.filter(direction="out", source="bot").count() == 1
    finally:
        number.delete()
        connection.set_tenant(committed)


def test_secrets_are_stored_encrypted_and_never_printed_or_logged(tenant, capsys, caplog, graph_api):
    caplog.set_level(logging.DEBUG)
    call_command("whatsapp_connect", SCHEMA, "--phone-number-id", PHONE_NUMBER_ID, "--access-token", TOKEN,
                 "--app-secret", APP_SECRET, "--verify-token", VERIFY_TOKEN, "--owner-number", "+254 711 999 888")
    number = WhatsAppNumber.objects.get(phone_number_id=PHONE_NUMBER_ID)
    stored = " ".join([number.access_token_encrypted, number.app_secret_encrypted, number.verify_token_hash])
    for secret in (TOKEN, APP_SECRET, VERIFY_TOKEN):
        assert secret not in stored
    assert secret_decrypt(number.access_token_encrypted) == TOKEN
    assert secret_decrypt(number.app_secret_encrypted) == APP_SECRET
    assert number.owner_number == "254711999888"
    # Re-running updates the token and keeps what it was not given.
    call_command("whatsapp_connect", SCHEMA, "--phone-number-id", PHONE_NUMBER_ID, "--access-token", "EAAG-new")
    number.refresh_from_db()
    assert secret_decrypt(number.access_token_encrypted) == "EAAG-new"
    assert secret_decrypt(number.app_secret_encrypted) == APP_SECRET
    printed = capsys.readouterr()
    assert printed.out.splitlines()[-1].startswith("Updated WhatsApp number 106540352242922 for test_tenant")
    with schema_context(SCHEMA):
        contact = WhatsAppContact.objects.create(wa_id=CUSTOMER, phone_number_id=PHONE_NUMBER_ID,
                                                 last_inbound_at=timezone.now())
        graph_api.respond(500, {}, times=5)
        reply = WhatsAppMessage.objects.create(direction="out", contact=contact, body="hi", source="bot",
                                               status="queued")
        services.outbound_send(message_id=reply.pk)
    everything = printed.out + printed.err + caplog.text
    for secret in (TOKEN, "EAAG-new", APP_SECRET, VERIFY_TOKEN):
        assert secret not in everything


def test_whatsapp_connect_rejects_bad_input_clearly(tenant, other_tenant):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="No tenant with schema 'nope'"):
        call_command("whatsapp_connect", "nope", "--phone-number-id", "1", "--access-token", "t")
    with pytest.raises(CommandError, match="digits only"):
        call_command("whatsapp_connect", SCHEMA, "--phone-number-id", "abc", "--access-token", "t")
    call_command("whatsapp_connect", SCHEMA, "--phone-number-id", PHONE_NUMBER_ID, "--access-token", "t")
    with pytest.raises(CommandError, match="already connected to 'test_tenant'"):
        call_command("whatsapp_connect", other_tenant.schema_name, "--phone-number-id", PHONE_NUMBER_ID,
                     "--access-token", "t")
    assert WhatsAppNumber.objects.get(phone_number_id=PHONE_NUMBER_ID).tenant == tenant
