"""Per-day telemetry rollups: past days are aggregated once and kept; only today is read from raw rows.

Every figure the dashboard shows is a sum, a count or a percentile, so merging days is exact: the
rollup keeps sums and counts (not averages) and the whole prompt-token distribution as a
(value, count) histogram, from which the window's continuous p95 is computed exactly as
PostgreSQL's percentile_cont would. A day is "sealed" (safe to keep) a few minutes after it ends
in the tenant's time zone; log rows carry the time they were written, so a sealed day no longer
changes. Rows written later with an older created_at (imports) need `rollups_rebuild()`.
"""
from __future__ import annotations

import datetime as dt
import math
from collections import Counter
from contextlib import nullcontext
from dataclasses import dataclass, field
from decimal import Decimal
from zoneinfo import ZoneInfo

import numpy as np
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, Max, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from telemetry.models import Event, EventName, RetrievalDay, RetrievalLog, RetrievalLogSection

SEAL_DELAY = dt.timedelta(minutes=10)
WORK_MEM = "32MB"
WARM_DAYS = 30


@dataclass
class Block:
    """Additive counters of a set of turns (a day, a channel, a window)."""

    turns: int = 0
    empty: int = 0
    fallback: int = 0
    trivial: int = 0
    refused: int = 0
    retrieved_sum: int = 0
    prompt_sum: int = 0
    non_trivial: int = 0
    embed_sum: float = 0.0
    retrieve_sum: float = 0.0
    cost: Decimal = Decimal(0)
    # Prompt-token distribution as parallel lists (value, turns); merged blocks simply concatenate,
    # so a value may repeat. Whole-day blocks only (channel blocks leave them empty).
    hist_v: list[int] = field(default_factory=list)
    hist_c: list[int] = field(default_factory=list)
    p95: float | None = None  # cached p95_prompt(); kept rollups store it so daily points need no sort

    def merge(self, other: Block) -> Block:
        self.turns += other.turns
        self.empty += other.empty
        self.fallback += other.fallback
        self.trivial += other.trivial
        self.refused += other.refused
        self.retrieved_sum += other.retrieved_sum
        self.prompt_sum += other.prompt_sum
        self.non_trivial += other.non_trivial
        self.embed_sum += other.embed_sum
        self.retrieve_sum += other.retrieve_sum
        self.cost += other.cost
        self.hist_v.extend(other.hist_v)
        self.hist_c.extend(other.hist_c)
        self.p95 = None
        return self

    def p95_prompt(self) -> float | None:
        """Continuous 95th percentile (PostgreSQL's percentile_cont(0.95)) of the prompt-token distribution."""
        if self.p95 is not None or not self.hist_v:
            return self.p95
        values = np.asarray(self.hist_v, dtype=np.int64)
        order = np.argsort(values, kind="stable")
        values = values[order]
        cumulative = np.cumsum(np.asarray(self.hist_c, dtype=np.int64)[order])
        total = int(cumulative[-1])
        if not total:
            return None
        position = 0.95 * (total - 1)
        low_rank, high_rank = math.floor(position), math.ceil(position)
        # The value at 0-based rank r is the first one whose cumulative count exceeds r.
        low = int(values[np.searchsorted(cumulative, low_rank, side="right")])
        high = int(values[np.searchsorted(cumulative, high_rank, side="right")])
        self.p95 = low + (position - low_rank) * (high - low)
        return self.p95

    def to_json(self) -> dict:
        return {"turns": self.turns, "empty": self.empty, "fallback": self.fallback, "trivial": self.trivial,
                "refused": self.refused, "retrieved_sum": self.retrieved_sum, "prompt_sum": self.prompt_sum,
                "non_trivial": self.non_trivial, "embed_sum": self.embed_sum, "retrieve_sum": self.retrieve_sum,
                "cost": str(self.cost), "hist_v": self.hist_v, "hist_c": self.hist_c, "p95": self.p95_prompt()}

    @classmethod
    def from_json(cls, data: dict) -> Block:
        return cls(turns=data["turns"], empty=data["empty"], fallback=data["fallback"], trivial=data["trivial"],
                   refused=data["refused"], retrieved_sum=data["retrieved_sum"], prompt_sum=data["prompt_sum"],
                   non_trivial=data["non_trivial"], embed_sum=data["embed_sum"], retrieve_sum=data["retrieve_sum"],
                   cost=Decimal(data["cost"]), hist_v=data.get("hist_v", []), hist_c=data.get("hist_c", []),
                   p95=data.get("p95"))


@dataclass
class DayStats:
    """Everything the dashboard needs from one local day (or, merged, from a window)."""

    total: Block = field(default_factory=Block)
    channels: dict[str, Block] = field(default_factory=dict)
    intents: Counter = field(default_factory=Counter)
    languages: Counter = field(default_factory=Counter)
    refusal_reasons: Counter = field(default_factory=Counter)
    sections: dict[str, list] = field(default_factory=dict)  # key -> [count, similarity sum, similarity n, max version]
    events: Counter = field(default_factory=Counter)
    overflow: Counter = field(default_factory=Counter)  # intent -> knowledge_overflow events

    def merge(self, other: DayStats) -> DayStats:
        self.total.merge(other.total)
        for name, block in other.channels.items():
            self.channels.setdefault(name, Block()).merge(block)
        self.intents.update(other.intents)
        self.languages.update(other.languages)
        self.refusal_reasons.update(other.refusal_reasons)
        for key, (count, sim_sum, sim_n, version) in other.sections.items():
            mine = self.sections.setdefault(key, [0, 0.0, 0, 0])
            mine[0] += count
            mine[1] += sim_sum
            mine[2] += sim_n
            mine[3] = max(mine[3], version)
        self.events.update(other.events)
        self.overflow.update(other.overflow)
        return self

    def to_json(self) -> dict:
        return {"total": self.total.to_json(),
                "channels": {name: {k: v for k, v in block.to_json().items() if not k.startswith("hist_")}
                             for name, block in self.channels.items()},
                "intents": dict(self.intents), "languages": dict(self.languages),
                "refusal_reasons": dict(self.refusal_reasons), "sections": self.sections,
                "events": dict(self.events), "overflow": dict(self.overflow)}

    @classmethod
    def from_json(cls, data: dict) -> DayStats:
        return cls(total=Block.from_json(data["total"]),
                   channels={name: Block.from_json(block) for name, block in data["channels"].items()},
                   intents=Counter(data["intents"]), languages=Counter(data["languages"]),
                   refusal_reasons=Counter(data["refusal_reasons"]),
                   sections={key: list(value) for key, value in data["sections"].items()},
                   events=Counter(data["events"]), overflow=Counter(data["overflow"]))


def _day_bounds(day: dt.date, zone: ZoneInfo) -> tuple[dt.datetime, dt.datetime]:
    return (dt.datetime.combine(day, dt.time.min, tzinfo=zone),
            dt.datetime.combine(day + dt.timedelta(days=1), dt.time.min, tzinfo=zone))


# One scan of the log for every per-day figure: each grouping set is one breakdown of a day.
# GROUPING(...) is a bit mask of the columns NOT grouped in a row's set.
_LOG_SQL = """
select day, channel, prompt_tokens, intent, language, refusal_reason,
       grouping(channel, prompt_tokens, intent, language, refusal_reason) as grouping_mask,
       count(*), count(*) filter (where empty_retrieval), count(*) filter (where fallback_used),
       count(*) filter (where trivial), count(*) filter (where refused),
       sum(retrieved_tokens), sum(prompt_tokens), count(*) filter (where not trivial),
       sum(embedding_latency_ms) filter (where not trivial), sum(retrieval_latency_ms) filter (where not trivial),
       sum(cost_usd)
from (select (created_at at time zone %s)::date as day, * from {table}
      where created_at >= %s and created_at < %s) as turns
group by grouping sets ((day, channel), (day, prompt_tokens), (day, intent), (day, language), (day, refusal_reason))
"""
_BY_CHANNEL, _BY_PROMPT, _BY_INTENT, _BY_LANGUAGE, _BY_REFUSAL = 0b01111, 0b10111, 0b11011, 0b11101, 0b11110
_EVENT_SQL = """
select (created_at at time zone %s)::date as day, name, payload->>'intent', count(*)
from {table} where created_at >= %s and created_at < %s group by 1, 2, 3
"""


def compute_days(*, first: dt.date, last: dt.date, zone: ZoneInfo,
                 until: dt.datetime | None = None) -> dict[dt.date, DayStats]:
    """Aggregate raw rows of the local days first..last (inclusive; up to `until`) into DayStats."""
    start = _day_bounds(first, zone)[0]
    end = _day_bounds(last, zone)[1]
    if until is not None:
        end = min(end, until)
    stats = {first + dt.timedelta(days=n): DayStats() for n in range((last - first).days + 1)}
    # Aggregating many days at once (the first view, the warm-up task): let the grouping sets sort in
    # memory rather than spill to disk. Today alone is small and skips the extra round trips.
    many_days = (last - first).days >= 2
    with transaction.atomic(durable=False) if many_days else nullcontext(), connection.cursor() as cursor:
        if many_days:
            cursor.execute("select current_setting('work_mem')")
            previous = cursor.fetchone()[0]
            cursor.execute("select set_config('work_mem', %s, true)", [WORK_MEM])
        cursor.execute(_LOG_SQL.format(table=RetrievalLog._meta.db_table), [zone.key, start, end])
        for (day, channel, prompt_tokens, intent, language, reason, mask, turns, empty, fallback, trivial, refused,
             retrieved_sum, prompt_sum, non_trivial, embed_sum, retrieve_sum, cost) in cursor.fetchall():
            target = stats[day]
            if mask == _BY_CHANNEL:
                block = Block(turns=turns, empty=empty, fallback=fallback, trivial=trivial, refused=refused,
                              retrieved_sum=retrieved_sum or 0, prompt_sum=prompt_sum or 0, non_trivial=non_trivial,
                              embed_sum=embed_sum or 0.0, retrieve_sum=retrieve_sum or 0.0, cost=cost or Decimal(0))
                target.channels[channel] = block
                target.total.merge(block)
            elif mask == _BY_PROMPT:
                target.total.hist_v.append(prompt_tokens)
                target.total.hist_c.append(turns)
            elif mask == _BY_INTENT:
                target.intents[intent] = turns
            elif mask == _BY_LANGUAGE:
                target.languages[language] = turns
            elif mask == _BY_REFUSAL and refused:
                target.refusal_reasons[reason] = refused
        cursor.execute(_EVENT_SQL.format(table=Event._meta.db_table), [zone.key, start, end])
        for day, name, intent, n in cursor.fetchall():
            stats[day].events[name] += n
            if name == EventName.KNOWLEDGE_OVERFLOW:
                stats[day].overflow[intent or ""] += n
        if many_days:
            cursor.execute("select set_config('work_mem', %s, true)", [previous])
    sections = (RetrievalLogSection.objects.filter(created_at__gte=start, created_at__lt=end)
                .annotate(day=TruncDate("created_at", tzinfo=zone)))
    for row in sections.values("day", "key").annotate(n=Count("id"), sim_sum=Sum("similarity"),
                                                      sim_n=Count("similarity"), version=Max("version")).order_by():
        stats[row["day"]].sections[row["key"]] = [row["n"], row["sim_sum"] or 0.0, row["sim_n"], row["version"] or 0]
    return stats


def day_stats(*, first: dt.date, last: dt.date, zone: ZoneInfo, now: dt.datetime | None = None
              ) -> dict[dt.date, DayStats]:
    """DayStats for each local day first..last: kept rollups for sealed days (computed and stored once),
    raw rows for days still open."""
    now = now or timezone.now()
    days = [first + dt.timedelta(days=n) for n in range((last - first).days + 1)]
    sealed = [day for day in days if _day_bounds(day, zone)[1] + SEAL_DELAY <= now]
    result: dict[dt.date, DayStats] = {}
    for row in RetrievalDay.objects.filter(zone=zone.key, day__in=sealed).values("day", "data"):
        result[row["day"]] = DayStats.from_json(row["data"])
    missing = [day for day in sealed if day not in result]
    if missing:
        computed = compute_days(first=min(missing), last=max(missing), zone=zone)
        fresh = [RetrievalDay(day=day, zone=zone.key, data=computed[day].to_json()) for day in missing]
        try:
            with transaction.atomic():
                # Two first views at once may both compute; the rows are identical, so either wins.
                RetrievalDay.objects.bulk_create(fresh, ignore_conflicts=True)
        except IntegrityError:
            pass
        result.update({day: computed[day] for day in missing})
    open_days = [day for day in days if day not in result]
    if open_days:
        result.update(compute_days(first=min(open_days), last=max(open_days), zone=zone, until=None))
    return result


def rollups_rebuild(*, since: dt.date | None = None) -> int:
    """Forget kept rollups (all, or from `since` on) so they are recomputed from raw rows; returns how many."""
    rows = RetrievalDay.objects.all()
    if since is not None:
        rows = rows.filter(day__gte=since)
    deleted, _ = rows.delete()
    return deleted


def rollups_warm(*, days: int = WARM_DAYS, now: dt.datetime | None = None) -> int:
    """Keep rollups for the last `days` sealed days of the current schema (run by the hourly beat task, so
    the first dashboard view of the day does not aggregate raw rows); returns how many days were new."""
    from telemetry.selectors import window_for

    window = window_for(days=days, now=now)
    before = RetrievalDay.objects.filter(zone=window.zone.key).count()
    day_stats(first=window.first_day, last=window.last_day, zone=window.zone, now=now)
    return RetrievalDay.objects.filter(zone=window.zone.key).count() - before
