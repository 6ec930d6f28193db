"""WhatsApp rows follow the conversations' privacy rules: retention (CONVERSATION_RETENTION_DAYS, pruned daily
per business), the data export, and REDACT_STORED_MESSAGES."""
from __future__ import annotations

import datetime as dt

from django.db import connection
from django.utils import timezone
from django_tenants.utils import schema_context

from channels.models import WhatsAppContact, WhatsAppMessage, WhatsAppStatus
from channels.retention import whatsapp_prune
from channels.tasks import prune_all
from channels.whatsapp import services
from channels_support import PHONE_NUMBER_ID, SCHEMA, message_delivery, rows
from ratiba.services import tenant_export


def _ago(days: float) -> dt.datetime:
    return timezone.now() - dt.timedelta(days=days)


def _customer(wa_id: str, *, age_days: float, name: str = "Wanjiku", **fields) -> WhatsAppContact:
    contact = WhatsAppContact.objects.create(wa_id=wa_id, phone_number_id=PHONE_NUMBER_ID, name=name, **fields)
    WhatsAppContact.objects.filter(pk=contact.pk).update(last_inbound_at=_ago(age_days), created_at=_ago(age_days),
                                                         updated_at=_ago(age_days))
    return contact


def _exchange(contact: WhatsAppContact, *, age_days: float, text: str = "Is there parking?") -> tuple:
    """A customer message, the bot's reply and Meta's status for it, all `age_days` old."""
    inbound = WhatsAppMessage.objects.create(direction="in", wamid=f"wamid.IN-{contact.wa_id}-{text}",
                                             contact=contact, body=text, source="customer", status="answered")
    reply = WhatsAppMessage.objects.create(direction="out", wamid=f"wamid.OUT-{contact.wa_id}-{text}",
                                           contact=contact, body="Yes, in the basement.", source="bot",
                                           status="read", reply_to=inbound)
    status = WhatsAppStatus.objects.create(wamid=reply.wamid, message=reply, status="read")
    for model, pk in ((WhatsAppMessage, inbound.pk), (WhatsAppMessage, reply.pk), (WhatsAppStatus, status.pk)):
        model.objects.filter(pk=pk).update(created_at=_ago(age_days))
    return inbound, reply, status


def test_whatsapp_messages_statuses_and_idle_numbers_older_than_the_period_are_deleted(tenant, settings):
    settings.CONVERSATION_RETENTION_DAYS = 30
    gone = _customer("254700000001", age_days=40)
    _exchange(gone, age_days=40)
    WhatsAppStatus.objects.filter(pk=WhatsAppStatus.objects.create(wamid="wamid.NEVER-SENT", status="sent").pk) \
        .update(created_at=_ago(31))  # a status for no message of ours
    kept = _customer("254700000002", age_days=2)
    kept_in, kept_reply, kept_status = _exchange(kept, age_days=2)
    # A long-running customer: last year's exchange goes, this week's and the number stay.
    regular = _customer("254700000003", age_days=3)
    _exchange(regular, age_days=200, text="old question")
    recent_in, recent_reply, recent_status = _exchange(regular, age_days=3, text="new question")
    # A customer who sent STOP long ago: the number is kept so the opt-out holds; their name is not.
    stopped = _customer("254700000004", age_days=90, name="Baraka", opted_out_at=_ago(90))
    _exchange(stopped, age_days=90)

    result = whatsapp_prune()

    assert (result.messages, result.statuses, result.contacts, result.names_cleared) == (6, 4, 1, 1)
    assert result.cutoff is not None and abs((result.cutoff - _ago(30)).total_seconds()) < 60
    assert set(WhatsAppContact.objects.values_list("wa_id", "name")) == {
        ("254700000002", "Wanjiku"), ("254700000003", "Wanjiku"), ("254700000004", "")}
    assert set(WhatsAppMessage.objects.values_list("pk", flat=True)) == {kept_in.pk, kept_reply.pk, recent_in.pk,
                                                                         recent_reply.pk}
    assert set(WhatsAppStatus.objects.values_list("pk", flat=True)) == {kept_status.pk, recent_status.pk}
    assert WhatsAppContact.objects.get(wa_id="254700000004").opted_out_at is not None
    again = whatsapp_prune()
    assert (again.messages, again.statuses, again.contacts, again.names_cleared) == (0, 0, 0, 0)


def test_a_period_of_zero_keeps_every_whatsapp_row(tenant, settings):
    settings.CONVERSATION_RETENTION_DAYS = 0
    _exchange(_customer("254700000001", age_days=3650), age_days=3650)
    assert whatsapp_prune().cutoff is None
    assert (WhatsAppContact.objects.count(), WhatsAppMessage.objects.count(), WhatsAppStatus.objects.count()) == (
        1, 2, 1)


def test_pruning_whatsapp_rows_works_in_batches(tenant):
    for n in range(5):
        _exchange(_customer(f"25470000010{n}", age_days=400), age_days=400)
    result = whatsapp_prune(days=365, batch_size=2)
    assert (result.messages, result.statuses, result.contacts) == (10, 5, 5)
    assert (WhatsAppContact.objects.count(), WhatsAppMessage.objects.count()) == (0, 0)


def test_the_beat_task_prunes_every_business_even_one_whose_number_was_disconnected(tenant, other_tenant,
                                                                                    settings):
    settings.CONVERSATION_RETENTION_DAYS = 30
    _exchange(_customer("254700000001", age_days=60), age_days=60)
    fresh = _exchange(_customer("254700000002", age_days=1), age_days=1)[0]
    with schema_context(other_tenant.schema_name):  # no number connected: its old rows still go
        _exchange(_customer("254700000001", age_days=60), age_days=60)
    schemas = prune_all()
    connection.set_tenant(tenant)
    assert {tenant.schema_name, other_tenant.schema_name} <= set(schemas)
    assert list(WhatsAppMessage.objects.filter(direction="in").values_list("pk", flat=True)) == [fresh.pk]
    with schema_context(other_tenant.schema_name):
        assert (WhatsAppContact.objects.count(), WhatsAppMessage.objects.count()) == (0, 0)


def test_the_whatsapp_prune_is_scheduled_daily_beside_the_conversations_prune(settings):
    entry = settings.CELERY_BEAT_SCHEDULE["channels-prune"]
    assert entry["task"] == prune_all.name == "channels.prune_all"
    assert (entry["schedule"].hour, entry["schedule"].minute) == ({2}, {50})


def test_a_business_export_holds_its_whatsapp_customers_messages_and_statuses(tenant):
    inbound, reply, status = _exchange(_customer("254700000001", age_days=1), age_days=1)
    tables = tenant_export(tenant=tenant)["tables"]
    assert [(c["wa_id"], c["name"]) for c in tables["channels.WhatsAppContact"]] == [("254700000001", "Wanjiku")]
    assert [(m["id"], m["body"]) for m in tables["channels.WhatsAppMessage"]] == [
        (inbound.pk, "Is there parking?"), (reply.pk, "Yes, in the basement.")]
    assert [(s["wamid"], s["status"]) for s in tables["channels.WhatsAppStatus"]] == [(reply.wamid, "read")]
    assert tables["channels.HandoffAlert"] == []


def test_with_redaction_on_a_reply_is_sent_whole_and_stored_masked(spa, deliver, graph_api, settings):
    settings.REDACT_STORED_MESSAGES = True
    graph_api.respond(500, times=settings.WHATSAPP_SEND_ATTEMPTS)  # the first round fails: kept whole to retry
    deliver(message_delivery(text="I want to book a deep tissue massage on Saturday, my number is 0712 345 678"))
    (inbound, reply) = rows()
    assert inbound.body == "I want to book a deep tissue massage on Saturday, my number is [phone]"
    assert reply.status == "retrying" and "0712 345 678" in reply.body
    with schema_context(SCHEMA):
        WhatsAppMessage.objects.filter(pk=reply.pk).update(next_attempt_at=timezone.now())
        services.outbound_send(message_id=reply.pk)
    (_, reply) = rows()
    assert "on 0712 345 678" in graph_api.texts[-1]  # the customer is told where the team will call
    assert reply.status == "sent" and "0712 345 678" not in reply.body and "on [phone]" in reply.body


def test_with_redaction_on_a_reply_that_cannot_be_sent_is_stored_masked(spa, deliver, graph_api, settings):
    settings.REDACT_STORED_MESSAGES = True
    graph_api.respond(400, {"error": {"message": "Invalid parameter", "code": 100}})
    deliver(message_delivery(text="I want to book a deep tissue massage on Saturday, my number is 0712 345 678"))
    (_, reply) = rows()
    assert reply.status == "failed" and "0712 345 678" not in reply.body and "[phone]" in reply.body
