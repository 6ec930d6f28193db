"""The audit log's one writer: who changed what an owner can see, written inside the change's transaction."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from knowledge.models import AuditEntry


def is_user(user) -> bool:
    """A Django user (not an API client or None)."""
    return user is not None and hasattr(user, "has_perm") and getattr(user, "pk", None) is not None


def actor_of(*, user=None, actor: str | None = None) -> tuple[str, int | None]:
    """How the log names the author: a user of this business, else the given actor, else "system"."""
    if is_user(user):
        return f"user:{user.get_username()}"[:160], user.pk
    return (actor or "system")[:160], None


def api_key_actor(prefix: str | None) -> str | None:
    """The actor name of an API-key caller."""
    return f"api_key:{prefix}" if prefix else None


def request_actor(request) -> str | None:
    """How the log names the API key behind a REST request (users are named from `user` instead)."""
    return api_key_actor(getattr(getattr(request, "auth", None), "prefix", None))


def _plain(value: Any) -> Any:
    # JSON-able and readable in the admin: prices as "1500.00", times as "09:00", dates as ISO.
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, dt.time):
        return value.strftime("%H:%M")
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def field_changes(*, before: dict[str, Any], after: dict[str, Any]) -> dict[str, list]:
    """{field: [before, after]} for the fields whose values differ."""
    return {name: [_plain(before.get(name)), _plain(value)] for name, value in after.items()
            if before.get(name) != value}


def audit_record(*, subject: str, action: str, key: str, version: int | None = None, user=None,
                 actor: str | None = None, detail: dict | None = None) -> AuditEntry:
    """Append one entry; call it inside the transaction that makes the change so both commit or neither."""
    label, user_id = actor_of(user=user, actor=actor)
    return AuditEntry.objects.create(subject=subject, action=action, key=str(key)[:200], version=version,
                                     actor=label, user_id=user_id, detail=_plain(detail or {}))
