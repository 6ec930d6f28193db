"""Telemetry reads: the retrieval-health figures the dashboard, the API and the digest show."""
from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import asdict, dataclass, field
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.db import connection
from django.db.models import Count
from django.utils import timezone

from telemetry import knowledge_reads, rollups
from telemetry.health import HealthFigure, health_figure, overall_state
from telemetry.models import Event, EventName, GapGroup, GapStatus, RetrievalLogSection

ALLOWED_DAYS = (7, 30)
MAX_DAYS = 90
NEVER_RETRIEVED_DAYS = 30


def tenant_zone() -> ZoneInfo:
    """The current tenant's time zone (days on the dashboard are the business's days)."""
    tenant = getattr(connection, "tenant", None)
    name = getattr(tenant, "timezone", None)
    if name is None and connection.schema_name != "public":
        from ratiba.models import Tenant

        name = Tenant.objects.filter(schema_name=connection.schema_name).values_list("timezone", flat=True).first()
    try:
        return ZoneInfo(name or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


@dataclass(frozen=True)
class Window:
    """A dashboard window: the last `days` local days, today included."""

    days: int
    zone: ZoneInfo
    start: dt.datetime
    end: dt.datetime
    first_day: dt.date
    last_day: dt.date

    def day_list(self) -> list[dt.date]:
        return [self.first_day + dt.timedelta(days=offset) for offset in range(self.days)]


def window_for(*, days: int, now: dt.datetime | None = None, zone: ZoneInfo | None = None) -> Window:
    zone = zone or tenant_zone()
    now = (now or timezone.now()).astimezone(zone)
    last_day = now.date()
    first_day = last_day - dt.timedelta(days=days - 1)
    start = dt.datetime.combine(first_day, dt.time.min, tzinfo=zone)
    end = dt.datetime.combine(last_day + dt.timedelta(days=1), dt.time.min, tzinfo=zone)
    return Window(days=days, zone=zone, start=start, end=end, first_day=first_day, last_day=last_day)


def _pct(part: int, whole: int) -> float | None:
    return round(100.0 * part / whole, 1) if whole else None


def _round(value, digits: int = 1) -> float | None:
    return round(float(value), digits) if value is not None else None


def _div(total, count: int) -> float | None:
    return total / count if count else None


@dataclass(frozen=True)
class Figures:
    """The SOP's seven health numbers plus refusals and cost (rates and averages None without turns)."""

    turns: int
    empty_rate: float | None
    fallback_rate: float | None
    avg_retrieved_tokens: float | None
    trivial_rate: float | None
    p95_prompt_tokens: float | None
    avg_prompt_tokens: float | None
    avg_embedding_ms: float | None
    avg_retrieval_ms: float | None
    refusals: int
    refusal_rate: float | None
    cost_usd: float


def figures_of(block: rollups.Block, *, with_p95: bool = True) -> Figures:
    """Figures of a block of turns, following the SOP's queries (latencies over non-trivial turns only)."""
    return Figures(
        turns=block.turns,
        empty_rate=_pct(block.empty, block.turns),
        fallback_rate=_pct(block.fallback, block.turns),
        avg_retrieved_tokens=_round(_div(block.retrieved_sum, block.turns)),
        trivial_rate=_pct(block.trivial, block.turns),
        p95_prompt_tokens=_round(block.p95_prompt()) if with_p95 else None,
        avg_prompt_tokens=_round(_div(block.prompt_sum, block.turns)),
        avg_embedding_ms=_round(_div(block.embed_sum, block.non_trivial)),
        avg_retrieval_ms=_round(_div(block.retrieve_sum, block.non_trivial)),
        refusals=block.refused,
        refusal_rate=_pct(block.refused, block.turns),
        cost_usd=round(float(block.cost), 6),
    )


HEALTH_METRICS = ("empty_rate", "fallback_rate", "avg_retrieved_tokens", "trivial_rate", "p95_prompt_tokens",
                  "avg_embedding_ms", "avg_retrieval_ms")


def health_figures(figures: Figures) -> list[HealthFigure]:
    return [health_figure(metric=metric, value=getattr(figures, metric)) for metric in HEALTH_METRICS]


@dataclass(frozen=True)
class DayPoint:
    day: dt.date
    figures: Figures


@dataclass(frozen=True)
class SectionStat:
    key: str
    count: int
    avg_similarity: float | None
    latest_version: int


@dataclass(frozen=True)
class CountRow:
    name: str
    count: int
    pct: float | None = None


@dataclass(frozen=True)
class OverflowRow:
    intent: str
    overflows: int
    turns: int
    rate: float | None  # overflows per 100 turns of that intent


@dataclass
class RetrievalHealth:
    """Everything the retrieval-health dashboard and API show for one window."""

    days: int
    first_day: dt.date
    last_day: dt.date
    timezone: str
    totals: Figures
    figures: list[HealthFigure]
    state: str
    daily: list[DayPoint]
    channels: list[tuple[str, Figures]]
    top_sections: list[SectionStat]
    never_retrieved: list[knowledge_reads.ActiveSection]
    overflow_by_intent: list[OverflowRow]
    overflow_total: int
    mode: knowledge_reads.ModeInfo
    intent_mix: list[CountRow]
    language_mix: list[CountRow]
    refusal_reasons: list[CountRow]
    events: list[CountRow]
    open_gap_groups: int = 0
    extra: dict = field(default_factory=dict)

    def chart_data(self) -> dict:
        """Just what the dashboard's charts draw (smaller and cheaper than as_dict)."""
        series = ("turns", "refusals", "empty_rate", "fallback_rate", "trivial_rate", "avg_retrieved_tokens",
                  "p95_prompt_tokens", "avg_embedding_ms", "avg_retrieval_ms", "cost_usd")
        return {
            "daily": [{"day": point.day.isoformat(), **{name: getattr(point.figures, name) for name in series}}
                      for point in self.daily],
            "intent_mix": [{"name": row.name, "count": row.count} for row in self.intent_mix],
            "overflow": {"by_intent": [{"intent": row.intent, "overflows": row.overflows}
                                       for row in self.overflow_by_intent]},
        }

    def as_dict(self) -> dict:
        """JSON-ready, for the API."""
        return {
            "days": self.days,
            "from": self.first_day.isoformat(),
            "to": self.last_day.isoformat(),
            "timezone": self.timezone,
            "state": self.state,
            "totals": asdict(self.totals),
            "figures": [figure.as_dict() for figure in self.figures],
            "daily": [{"day": point.day.isoformat(), **asdict(point.figures)} for point in self.daily],
            "channels": [{"channel": name, **asdict(figures)} for name, figures in self.channels],
            "top_sections": [asdict(row) for row in self.top_sections],
            "never_retrieved": [{"key": row.key, "version": row.version, "title": row.title,
                                 "token_count": row.token_count} for row in self.never_retrieved],
            "overflow": {"total": self.overflow_total,
                         "by_intent": [asdict(row) for row in self.overflow_by_intent],
                         "configured_mode": self.mode.configured, "current_mode": self.mode.current,
                         "graduated_at": self.mode.graduated_at.isoformat() if self.mode.graduated_at else None},
            "intent_mix": [asdict(row) for row in self.intent_mix],
            "language_mix": [asdict(row) for row in self.language_mix],
            "refusal_reasons": [asdict(row) for row in self.refusal_reasons],
            "events": [asdict(row) for row in self.events],
            "open_gap_groups": self.open_gap_groups,
        }


def _mix(counter, total: int) -> list[CountRow]:
    rows = sorted(counter.items(), key=lambda item: (-item[1], item[0] or ""))
    return [CountRow(name=name or "unknown", count=count, pct=_pct(count, total)) for name, count in rows if count]


def retrieval_health(*, days: int = 7, now: dt.datetime | None = None, top: int = 15) -> RetrievalHealth:
    """Retrieval health of the current tenant over its last `days` local days (today included)."""
    now = now or timezone.now()
    window = window_for(days=days, now=now)
    per_day = rollups.day_stats(first=window.first_day, last=window.last_day, zone=window.zone, now=now)
    merged = rollups.DayStats()
    for day in window.day_list():
        merged.merge(per_day[day])
    totals = figures_of(merged.total)
    daily = [DayPoint(day=day, figures=figures_of(per_day[day].total)) for day in window.day_list()]
    channels = [(name, figures_of(block, with_p95=False)) for name, block in
                sorted(merged.channels.items(), key=lambda item: (-item[1].turns, item[0]))]
    intent_mix = _mix(merged.intents, totals.turns)
    top_sections = [SectionStat(key=key, count=count, avg_similarity=_round(_div(sim_sum, sim_n), 3),
                                latest_version=version)
                    for key, (count, sim_sum, sim_n, version) in
                    sorted(merged.sections.items(), key=lambda item: (-item[1][0], item[0]))[:top]]
    intent_turns = {row.name: row.count for row in intent_mix}
    overflow_by_intent = sorted(
        (OverflowRow(intent=intent or "unknown", overflows=n, turns=intent_turns.get(intent or "unknown", 0),
                     rate=_pct(n, intent_turns.get(intent or "unknown", 0)))
         for intent, n in merged.overflow.items() if n), key=lambda row: (-row.overflows, row.intent))
    figures = health_figures(totals)
    return RetrievalHealth(
        days=days, first_day=window.first_day, last_day=window.last_day, timezone=str(window.zone.key),
        totals=totals, figures=figures, state=overall_state(figures), daily=daily, channels=channels,
        top_sections=top_sections, never_retrieved=never_retrieved_sections(now=now),
        overflow_by_intent=overflow_by_intent, overflow_total=sum(merged.overflow.values()),
        mode=knowledge_reads.retrieval_mode(), intent_mix=intent_mix,
        language_mix=_mix(merged.languages, totals.turns),
        refusal_reasons=_mix(merged.refusal_reasons, totals.refusals),
        events=[CountRow(name=name, count=n) for name, n in
                sorted(merged.events.items(), key=lambda item: (-item[1], item[0])) if n],
        open_gap_groups=GapGroup.objects.filter(status=GapStatus.OPEN).count(),
    )


def never_retrieved_sections(*, now: dt.datetime | None = None,
                             days: int = NEVER_RETRIEVED_DAYS) -> list[knowledge_reads.ActiveSection]:
    """Active retrieved sections no turn has retrieved in the last `days` days (candidates for review)."""
    active = knowledge_reads.active_retrieved_sections()
    if not active:
        return []
    since = (now or timezone.now()) - dt.timedelta(days=days)
    keys = [section.key for section in active]
    # One index probe per active key (key, created_at) instead of a distinct over the whole window.
    with connection.cursor() as cursor:
        cursor.execute(
            f"""select k from unnest(%s::text[]) as k
                where exists (select 1 from {RetrievalLogSection._meta.db_table} s
                              where s.key = k and s.created_at >= %s)""",
            [keys, since])
        seen = {row[0] for row in cursor.fetchall()}
    return [section for section in active if section.key not in seen]


def gap_groups(*, status: str = GapStatus.OPEN, language: str | None = None, limit: int = 100) -> list[GapGroup]:
    """Gap groups of one status, most asked first; `language` keeps groups asked in that language."""
    groups = GapGroup.objects.filter(status=status)
    if language:
        groups = groups.filter(languages__has_key=language)
    return list(groups.order_by("-count", "-last_seen", "pk")[:limit])


def gap_language_breakdown(*, status: str = GapStatus.OPEN) -> list[CountRow]:
    """Unanswered questions per language across groups of one status."""
    totals: dict[str, int] = {}
    for languages in GapGroup.objects.filter(status=status).values_list("languages", flat=True):
        for language, count in (languages or {}).items():
            totals[language] = totals.get(language, 0) + int(count)
    whole = sum(totals.values())
    return [CountRow(name=name, count=count, pct=_pct(count, whole))
            for name, count in sorted(totals.items(), key=lambda item: (-item[1], item[0]))]


def gap_status_counts() -> dict[str, int]:
    counts = dict(GapGroup.objects.values_list("status").annotate(n=Count("id")).order_by())
    return {status: counts.get(status, 0) for status in GapStatus.values}


@dataclass(frozen=True)
class MissingTranslation:
    """A snippet customers writing in a language were answered from, with no version in that language yet."""

    key: str
    version: int
    title: str
    turns: int  # answers in that language that quoted it as written

    def as_dict(self) -> dict:
        return asdict(self)


def snippets_missing_language_version(*, language: str = "sw", days: int = 30, now: dt.datetime | None = None,
                                      limit: int = 20) -> list[MissingTranslation]:
    """Snippets quoted as written to customers writing in `language` over the last `days` that still have no
    version in that language, most quoted first: where an owner-approved version would be used next."""
    now = now or timezone.now()
    counts: Counter[str] = Counter()
    events = Event.objects.filter(name=EventName.TRANSLATION_MISSING, payload__language=language,
                                  created_at__gte=now - dt.timedelta(days=days), created_at__lt=now)
    for keys in events.values_list("payload__keys", flat=True):
        counts.update(set(keys or []))
    if not counts:
        return []
    # The owner may have written the version since: only what is still missing is listed.
    missing = knowledge_reads.without_language_version(keys=list(counts), language=language)
    rows = [MissingTranslation(key=m.key, version=m.version, title=m.title, turns=counts[m.key]) for m in missing]
    return sorted(rows, key=lambda row: (-row.turns, row.key))[:limit]
