"""Per-tenant retrieval parameters: the RetrievalSettings row (created on first use) and its bounds."""
from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from knowledge.audit import audit_record, field_changes
from knowledge.models import AuditAction, AuditSubject, RetrievalMode, RetrievalSettings
from knowledge.retrieval.graduation import mode_pin_applied

# Sane bounds an owner may set in the admin: (minimum, maximum). Outside them retrieval degrades badly
# (a zero budget returns nothing, a 50x over-retrieval costs more than it finds).
BOUNDS: dict[str, tuple[float, float]] = {
    "vector_weight": (0.0, 1.0),
    "keyword_weight": (0.0, 1.0),
    "heading_weight": (0.0, 0.5),
    "title_weight": (0.0, 1.0),
    "canonical_boost": (0.0, 0.3),
    "deprecated_penalty": (0.0, 1.0),
    "similarity_threshold": (0.0, 0.9),
    "top_k": (1, 50),
    "overretrieve_factor": (1, 10),
    "budget_chat_tokens": (200, 8000),
    "budget_whatsapp_tokens": (200, 8000),
    "budget_email_tokens": (200, 16000),
    "fts_candidate_cap": (20, 5000),
}


def bounds_errors(values: dict) -> dict[str, str]:
    """Field -> message for every value outside its bounds (and for weights that all vanish)."""
    errors: dict[str, str] = {}
    for name, (low, high) in BOUNDS.items():
        value = values.get(name)
        if value is None:
            continue
        if not low <= value <= high:
            errors[name] = f"Must be between {low:g} and {high:g}."
    weights = [values.get(name) for name in ("vector_weight", "keyword_weight")]
    if all(weight is not None for weight in weights) and sum(weights) <= 0:
        errors.setdefault("vector_weight", "The vector and keyword weights cannot both be 0.")
    return errors


def retrieval_settings_get(*, cursor=None) -> RetrievalSettings:
    """The schema's settings row, created with the SOP defaults on first use.

    With `cursor` the row is read on that cursor (retrieval runs every statement on one cursor, so
    django-tenants sets the search path once)."""
    row = _read_on(cursor) if cursor is not None else RetrievalSettings.objects.order_by("pk").first()
    if row is not None:
        return row
    try:
        with transaction.atomic():
            return RetrievalSettings.objects.create()
    except IntegrityError:  # pragma: no cover - a concurrent first use created it
        return RetrievalSettings.objects.order_by("pk").first()


EDITABLE_FIELDS = ("mode", *BOUNDS)


def retrieval_settings_update(*, changes: dict, user=None, actor: str | None = None) -> RetrievalSettings:
    """Apply an owner's changes (bounded, validated as a whole), follow a mode pin, and record who changed what."""
    unknown = sorted(set(changes) - set(EDITABLE_FIELDS))
    if unknown:
        raise ValidationError({name: ["This setting cannot be edited."] for name in unknown})
    if "mode" in changes and changes["mode"] not in RetrievalMode.values:
        raise ValidationError({"mode": [f"Unknown mode {changes['mode']!r}."]})
    with transaction.atomic():
        row = RetrievalSettings.objects.select_for_update().get(pk=retrieval_settings_get().pk)
        before = {name: getattr(row, name) for name in EDITABLE_FIELDS}
        after = {**before, **changes}
        errors = bounds_errors(after)
        if errors:
            raise ValidationError({name: [message] for name, message in errors.items()})
        detail = field_changes(before=before, after=after)
        if not detail:
            return row
        for name, value in changes.items():
            setattr(row, name, value)
        row.save(update_fields=[*changes, "updated_at"])
        audit_record(subject=AuditSubject.RETRIEVAL_SETTINGS, action=AuditAction.CHANGED, key="retrieval settings",
                     user=user, actor=actor, detail=detail)
        mode_pin_applied(row)
    return row


def _read_on(cursor) -> RetrievalSettings | None:
    concrete = RetrievalSettings._meta.concrete_fields
    columns = ", ".join(connection.ops.quote_name(field.column) for field in concrete)
    pk = connection.ops.quote_name(RetrievalSettings._meta.pk.column)
    cursor.execute(f"SELECT {columns} FROM {RetrievalSettings._meta.db_table} ORDER BY {pk} LIMIT 1")
    fields = [field.attname for field in concrete]
    values = cursor.fetchone()
    return RetrievalSettings.from_db(connection.alias, fields, values) if values is not None else None


def effective_mode(settings_row: RetrievalSettings) -> str:
    """The mode a turn runs in: the owner's pin, or the automatic current mode."""
    if settings_row.mode in (RetrievalMode.INLINE, RetrievalMode.HYBRID):
        return settings_row.mode
    return settings_row.current_mode if settings_row.current_mode in ("inline", "hybrid") else "inline"


def token_budget(settings_row: RetrievalSettings, channel: str) -> int:
    """The retrieved-knowledge token budget of a channel (chat 1500, email 2000 by default)."""
    return {
        "email": settings_row.budget_email_tokens,
        "whatsapp": settings_row.budget_whatsapp_tokens,
    }.get(channel, settings_row.budget_chat_tokens)


def tenant_today() -> dt.date:
    """Today's date in the tenant's time zone (validity windows are calendar dates of the business)."""
    name = getattr(getattr(connection, "tenant", None), "timezone", None) or "UTC"
    try:
        zone = ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        zone = ZoneInfo("UTC")
    return timezone.now().astimezone(zone).date()
