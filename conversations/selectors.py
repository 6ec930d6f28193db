"""Conversation reads."""
from __future__ import annotations

from django.db.models import QuerySet

from conversations.models import HandoffRequest, HandoffStatus, Session, Turn


def session_get(*, public_id: str) -> Session | None:
    return Session.objects.filter(public_id=public_id).first()


def session_turns(*, session: Session) -> QuerySet[Turn]:
    return session.turns.order_by("created_at", "id")


def handoffs_open() -> QuerySet[HandoffRequest]:
    """Requests nobody has dealt with yet, newest first."""
    return HandoffRequest.objects.filter(status=HandoffStatus.NEW).order_by("-created_at")


def collection_exists(*, name: str) -> bool:
    """Whether a document collection of this name exists in the tenant."""
    from knowledge.collections.selectors import collection_get

    return collection_get(name=name) is not None
