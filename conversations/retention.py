"""Conversation retention: sessions, turns and hand-off requests older than CONVERSATION_RETENTION_DAYS go."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from conversations.models import HandoffRequest, Session, Turn

BATCH_SIZE = 2000


@dataclass(frozen=True)
class ConversationPruneResult:
    cutoff: dt.datetime | None  # None when retention is off
    sessions: int = 0
    turns: int = 0
    handoffs: int = 0


def delete_in_batches(queryset: QuerySet, *, batch_size: int) -> int:
    """Delete what `queryset` matches, `batch_size` rows per transaction; returns how many of its model went."""
    # Short transactions: a tenant with a year of turns is pruned without one long lock on the table.
    deleted = 0
    model = queryset.model
    while True:
        ids = list(queryset.order_by().values_list("pk", flat=True)[:batch_size])
        if not ids:
            return deleted
        with transaction.atomic():
            _count, per_model = model.objects.filter(pk__in=ids).delete()
        deleted += per_model.get(model._meta.label, 0)


def conversations_prune(*, days: int | None = None, now: dt.datetime | None = None,
                        batch_size: int = BATCH_SIZE) -> ConversationPruneResult:
    """Delete this schema's conversation data older than `days` (default: the setting; 0 or less keeps all).

    A turn goes when it is older than the cut-off, a hand-off request likewise, and a session when nothing
    happened in it since (every turn touches its session, so an expired session has no newer turns).
    """
    days = settings.CONVERSATION_RETENTION_DAYS if days is None else days
    if days <= 0:
        return ConversationPruneResult(cutoff=None)
    cutoff = (now or timezone.now()) - dt.timedelta(days=days)
    handoffs = delete_in_batches(HandoffRequest.objects.filter(created_at__lt=cutoff), batch_size=batch_size)
    turns = delete_in_batches(Turn.objects.filter(created_at__lt=cutoff), batch_size=batch_size)
    sessions = delete_in_batches(Session.objects.filter(updated_at__lt=cutoff), batch_size=batch_size)
    return ConversationPruneResult(cutoff=cutoff, sessions=sessions, turns=turns, handoffs=handoffs)
