"""Conversation retention (a configurable period, pruned per tenant by a beat task) and the redaction option
(phones and e-mails masked in everything stored, never in the live answer)."""
from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.utils import timezone
from django_tenants.utils import schema_context

from conversations.models import HandoffRequest, Session, Turn
from conversations.retention import conversations_prune
from conversations.tasks import prune_all
from ratiba.redaction import redact_contacts
from telemetry.models import Event, RetrievalLog

PHONE = "0712 345 678"
EMAIL = "wanjiku.k@example.co.ke"


def _conversation(*, age_days: float, message: str = "Is there parking?") -> tuple[Session, Turn, HandoffRequest]:
    when = timezone.now() - dt.timedelta(days=age_days)
    session = Session.objects.create()
    turn = Turn.objects.create(session=session, message=message, answer="Yes.", intent="other")
    handoff = HandoffRequest.objects.create(session=session, turn=turn, kind="booking", message=message)
    Turn.objects.filter(pk=turn.pk).update(created_at=when)
    HandoffRequest.objects.filter(pk=handoff.pk).update(created_at=when)
    Session.objects.filter(pk=session.pk).update(created_at=when, updated_at=when)
    return session, turn, handoff


def test_conversations_older_than_the_period_are_deleted_and_newer_ones_kept(tenant, settings):
    settings.CONVERSATION_RETENTION_DAYS = 30
    old_session, _, _ = _conversation(age_days=31)
    kept_session, kept_turn, kept_handoff = _conversation(age_days=29)
    # A long-running session: its old turn goes, its recent turn and the session stay.
    ongoing, ancient_turn, _ = _conversation(age_days=40)
    recent = Turn.objects.create(session=ongoing, message="and now?", answer="Now.", intent="other")
    Session.objects.filter(pk=ongoing.pk).update(updated_at=timezone.now())

    result = conversations_prune()

    assert (result.sessions, result.turns, result.handoffs) == (1, 2, 2)
    assert set(Session.objects.values_list("pk", flat=True)) == {kept_session.pk, ongoing.pk}
    assert set(Turn.objects.values_list("pk", flat=True)) == {kept_turn.pk, recent.pk}
    assert list(HandoffRequest.objects.values_list("pk", flat=True)) == [kept_handoff.pk]
    assert not Session.objects.filter(pk=old_session.pk).exists()
    again = conversations_prune()
    assert (again.sessions, again.turns, again.handoffs) == (0, 0, 0)


def test_a_period_of_zero_keeps_everything(tenant, settings):
    settings.CONVERSATION_RETENTION_DAYS = 0
    _conversation(age_days=3650)
    assert conversations_prune().cutoff is None
    assert (Session.objects.count(), Turn.objects.count(), HandoffRequest.objects.count()) == (1, 1, 1)


def test_pruning_works_in_batches(tenant):
    for _ in range(5):
        _conversation(age_days=400)
    result = conversations_prune(days=365, batch_size=2)
    assert (result.sessions, result.turns, result.handoffs) == (5, 5, 5)
    assert Session.objects.count() == 0


def test_the_beat_task_prunes_every_tenant_in_its_own_schema(tenant, other_tenant, settings):
    settings.CONVERSATION_RETENTION_DAYS = 30
    _conversation(age_days=60)
    _, fresh_turn, _ = _conversation(age_days=1)
    with schema_context(other_tenant.schema_name):
        _conversation(age_days=60)
        other_fresh = _conversation(age_days=2)[1].pk
    schemas = prune_all()
    connection.set_tenant(tenant)
    assert {tenant.schema_name, other_tenant.schema_name} <= set(schemas)
    assert list(Turn.objects.values_list("pk", flat=True)) == [fresh_turn.pk]
    with schema_context(other_tenant.schema_name):
        assert list(Turn.objects.values_list("pk", flat=True)) == [other_fresh]


def test_the_prune_is_scheduled_daily(settings):
    entry = settings.CELERY_BEAT_SCHEDULE["conversations-prune"]
    assert entry["task"] == prune_all.name == "conversations.prune_all"
    assert (entry["schedule"].hour, entry["schedule"].minute) == ({2}, {45})


@pytest.mark.parametrize("text, expected", [
    (f"Call me on {PHONE} or +254 712 345 678", "Call me on [phone] or [phone]"),
    (f"mail {EMAIL}, or 0712-345-678.", "mail [email], or [phone]."),
    ("(020) 123 4567 after 6pm", "[phone] after 6pm"),
    # What must survive: dates, times, prices, short numbers (tills), durations.
    ("Open 09:00-20:00 on 2026-12-24; KES 16500.00 or 4,500 shillings; till 5123987; 90 minutes",
     "Open 09:00-20:00 on 2026-12-24; KES 16500.00 or 4,500 shillings; till 5123987; 90 minutes"),
])
def test_redaction_masks_phones_and_emails_only(text, expected):
    assert redact_contacts(text) == expected


def _stored_texts(turn_id: str) -> dict:
    turn = Turn.objects.get(public_id=turn_id)
    log = RetrievalLog.objects.get(turn_id=turn_id)
    events = {e.name: e.payload for e in Event.objects.filter(payload__turn_id=turn_id)}
    return {"message": turn.message, "answer": turn.answer, "preview": log.message_preview,
            "query": turn.session.last_retrieval.get("query"), "events": events}


def test_with_redaction_on_stored_copies_are_masked_and_the_live_answer_is_not(chat, settings):
    settings.REDACT_STORED_MESSAGES = True
    message = f"Is there parking at the spa? Text me on {PHONE} or write to {EMAIL}"
    response = chat(message=message)
    assert response.status_code == 200
    body = response.json()
    assert "basement of Mirage Tower" in body["answer"]
    stored = _stored_texts(body["turn_id"])
    masked = "Is there parking at the spa? Text me on [phone] or write to [email]"
    assert (stored["message"], stored["preview"], stored["query"]) == (masked, masked, masked)
    assert stored["answer"] == body["answer"]  # nothing to mask in this answer
    assert stored["events"]["knowledge_gap_candidate"]["question"] == masked
    for text in (str(stored), str(list(Event.objects.values_list("payload", flat=True)))):
        assert PHONE not in text and EMAIL not in text


def test_a_hand_off_keeps_the_contact_but_masks_the_stored_message_and_answer(chat, settings):
    settings.REDACT_STORED_MESSAGES = True
    response = chat(message=f"I want to book a deep tissue massage tomorrow, my number is {PHONE}")
    body = response.json()
    assert body["intent"] == "booking"
    assert PHONE in body["answer"]  # the customer is told where the team will call
    turn = Turn.objects.get(public_id=body["turn_id"])
    handoff = HandoffRequest.objects.get(turn=turn)
    assert PHONE not in turn.message and "[phone]" in turn.message
    assert PHONE not in turn.answer and "[phone]" in turn.answer
    assert handoff.message == "I want to book a deep tissue massage tomorrow, my number is [phone]"
    assert handoff.contact == PHONE


def test_refused_questions_reach_the_gap_digest_masked(chat, settings):
    from telemetry.digest import gap_questions_group
    from telemetry.models import GapQuestion

    settings.REDACT_STORED_MESSAGES = True
    body = chat(message=f"Who won the football world cup in 1998? Email {EMAIL}").json()
    assert body["refusal_reason"] == "no_relevant_context"
    refusal = Event.objects.get(name="refusal", payload__turn_id=body["turn_id"])
    assert refusal.payload["question"] == "Who won the football world cup in 1998? Email [email]"
    gap_questions_group()
    assert list(GapQuestion.objects.values_list("text", flat=True)) == ["Who won the football world cup in 1998? Email [email]"]


def test_with_redaction_off_stored_copies_are_verbatim(chat, settings):
    settings.REDACT_STORED_MESSAGES = False
    message = f"Is there parking at the spa? Text me on {PHONE}"
    body = chat(message=message).json()
    stored = _stored_texts(body["turn_id"])
    assert (stored["message"], stored["preview"], stored["query"]) == (message, message, message)
