"""Hand-offs the owner hears about: staff mail at once, a WhatsApp alert to the owner, and the hand-off page."""
from __future__ import annotations

import json
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.utils import timezone
from django_tenants.utils import schema_context

from channels import handoffs
from channels.models import HandoffAlert, WhatsAppContact, WhatsAppMessage
from channels_support import CUSTOMER, PHONE_NUMBER_ID, message_delivery
from conversations.models import HandoffRequest
from ratiba.models import Tenant
from tests.support.spa import seed_all

SCHEMA = "test_tenant"
BOOKING = "I want to book a deep tissue massage on Saturday at 10am, my number is 0712 345 678"


@pytest.fixture
def spa(tenant):
    seed_all()
    User = get_user_model()
    User.objects.create_user("owner", email="owner@spa.test", is_staff=True, password="pw-owner-12345")
    User.objects.create_user("frontdesk", email="desk@spa.test", is_staff=True)
    User.objects.create_user("customer-ish", email="not-staff@spa.test", is_staff=False)
    return tenant


def test_a_new_hand_off_mails_the_staff_once_with_what_they_need(spa, api_client,
                                                                  django_capture_on_commit_callbacks):
    client, headers = api_client
    Tenant.objects.filter(schema_name=SCHEMA).update(timezone="Africa/Nairobi")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/api/v1/chat/turns/", data=json.dumps({"message": BOOKING}),
                               content_type="application/json", **headers)
    assert response.json()["intent"] == "booking"
    handoff = HandoffRequest.objects.get()
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert sorted(message.to) == ["desk@spa.test", "owner@spa.test"]
    assert message.subject == "[Test Spa] New booking request: Deep Tissue Massage"
    assert "Contact:  0712 345 678" in message.body
    assert "I want to book a deep tissue massage" in message.body
    assert f"/handoffs/#handoff-{handoff.pk}" in message.body
    received = handoff.created_at.astimezone(ZoneInfo("Africa/Nairobi"))  # the business's zone, not UTC
    assert f"Received: {received:%a} {received.day} {received:%b %Y, %H:%M} EAT" in message.body
    assert handoffs.handoff_announce(handoff_id=handoff.pk) == "already announced"
    assert len(mail.outbox) == 1
    alert = HandoffAlert.objects.get(handoff=handoff)
    assert alert.mailed_to == ["desk@spa.test", "owner@spa.test"] and alert.whatsapp_message is None


def test_a_contact_sent_after_the_hand_off_was_mailed_is_mailed_to_staff_once(spa, api_client,
                                                                             django_capture_on_commit_callbacks):
    client, headers = api_client

    def say(message, session_id=None):
        body = {"message": message} | ({"session_id": session_id} if session_id else {})
        with django_capture_on_commit_callbacks(execute=True):
            return client.post("/api/v1/chat/turns/", data=json.dumps(body), content_type="application/json",
                               **headers).json()

    first = say("I want to book a deep tissue massage on Saturday at 10am")
    assert first["intent"] == "booking" and len(mail.outbox) == 1
    assert "Contact:  not given yet" in mail.outbox[0].body
    say("0712 345 678", session_id=first["session_id"])
    assert len(mail.outbox) == 2
    update = mail.outbox[1]
    assert update.subject == "[Test Spa] Contact for booking request: Deep Tissue Massage"
    assert "Contact:  0712 345 678" in update.body and "sent how to reach them" in update.body
    [(html, _mimetype)] = update.alternatives
    assert "Contact for booking request" in html and "0712 345 678" in html
    handoff = HandoffRequest.objects.get()
    assert handoffs.handoff_contact_announce(handoff_id=handoff.pk) == "already told"
    assert HandoffAlert.objects.get().contact_announced == "0712 345 678" and len(mail.outbox) == 2


def test_a_contact_that_arrives_before_the_first_mail_goes_out_rides_in_that_mail(spa):
    handoff = HandoffRequest.objects.create(kind="booking", message="I want to book", what="Deep Tissue Massage",
                                            channel="chat")
    assert handoffs.handoff_contact_announce(handoff_id=handoff.pk) == "not announced yet"
    handoff.contact = "0712 345 678"
    handoff.save()
    assert handoffs.handoff_announce(handoff_id=handoff.pk) == "announced"
    assert handoffs.handoff_contact_announce(handoff_id=handoff.pk) == "already told"
    assert len(mail.outbox) == 1 and "Contact:  0712 345 678" in mail.outbox[0].body


def test_the_owner_gets_a_whatsapp_alert_when_their_window_is_open(spa, wa_number, graph_api,
                                                                   django_capture_on_commit_callbacks):
    wa_number.owner_number = "254711999888"
    wa_number.save()
    WhatsAppContact.objects.create(wa_id="254711999888", phone_number_id=PHONE_NUMBER_ID,
                                   last_inbound_at=timezone.now())
    handoff = HandoffRequest.objects.create(kind="booking", message=BOOKING, what="Deep Tissue Massage",
                                            contact="0712 345 678", channel="chat")
    with django_capture_on_commit_callbacks(execute=True):
        handoffs.handoff_announce(handoff_id=handoff.pk)
    assert graph_api.requests[0]["json"]["to"] == "254711999888"
    assert graph_api.texts[0].startswith("New Booking · Deep Tissue Massage request. Contact: 0712 345 678.")
    assert HandoffAlert.objects.get().whatsapp_message.status == "sent"


def test_an_owner_alert_outside_their_window_is_recorded_not_sent(spa, wa_number, graph_api,
                                                                  django_capture_on_commit_callbacks):
    wa_number.owner_number = "254711999888"
    wa_number.save()
    handoff = HandoffRequest.objects.create(kind="cancel", message="Cancel my booking", channel="chat")
    with django_capture_on_commit_callbacks(execute=True):
        handoffs.handoff_announce(handoff_id=handoff.pk)
    assert graph_api.requests == []
    alert = HandoffAlert.objects.get()
    assert (alert.whatsapp_message.status, alert.whatsapp_message.error_code) == ("failed", "outside_window")
    assert len(mail.outbox) == 1  # the mail still went


def test_the_hand_off_mail_html_shows_the_customers_words_as_text_never_as_markup(spa):
    handoff = HandoffRequest.objects.create(kind="booking", channel="chat", contact="0712 345 678",
                                            message='Book me <img src=x onerror="alert(1)"> & <a href="//evil">x</a>')
    handoffs.handoff_announce(handoff_id=handoff.pk)
    [(html, mimetype)] = mail.outbox[0].alternatives
    assert mimetype == "text/html"
    assert "<img" not in html and 'href="//evil"' not in html
    assert ("Book me &lt;img src=x onerror=&quot;alert(1)&quot;&gt; &amp; &lt;a href=&quot;//evil&quot;&gt;x&lt;/a&gt;"
            in html)
    assert 'Book me <img src=x onerror="alert(1)"> & <a href="//evil">x</a>' in mail.outbox[0].body  # plain text


def test_the_mail_links_to_the_host_browsers_accept_when_the_domain_has_an_underscore(spa):
    from ratiba.models import Domain

    Domain.objects.filter(tenant=spa).update(is_primary=False)
    Domain.objects.create(tenant=spa, domain="test_spa.localhost", is_primary=True)
    Domain.objects.create(tenant=spa, domain="test-spa.localhost", is_primary=False)  # what tenant_create adds
    handoff = HandoffRequest.objects.create(kind="booking", channel="chat", message=BOOKING)
    handoffs.handoff_announce(handoff_id=handoff.pk)
    link = f"http://test-spa.localhost:8000/handoffs/#handoff-{handoff.pk}"
    assert link in mail.outbox[0].body and f'href="{link}"' in mail.outbox[0].alternatives[0][0]


@pytest.fixture
def owner(spa, client_for):
    client = client_for(spa)
    client.login(username="owner", password="pw-owner-12345")
    return client


def test_the_hand_off_page_needs_a_signed_in_owner(spa, client_for):
    response = client_for(spa).get("/handoffs/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_a_whatsapp_hand_off_is_listed_taken_over_replied_to_and_closed(spa, wa_number, owner, deliver, graph_api,
                                                                         django_capture_on_commit_callbacks):
    deliver(message_delivery(text=BOOKING))
    with schema_context(SCHEMA):
        handoff = HandoffRequest.objects.get()
        assert handoff.channel == "whatsapp"
    page = owner.get("/handoffs/").content.decode()
    assert f'id="handoff-{handoff.pk}"' in page
    assert f"+{CUSTOMER} (WhatsApp, Wanjiku)" in page and "0712 345 678" in page
    assert "I want to book a deep tissue massage" in page and "Take over (pause the assistant)" in page

    owner.post(f"/handoffs/{handoff.pk}/", {"action": "takeover"})
    with schema_context(SCHEMA):
        assert WhatsAppContact.objects.get(wa_id=CUSTOMER).paused_by == "owner"
    deliver(message_delivery(text="Hello? Is Saturday OK?"))
    assert len(graph_api.requests) == 1  # the bot's first answer only: it is paused now

    with django_capture_on_commit_callbacks(execute=True):
        response = owner.post(f"/handoffs/{handoff.pk}/", {"action": "reply",
                                                           "reply": "Saturday 10am is booked for you."}, follow=True)
    assert "Reply queued for WhatsApp." in response.content.decode()
    with schema_context(SCHEMA):
        sent = WhatsAppMessage.objects.filter(source="owner").get()
        handoff.refresh_from_db()
    assert handoff.status == "contacted"
    assert (sent.status, sent.sent_by) == ("sent", "owner")
    assert graph_api.texts[-1] == "Saturday 10am is booked for you."
    page = owner.get("/handoffs/").content.decode()
    assert "held for you" in page and "Hand back to the assistant" in page

    owner.post(f"/handoffs/{handoff.pk}/", {"action": "done"})
    assert f'id="handoff-{handoff.pk}"' not in owner.get("/handoffs/").content.decode()
    assert f'id="handoff-{handoff.pk}"' in owner.get("/handoffs/?show=all").content.decode()


def test_a_reply_the_window_no_longer_allows_is_refused_with_the_reason(spa, wa_number, owner, deliver, graph_api):
    deliver(message_delivery(text=BOOKING))
    with schema_context(SCHEMA):
        handoff = HandoffRequest.objects.get()
        WhatsAppContact.objects.update(last_inbound_at=timezone.now() - timezone.timedelta(hours=25))
    page = owner.get("/handoffs/").content.decode()
    assert "More than 24 hours have passed" in page and "Send on WhatsApp" not in page
    response = owner.post(f"/handoffs/{handoff.pk}/", {"action": "reply", "reply": "Hi"}, follow=True)
    assert "More than 24 hours have passed" in response.content.decode()
    with schema_context(SCHEMA):
        assert not WhatsAppMessage.objects.filter(source="owner").exists()


def test_the_chat_page_preview_is_the_plain_text_whatsapp_would_get(spa, owner):
    from conversations.models import Session, Turn

    session = Session.objects.create(channel="whatsapp")
    turn = Turn.objects.create(session=session, channel="whatsapp", message="Parking?", intent="other",
                               answer="Here is what I found:\n- **Free parking** in the basement [1]\n- Street "
                                      "parking is *not* recommended [2]")
    body = owner.get(f"/chat/whatsapp-preview/{turn.public_id}/").json()
    assert body["text"] == ("Here is what I found:\n• Free parking in the basement\n• Street parking is not "
                            "recommended")
    assert owner.get("/chat/whatsapp-preview/t_nope/").status_code == 404
