"""Automatic graduation from inline to hybrid retrieval (docs/adr/0007-retrieval-fusion-graduation-refusal.md).

Rule: a tenant in automatic mode runs inline; it graduates to hybrid on the first overflowing turn when its
whole eligible knowledge no longer fits the default caps (every question would lose snippets), else when
`knowledge_overflow` has fired at least OVERFLOW_EVENTS times within the last WINDOW_DAYS days (a caller's
smaller caps, overflow that keeps firing, not a one-off). The switch is sticky; the owner can pin either
mode, and "re-evaluate" in the admin brings an automatic tenant back to inline only when the whole eligible KB
fits the caps again and nothing has overflowed within the window.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from knowledge.models import RetrievalMode, RetrievalSettings
from telemetry.models import Event, EventName
from telemetry.services import event_record

OVERFLOW_EVENTS = 3
WINDOW_DAYS = 7
DEFAULT_LIMIT = 20
DEFAULT_MAX_CHARS = 6000


@dataclass(frozen=True)
class GraduationState:
    """What the admin shows next to the mode."""

    configured: str
    current: str
    graduated_at: dt.datetime | None
    overflows_in_window: int
    needed: int = OVERFLOW_EVENTS
    window_days: int = WINDOW_DAYS


def overflow_count(*, days: int = WINDOW_DAYS) -> int:
    """knowledge_overflow events recorded in this schema within the last `days` days."""
    since = timezone.now() - dt.timedelta(days=days)
    return Event.objects.filter(name=EventName.KNOWLEDGE_OVERFLOW, created_at__gte=since).count()


def graduation_state(settings_row: RetrievalSettings) -> GraduationState:
    return GraduationState(configured=settings_row.mode, current=settings_row.current_mode,
                           graduated_at=settings_row.graduated_at, overflows_in_window=overflow_count())


def _switch(settings_row: RetrievalSettings, *, to: str, reason: str, overflows: int) -> None:
    previous = settings_row.current_mode
    with transaction.atomic():
        locked = RetrievalSettings.objects.select_for_update().get(pk=settings_row.pk)
        if locked.current_mode == to:
            settings_row.current_mode, settings_row.graduated_at = locked.current_mode, locked.graduated_at
            return
        locked.current_mode = to
        locked.graduated_at = timezone.now() if to == "hybrid" else None
        locked.save(update_fields=["current_mode", "graduated_at", "updated_at"])
    settings_row.current_mode, settings_row.graduated_at = locked.current_mode, locked.graduated_at
    event_record(name=EventName.MODE_CHANGED,
                 payload={"from": previous, "to": to, "reason": reason, "overflows_in_window": overflows,
                          "needed": OVERFLOW_EVENTS, "window_days": WINDOW_DAYS})


def kb_fits_inline(*, cursor=None) -> bool:
    """Whether an `other` turn (every category) on any channel would fit the default inline caps."""
    from knowledge.retrieval import candidates as sql
    from knowledge.retrieval.config import tenant_today
    from knowledge.retrieval.filters import Filters

    for channel in ("chat", "whatsapp", "email"):
        where, params = sql.eligibility_sql(channel=channel, today=tenant_today(), filters=Filters())
        rows, total = sql.inline_rows(where=where, params=params, limit=DEFAULT_LIMIT, cursor=cursor)
        if total > DEFAULT_LIMIT or sum(length for _id, length in rows) > DEFAULT_MAX_CHARS:
            return False
    return True


def graduation_check_after_overflow(settings_row: RetrievalSettings, *, cursor=None) -> str | None:
    """Called after an inline retrieval overflowed: graduate an automatic tenant if the rule holds. Returns why
    ("exceeds_caps": the knowledge itself no longer fits; "overflow_events": it kept overflowing), or None."""
    if settings_row.mode != RetrievalMode.AUTO or settings_row.current_mode == "hybrid":
        return None
    overflows = overflow_count()
    if not kb_fits_inline(cursor=cursor):
        _switch(settings_row, to="hybrid", reason="the knowledge base exceeds the inline caps", overflows=overflows)
        return "exceeds_caps"
    if overflows < OVERFLOW_EVENTS:
        return None
    _switch(settings_row, to="hybrid",
            reason=f"knowledge_overflow fired {overflows} times in {WINDOW_DAYS} days", overflows=overflows)
    return "overflow_events"


def graduation_reevaluate(settings_row: RetrievalSettings, *, kb_fits: bool) -> str:
    """Recompute an automatic tenant's mode now (admin action); returns the resulting current mode."""
    if settings_row.mode != RetrievalMode.AUTO:
        pinned = settings_row.mode
        if settings_row.current_mode != pinned:
            _switch(settings_row, to=pinned, reason="pinned by the owner", overflows=overflow_count())
        return settings_row.current_mode
    overflows = overflow_count()
    if overflows >= OVERFLOW_EVENTS or not kb_fits:
        target, reason = "hybrid", (f"knowledge_overflow fired {overflows} times in {WINDOW_DAYS} days"
                                    if overflows >= OVERFLOW_EVENTS else "the knowledge base exceeds the inline caps")
    else:
        target, reason = "inline", "the knowledge base fits the inline caps again"
    if settings_row.current_mode != target:
        _switch(settings_row, to=target, reason=reason, overflows=overflows)
    return settings_row.current_mode


def mode_pin_applied(settings_row: RetrievalSettings) -> None:
    """Keep current_mode in line with an owner's pin (called when the settings are saved)."""
    if settings_row.mode in (RetrievalMode.INLINE, RetrievalMode.HYBRID) and \
            settings_row.current_mode != settings_row.mode:
        _switch(settings_row, to=settings_row.mode, reason="pinned by the owner", overflows=overflow_count())
