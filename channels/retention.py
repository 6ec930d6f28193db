"""WhatsApp retention: customers' messages, Meta's statuses and idle customer numbers follow the conversations'
period (CONVERSATION_RETENTION_DAYS), so a business keeps no more of a WhatsApp chat than of the turns it made."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from channels.models import WhatsAppContact, WhatsAppMessage, WhatsAppStatus
from conversations.retention import BATCH_SIZE, delete_in_batches


@dataclass(frozen=True)
class WhatsAppPruneResult:
    cutoff: dt.datetime | None  # None when retention is off
    messages: int = 0
    statuses: int = 0
    contacts: int = 0
    names_cleared: int = 0  # opted-out customers kept by number only


def _idle(cutoff: dt.datetime) -> QuerySet:
    return (WhatsAppContact.objects.filter(updated_at__lt=cutoff)
            .filter(Q(last_inbound_at__isnull=True) | Q(last_inbound_at__lt=cutoff))
            .exclude(Exists(WhatsAppMessage.objects.filter(contact=OuterRef("pk")))))


def _contacts_delete(queryset: QuerySet, *, batch_size: int) -> int:
    deleted = 0
    while True:
        with transaction.atomic():
            # Locked and checked in one statement, skipping rows a delivery holds: a customer writing again at
            # this moment keeps their row (a delete racing their insert would fail the delivery instead).
            ids = list(queryset.select_for_update(skip_locked=True).order_by().values_list("pk", flat=True)
                       [:batch_size])
            if not ids:
                return deleted
            _count, per_model = WhatsAppContact.objects.filter(pk__in=ids).delete()
        deleted += per_model.get(WhatsAppContact._meta.label, 0)


def whatsapp_prune(*, days: int | None = None, now: dt.datetime | None = None,
                   batch_size: int = BATCH_SIZE) -> WhatsAppPruneResult:
    """Delete this schema's WhatsApp data older than `days` (default: CONVERSATION_RETENTION_DAYS; 0 keeps all).

    Messages and statuses go by age; a customer's number goes once no message of theirs is left and they have
    not written since the cut-off. A number that sent STOP stays (without its name) so the opt-out holds.
    """
    days = settings.CONVERSATION_RETENTION_DAYS if days is None else days
    if days <= 0:
        return WhatsAppPruneResult(cutoff=None)
    cutoff = (now or timezone.now()) - dt.timedelta(days=days)
    statuses = delete_in_batches(WhatsAppStatus.objects.filter(created_at__lt=cutoff), batch_size=batch_size)
    messages = delete_in_batches(WhatsAppMessage.objects.filter(created_at__lt=cutoff), batch_size=batch_size)
    idle = _idle(cutoff)
    contacts = _contacts_delete(idle.filter(opted_out_at__isnull=True), batch_size=batch_size)
    names_cleared = idle.filter(opted_out_at__isnull=False).exclude(name="").update(name="")
    return WhatsAppPruneResult(cutoff=cutoff, messages=messages, statuses=statuses, contacts=contacts,
                               names_cleared=names_cleared)
