"""POST /api/v1/email/drafts/: a customer email in, a reply draft for staff out."""
from __future__ import annotations

import json

import pytest

from channels.email_drafts import email_parts, suggested_subject
from conversations.models import Turn
from tests.support.spa import seed_all

URL = "/api/v1/email/drafts/"


@pytest.fixture
def post(tenant, api_client):
    seed_all()
    client, headers = api_client

    def send(**payload):
        return client.post(URL, data=json.dumps(payload), content_type="application/json", **headers)

    return send


def test_a_customer_email_gets_a_cited_draft_with_greeting_name_and_subject(post):
    response = post(from_email="wanjiku@example.com", from_name="", subject="Parking!!",
                    body="Hello,\n\nIs there parking near the spa? I'm driving in on Saturday.\n\nThanks,\nWanjiku\n\n"
                         "On Mon, 3 Nov 2026 at 10:00, Spa <hello@spa.test> wrote:\n> Welcome to the spa!")
    assert response.status_code == 200
    body = response.json()
    assert body["suggested_subject"] == "Re: Parking"
    assert body["customer_name"] == "Wanjiku"
    assert body["refusal_reason"] is None
    assert body["draft"].startswith("Hi Wanjiku,\n\n")
    assert "basement of Mirage Tower" in body["draft"]
    assert body["draft"].endswith("If there is anything else I can help with, just reply to this email.")
    assert "[1]" not in body["draft"] and "**" not in body["draft"] and "Welcome to the spa" not in body["draft"]
    assert body["draft"].count("!") <= 1
    assert [c["key"] for c in body["citations"]][:1] == ["parking"]
    turn = Turn.objects.get(public_id=body["meta"]["turn_id"])
    assert (turn.channel, turn.session.channel) == ("email", "email")
    assert turn.message == "Is there parking near the spa? I'm driving in on Saturday."


def test_an_unanswerable_email_is_a_typed_refusal_without_a_closing(post):
    body = post(from_email="x@example.com", from_name="Otieno Ouma", subject="Football",
                body="Who won the football world cup in 1998?").json()
    assert body["refusal_reason"] == "no_relevant_context"
    assert body["customer_name"] == "Otieno Ouma"
    assert body["draft"].startswith("Hi Otieno,\n\nI'm sorry, I don't have an answer to that yet.")
    assert body["citations"] == []


def test_a_swahili_email_gets_a_swahili_greeting(post):
    body = post(from_email="amina@example.com", subject="Saa za kufungua",
                body="Habari,\nMnafungua saa ngapi Jumapili?\nAsante,\nAmina").json()
    assert body["customer_name"] == "Amina"
    assert body["draft"].startswith("Habari Amina,\n\n")
    assert "10:00" in body["draft"]


@pytest.mark.parametrize("payload,field", [
    ({"from_email": "not-an-email", "subject": "Hi", "body": "Is there parking?"}, "from_email"),
    ({"from_email": "a@b.co", "subject": "Hi", "body": "   "}, "body"),
    ({"from_email": "a@b.co", "subject": "Hi", "body": "> only a quote\n> nothing new"}, "body"),
    ({"from_email": "a@b.co", "body": "Is there parking?"}, "subject"),
])
def test_bad_input_is_a_400_naming_the_field_and_nothing_is_stored(post, payload, field):
    response = post(**payload)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_request" and field in error["fields"]
    assert Turn.objects.count() == 0


def test_a_chat_scope_key_cannot_draft_emails(tenant, client_for):
    from ratiba.services import api_key_issue

    raw = api_key_issue(tenant=tenant, label="widget", scope="chat").raw
    response = client_for(tenant).post(URL, data=json.dumps({"from_email": "a@b.co", "subject": "x", "body": "y"}),
                                       content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert response.status_code == 403


@pytest.mark.parametrize("body,question,name", [
    ("Hi team,\nDo you sell gift cards?\n\nKind regards, Ann Kamau", "Do you sell gift cards?", "Ann Kamau"),
    ("Do you open on Sunday?\n-- \nJohn Doe | ACME Ltd | +254 700 000 000", "Do you open on Sunday?", ""),
    ("Good morning\nCan I pay by M-Pesa?\n- Njeri", "Can I pay by M-Pesa?", "Njeri"),
    ("Can I pay by card?\n\nSent from my iPhone", "Can I pay by card?", ""),
    ("Dear Sir/Madam,\nHow long is the facial?\n\nBest,\nPeter\n\n-----Original Message-----\nFrom: spa",
     "How long is the facial?", "Peter"),
])
def test_the_question_and_the_signed_name_are_read_from_the_new_text(body, question, name):
    parts = email_parts(body)
    assert (parts.question, parts.signed_name) == (question, name)


def test_the_suggested_subject_is_re_once_and_never_shouts():
    assert suggested_subject("RE: Re: Booking!") == "Re: Booking"
    assert suggested_subject("Fwd: prices") == "Re: prices"
    assert suggested_subject("") == "Re: your message"


def test_a_booking_email_becomes_a_hand_off_staff_can_answer_by_email(post, django_capture_on_commit_callbacks):
    from django.contrib.auth import get_user_model
    from django.core import mail

    from conversations.models import HandoffRequest

    get_user_model().objects.create_user("desk", email="desk@spa.test", is_staff=True)
    with django_capture_on_commit_callbacks(execute=True):
        body = post(from_email="wanjiku.k@example.com", from_name="Wanjiku Kamau", subject="Booking",
                    body="Hello,\n\nI want to book a deep tissue massage on Saturday at 10am.\n\nThanks").json()
    assert body["meta"]["intent"] == "booking"
    handoff = HandoffRequest.objects.get()
    assert (handoff.channel, handoff.what, handoff.contact) == ("email", "Deep Tissue Massage",
                                                                "Wanjiku Kamau, wanjiku.k@example.com")
    assert len(mail.outbox) == 1
    assert "Contact:  Wanjiku Kamau, wanjiku.k@example.com" in mail.outbox[0].body
