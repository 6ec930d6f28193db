"""Known telemetry rows for the dashboard tests (exact figures are worked out in the tests)."""
from __future__ import annotations

import datetime as dt

from telemetry.models import Event
from telemetry.services import retrieval_log_record

NOW = dt.datetime(2026, 3, 10, 12, 0, tzinfo=dt.timezone.utc)


def at(days_ago: int, hour: int = 9) -> dt.datetime:
    return (NOW - dt.timedelta(days=days_ago)).replace(hour=hour, minute=0)


def sec(key: str, similarity: float, tokens: int, version: int = 1) -> dict:
    return {"key": key, "version": version, "similarity": similarity, "tokens": tokens, "match_type": "hybrid"}


def known_turns() -> None:
    """Six turns inside the 7-day window ending NOW and one just outside it."""
    rec = retrieval_log_record
    rec(created_at=at(0, 9), channel="chat", intent="other", core_tokens=3000,
        retrieved_sections=[sec("a", 0.8, 300), sec("b", 0.6, 200)], embedding_latency_ms=20,
        retrieval_latency_ms=10, cost_usd="0.001", language="en", mode="hybrid", provider="extractive")
    rec(created_at=at(0, 10), channel="chat", intent="other", core_tokens=3000, retrieved_sections=[sec("a", 0.7, 300)],
        fallback_used=True, embedding_latency_ms=40, retrieval_latency_ms=30, cost_usd="0.002", language="en")
    rec(created_at=at(0, 11), channel="chat", intent="thanks", core_tokens=3000, trivial=True, language="en")
    rec(created_at=at(1, 9), channel="whatsapp", intent="hours", core_tokens=2000, retrieved_sections=[sec("c", 0.5, 100)],
        embedding_latency_ms=60, retrieval_latency_ms=20, language="sw")
    rec(created_at=at(1, 10), channel="chat", intent="other", core_tokens=3000, refusal_reason="no_relevant_context",
        embedding_latency_ms=30, retrieval_latency_ms=15, language="sw")
    rec(created_at=at(3, 9), channel="chat", intent="services", core_tokens=3000,
        retrieved_sections=[sec("a", 0.9, 300, version=2), sec("c", 0.4, 100)], embedding_latency_ms=50,
        retrieval_latency_ms=25, cost_usd="0.003", language="en")
    # Outside the 7-day window (inside 30 days).
    rec(created_at=at(8, 9), channel="chat", intent="other", core_tokens=9000, retrieved_sections=[sec("b", 0.2, 900)],
        embedding_latency_ms=900, retrieval_latency_ms=900, cost_usd="1", refusal_reason="off_topic", language="fr")
    for days_ago, intent in ((0, "other"), (1, "other"), (2, "hours"), (9, "other")):
        event = Event.objects.create(name="knowledge_overflow", payload={"intent": intent, "returned": 20, "total": 31})
        Event.objects.filter(pk=event.pk).update(created_at=at(days_ago))
