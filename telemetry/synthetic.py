"""Synthetic telemetry (turns, sections, events) for demos, browser tests and the dashboard benchmark."""
from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass
from decimal import Decimal

from django.db import transaction
from django.utils import timezone

from telemetry.models import Event, EventName, RetrievalLog, RetrievalLogSection
from telemetry.rollups import rollups_rebuild

INTENTS = [("other", 52), ("hours", 14), ("services", 14), ("thanks", 9), ("greeting", 5), ("booking", 4),
           ("reschedule", 1), ("cancel", 1)]
CHANNELS = [("chat", 60), ("whatsapp", 32), ("email", 8)]
LANGUAGES = [("en", 68), ("sw", 32)]
# Only the refusal reasons a turn can carry (conversations.i18n.REFUSAL_REASONS; docs/adr/0013).
REFUSALS = [("no_relevant_context", 90), ("empty_message", 6), ("cost_ceiling", 4)]
DEFAULT_KEYS = ["parking", "directions", "arrive-early", "cancellation-policy", "deposit", "payment-methods",
                "gift-vouchers", "couples-massage", "pregnancy-massage", "facial-prep", "what-to-wear",
                "showers-lockers", "children", "accessibility", "late-arrival", "holiday-hours", "wifi",
                "loyalty", "products", "covid-hygiene"]
# Unanswered questions in families of paraphrases (synthetic, for the gap digest's demo and tests).
GAP_FAMILIES = [
    [("Do you have a sauna?", "en"), ("Is there a sauna I can use?", "en"), ("Do you have a steam room or sauna?", "en"),
     ("Can I use the sauna after my massage?", "en")],
    [("Do you sell hair products?", "en"), ("Can I buy shampoo at the salon?", "en"),
     ("Which hair products do you sell?", "en")],
    [("Do you do home visits?", "en"), ("Can the therapist come to my house?", "en"),
     ("Do you offer massage at home?", "en")],
    [("Is there a discount for students?", "en"), ("Do students get a discount?", "en")],
    [("Mnafanya massage nyumbani?", "sw"), ("Mnaweza kuja nyumbani kwangu kwa massage?", "sw")],
    [("Can I bring my dog?", "en"), ("Are pets allowed in the spa?", "en")],
]
GAP_FAMILY_WEIGHTS = [20, 14, 10, 6, 6, 4]  # a few big gaps and a tail, like real traffic


def _pick(rng: random.Random, weighted):
    names, weights = zip(*weighted)
    return rng.choices(names, weights=weights)[0]


@dataclass(frozen=True)
class SyntheticResult:
    logs: int
    sections: int
    events: int


def synthetic_telemetry_write(*, turns: int, days: int = 30, seed: int = 7, now: dt.datetime | None = None,
                              keys: list[str] | None = None, gap_events: int = 0, batch: int = 5000,
                              ) -> SyntheticResult:
    """Write `turns` plausible retrieval-log rows spread over the last `days` days, with their section rows,
    overflow events and `gap_events` knowledge_gap_candidate events; deterministic for a seed."""
    rng = random.Random(seed)
    now = now or timezone.now()
    keys = keys or DEFAULT_KEYS
    popularity = [1.0 / (rank + 1) ** 0.8 for rank in range(len(keys))]
    # Let the most-retrieved keys be a minority of the catalogue so "never retrieved" has members.
    usable = keys[: max(1, int(len(keys) * 0.85))]
    weights = popularity[: len(usable)]
    logs = sections = events = 0
    pending_logs: list[RetrievalLog] = []
    pending_sections: list[list[RetrievalLogSection]] = []
    pending_events: list[Event] = []

    def flush():
        nonlocal logs, sections, events
        with transaction.atomic():
            created = RetrievalLog.objects.bulk_create(pending_logs, batch_size=batch)
            rows = []
            for log, parts in zip(created, pending_sections):
                for part in parts:
                    part.log_id = log.pk
                    rows.append(part)
            RetrievalLogSection.objects.bulk_create(rows, batch_size=batch)
            Event.objects.bulk_create(pending_events, batch_size=batch)
        logs += len(created)
        sections += len(rows)
        events += len(pending_events)
        pending_logs.clear()
        pending_sections.clear()
        pending_events.clear()

    span = days * 86400
    for index in range(turns):
        # Busier recently and in the daytime: a gentle upward trend the charts can show.
        age = span * (1 - rng.random() ** 0.8)
        created = now - dt.timedelta(seconds=age)
        created = created.replace(hour=min(21, max(7, int(rng.gauss(13, 3.5)))))
        if created > now:
            created -= dt.timedelta(days=1)
        intent = _pick(rng, INTENTS)
        trivial = intent == "thanks"
        retrieves = intent in ("other", "hours", "services")
        refused = retrieves and rng.random() < 0.06
        fallback = retrieves and not refused and rng.random() < 0.07
        hits = []
        if retrieves and not refused:
            count = rng.choice([1, 2, 3, 3, 4, 5])
            for key in set(rng.choices(usable, weights=weights, k=count)):
                hits.append({"key": key, "version": 1 + len(key) % 3, "similarity": round(rng.uniform(0.3, 0.85), 4),
                             "tokens": rng.randint(120, 420), "match_type": rng.choice(["hybrid", "vector", "keyword"])})
        retrieved = sum(hit["tokens"] for hit in hits)
        core = 2850 if rng.random() < 0.9 else 1667
        provider = "anthropic" if rng.random() < 0.3 else "extractive"
        log = RetrievalLog(
            created_at=created, channel=_pick(rng, CHANNELS), session_id=f"s{rng.randint(1, turns // 3 + 1)}",
            turn_id=f"t{index}", message_preview=f"synthetic question {index}", retrieved_sections=hits,
            retrieved_tokens=retrieved, core_tokens=core, prompt_tokens=core + retrieved + rng.randint(20, 200),
            trivial=trivial, fallback_used=fallback, candidate_count=len(hits) + rng.randint(0, 12),
            returned_count=len(hits), skipped_for_budget_count=rng.choice([0, 0, 0, 1]),
            empty_retrieval=retrieves and not hits, embedding_latency_ms=0 if not retrieves else rng.gauss(28, 8),
            retrieval_latency_ms=0 if not retrieves else abs(rng.gauss(14, 6)),
            mode="hybrid" if rng.random() < 0.7 else "inline", intent=intent, provider=provider,
            model="claude-haiku-4-5" if provider == "anthropic" else "extractive",
            cost_usd=Decimal(str(round(rng.uniform(0.0004, 0.003), 6))) if provider == "anthropic" else Decimal(0),
            refused=refused, refusal_reason=_pick(rng, REFUSALS) if refused else "", language=_pick(rng, LANGUAGES),
        )
        pending_logs.append(log)
        pending_sections.append([RetrievalLogSection(created_at=created, key=hit["key"], version=hit["version"],
                                                     similarity=hit["similarity"], tokens=hit["tokens"],
                                                     match_type=hit["match_type"]) for hit in hits])
        if intent in ("other", "hours") and rng.random() < 0.04:
            pending_events.append(Event(name=EventName.KNOWLEDGE_OVERFLOW, created_at=created,
                                        payload={"intent": intent, "returned": 20, "total": rng.randint(21, 60)}))
        if len(pending_logs) >= batch:
            flush()
    for index in range(gap_events):
        family = rng.choices(GAP_FAMILIES, weights=GAP_FAMILY_WEIGHTS)[0]
        question, language = rng.choice(family)
        created = now - dt.timedelta(seconds=rng.uniform(0, span))
        pending_events.append(Event(name=EventName.KNOWLEDGE_GAP_CANDIDATE, created_at=created, payload={
            "question": question, "language": language, "refused": True, "refusal_reason": "no_relevant_context",
            "snippets_available": 0}))
    flush()
    # These rows are back-dated into days whose rollups may already be kept: forget those so the
    # dashboard recomputes them from the rows (a kept day is otherwise never re-read).
    rollups_rebuild(since=(now - dt.timedelta(seconds=span + 86400)).date())
    return SyntheticResult(logs=logs, sections=sections, events=events)
