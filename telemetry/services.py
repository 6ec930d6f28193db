"""Telemetry writes. Every write here is best-effort: telemetry never breaks the user path."""
from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

import structlog
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from ratiba.redaction import stored_payload, stored_text
from telemetry.models import Event, RetrievalLog, RetrievalLogSection

log = structlog.get_logger("ratiba.telemetry")
stdlib_log = logging.getLogger(__name__)

PREVIEW_CHARS = 200


def event_record(*, name: str, payload: dict) -> Event | None:
    """Store an event row and emit it as a structured JSON log line; None if the row could not be written."""
    payload = stored_payload(payload)  # REDACT_STORED_MESSAGES: masked in the row and the log line alike
    log.info(name, schema=connection.schema_name, **payload)
    try:
        # A savepoint, so a failed insert cannot poison the caller's transaction.
        with transaction.atomic():
            return Event.objects.create(name=name, payload=payload)
    except DatabaseError:
        stdlib_log.exception("telemetry event %s could not be stored", name)
        return None


@dataclass(frozen=True)
class SectionHit:
    """One retrieved section as the retrieval log stores it."""

    key: str
    version: int
    similarity: float | None
    tokens: int
    match_type: str

    def as_dict(self) -> dict:
        return {"key": self.key, "version": self.version, "similarity": self.similarity,
                "tokens": self.tokens, "match_type": self.match_type}


def _get(item, *names, default=None):
    for name in names:
        value = item.get(name) if isinstance(item, dict) else getattr(item, name, None)
        if value is not None:
            return value
    return default


def section_hit_from(item) -> SectionHit:
    """Normalise a dict or a RetrievedSnippet-like object to a SectionHit."""
    similarity = _get(item, "similarity", "score")
    return SectionHit(
        key=str(_get(item, "key", "section_key", default=""))[:100],
        version=int(_get(item, "version", default=0)),
        similarity=round(float(similarity), 4) if similarity is not None else None,
        tokens=int(_get(item, "tokens", "token_count", default=0)),
        match_type=str(_get(item, "match_type", default=""))[:16],
    )


def retrieval_log_record(
    *,
    channel: str = "chat",
    session_id: str = "",
    message_preview: str = "",
    retrieved_sections: Iterable = (),
    retrieved_tokens: int | None = None,
    core_tokens: int = 0,
    prompt_tokens: int | None = None,
    trivial: bool = False,
    fallback_used: bool = False,
    candidate_count: int = 0,
    returned_count: int | None = None,
    skipped_for_budget_count: int = 0,
    empty_retrieval: bool | None = None,
    embedding_latency_ms: float = 0.0,
    retrieval_latency_ms: float = 0.0,
    mode: str = "",
    intent: str = "",
    provider: str = "",
    model: str = "",
    cost_usd: Decimal | float | str = 0,
    refused: bool = False,
    refusal_reason: str | None = "",
    language: str = "",
    turn_id: str = "",
    prompt_version: str = "",
    created_at: datetime | None = None,
) -> RetrievalLog | None:
    """Write one turn's retrieval log row (and its section rows); never raises, None if it failed.

    `retrieved_sections` takes dicts or RetrievedSnippet objects. Left out, `retrieved_tokens`,
    `returned_count` and `empty_retrieval` are derived from the sections, and `prompt_tokens`
    is core + retrieved tokens.
    """
    try:
        hits = [section_hit_from(item) for item in (retrieved_sections or ())]
        if retrieved_tokens is None:
            retrieved_tokens = sum(hit.tokens for hit in hits)
        if returned_count is None:
            returned_count = len(hits)
        if empty_retrieval is None:
            # A trivial turn reuses the previous retrieval: skipping retrieval is not an empty one.
            empty_retrieval = not hits and not trivial
        if prompt_tokens is None:
            prompt_tokens = int(core_tokens) + int(retrieved_tokens)
        row = RetrievalLog(
            created_at=created_at or timezone.now(),
            channel=(channel or "")[:16],
            session_id=str(session_id or "")[:100],
            turn_id=str(turn_id or "")[:100],
            message_preview=stored_text(message_preview or "")[:PREVIEW_CHARS],
            retrieved_sections=[hit.as_dict() for hit in hits],
            retrieved_tokens=max(int(retrieved_tokens), 0),
            core_tokens=max(int(core_tokens), 0),
            prompt_tokens=max(int(prompt_tokens), 0),
            trivial=bool(trivial),
            fallback_used=bool(fallback_used),
            candidate_count=max(int(candidate_count), 0),
            returned_count=max(int(returned_count), 0),
            skipped_for_budget_count=max(int(skipped_for_budget_count), 0),
            empty_retrieval=bool(empty_retrieval),
            embedding_latency_ms=float(embedding_latency_ms or 0),
            retrieval_latency_ms=float(retrieval_latency_ms or 0),
            mode=(mode or "")[:16],
            intent=(intent or "")[:32],
            provider=(provider or "")[:32],
            model=(model or "")[:100],
            cost_usd=Decimal(str(cost_usd or 0)).quantize(Decimal("0.000001")),
            refused=bool(refused or refusal_reason),
            refusal_reason=(refusal_reason or "")[:50],
            prompt_version=(prompt_version or "")[:20],
            language=(language or "")[:8],
        )
        # A savepoint, so a failed insert cannot poison the caller's transaction.
        with transaction.atomic():
            row.save()
            if hits:
                RetrievalLogSection.objects.bulk_create([
                    RetrievalLogSection(log=row, created_at=row.created_at, key=hit.key, version=hit.version,
                                        similarity=hit.similarity, tokens=hit.tokens, match_type=hit.match_type)
                    for hit in hits
                ])
        return row
    except Exception:  # noqa: BLE001 - the turn must go on whatever went wrong here
        stdlib_log.exception("retrieval log could not be stored (schema %s)",
                             getattr(connection, "schema_name", "?"))
        return None
