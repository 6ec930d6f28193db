"""Structured facts for the `services` and `hours` intents: prices, durations and opening hours.

Everything here is read from the tenant's own rows (knowledge.Service, OpeningHours, SpecialDay) and
formatted the way the business writes it (`KES 4,500`, `09:00-20:00`), in the tenant's time zone.
"""
from __future__ import annotations

import calendar
import difflib
import math
import re
from dataclasses import asdict, dataclass, field
from datetime import date, datetime, time, timedelta
from decimal import ROUND_HALF_UP, Decimal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.db import connection
from django.utils import timezone

from knowledge.models import OpeningHours, Service, SpecialDay

SERVICES_KEY = "facts:services"
HOURS_KEY = "facts:hours"

WEEKDAYS_EN = list(calendar.day_name)  # Monday..Sunday
WEEKDAYS_SW = ["Jumatatu", "Jumanne", "Jumatano", "Alhamisi", "Ijumaa", "Jumamosi", "Jumapili"]
MONTHS_EN = [""] + list(calendar.month_name)[1:]
MONTHS_SW = ["", "Januari", "Februari", "Machi", "Aprili", "Mei", "Juni", "Julai", "Agosti", "Septemba",
             "Oktoba", "Novemba", "Desemba"]

# Day words as customers type them, English, Swahili and WhatsApp shorthand, mapped to weekday numbers.
_WEEKDAY_WORDS = {
    0: ["monday", "mon", "jumatatu"],
    1: ["tuesday", "tue", "tues", "jumanne"],
    2: ["wednesday", "wed", "weds", "jumatano"],
    3: ["thursday", "thu", "thur", "thurs", "alhamisi"],
    4: ["friday", "fri", "ijumaa"],
    5: ["saturday", "sat", "sato", "satday", "jumamosi"],
    6: ["sunday", "sun", "sundays", "jumapili"],
}
_WEEKDAY_LOOKUP = {word: day for day, words in _WEEKDAY_WORDS.items() for word in words}
_WEEKDAY_LOOKUP.update({f"{name.lower()}s": day for day, name in enumerate(WEEKDAYS_EN)})

_MONTH_LOOKUP: dict[str, int] = {}
for _number in range(1, 13):
    _MONTH_LOOKUP[MONTHS_EN[_number].lower()] = _number
    _MONTH_LOOKUP[MONTHS_EN[_number][:3].lower()] = _number
    _MONTH_LOOKUP[MONTHS_SW[_number].lower()] = _number
_MONTH_LOOKUP["sept"] = 9

# Fixed-date days most businesses treat specially; matched even when the owner has not entered them,
# so "are you open on Christmas Eve?" resolves to a date whose hours we can then look up.
_FIXED_DAYS = [
    (re.compile(r"\b(christmas|xmas|x-mas|krismasi)\s+eve\b|\bmkesha\s+wa\s+krismasi\b"), 12, 24, "Christmas Eve"),
    (re.compile(r"\bboxing\s+day\b"), 12, 26, "Boxing Day"),
    (re.compile(r"\bnew\s+year'?s?\s+eve\b|\bmkesha\s+wa\s+mwaka\s+mpya\b"), 12, 31, "New Year's Eve"),
    (re.compile(r"\bnew\s+year'?s?(\s+day)?\b|\bmwaka\s+mpya\b"), 1, 1, "New Year's Day"),
    (re.compile(r"\b(christmas|xmas|x-mas|krismasi)(\s+day)?\b|\bsiku\s+(ya|kuu\s+ya)\s+krismasi\b"), 12, 25,
     "Christmas Day"),
]

_RELATIVE_WORDS = {
    "today": 0, "tonight": 0, "leo": 0, "2day": 0, "tdy": 0,
    "tomorrow": 1, "tmrw": 1, "tmr": 1, "tomoro": 1, "tomorow": 1, "kesho": 1, "2moro": 1, "2mrw": 1,
    "keshokutwa": 2,
}
_WEEKEND_WORDS = {"weekend", "weekends", "wikendi", "wiki-end"}

_ISO_DATE = re.compile(r"\b(20\d\d)-(\d{1,2})-(\d{1,2})\b")
_SLASH_DATE = re.compile(r"\b(\d{1,2})[/.](\d{1,2})(?:[/.](\d{2,4}))?\b")
_DAY_MONTH = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?([a-z]{3,9})\b")
_MONTH_DAY = re.compile(r"\b([a-z]{3,9})\s+(\d{1,2})(?:st|nd|rd|th)?\b")
_SW_DATE = re.compile(r"\b(?:tarehe\s+)?(\d{1,2})\s+(?:mwezi\s+wa\s+)?([a-z]{3,9})\b")


# ----------------------------------------------------------------------------- formatting


def format_money(amount: Decimal | int | float | str, currency: str) -> str:
    """`KES 4,500` (cents only when there are any: `KES 4,500.50`)."""
    value = Decimal(str(amount)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    text = f"{value:,.0f}" if value == value.to_integral_value() else f"{value:,.2f}"
    return f"{currency.upper()} {text}"


def format_duration(minutes: int, *, language: str = "en") -> str:
    """`60 minutes` / `dakika 60`."""
    return f"dakika {minutes}" if language == "sw" else f"{minutes} minutes"


def format_ranges(ranges: list[tuple[time, time]]) -> str:
    return ", ".join(f"{opens:%H:%M}-{closes:%H:%M}" for opens, closes in ranges)


def format_date(day: date, *, language: str = "en") -> str:
    """`Saturday 13 June 2026` / `Jumamosi 13 Juni 2026`."""
    if language == "sw":
        return f"{WEEKDAYS_SW[day.weekday()]} {day.day} {MONTHS_SW[day.month]} {day.year}"
    return f"{WEEKDAYS_EN[day.weekday()]} {day.day} {MONTHS_EN[day.month]} {day.year}"


# ----------------------------------------------------------------------------- dataclasses


@dataclass(frozen=True)
class ServiceFact:
    name: str
    description: str
    duration_minutes: int | None  # None: a product (sold, not booked)
    price: str  # decimal as text, exact
    currency: str
    price_text: str  # "KES 4,500"


@dataclass(frozen=True)
class DayHours:
    """The opening ranges of one calendar day, after special days are applied."""

    date: date
    ranges: list[tuple[time, time]]
    special: bool = False
    note: str = ""
    label: str = ""  # what the customer called it: "today", "Christmas Eve", "Saturday"

    @property
    def closed(self) -> bool:
        return not self.ranges

    def sentence(self, *, language: str = "en") -> str:
        """One line a customer can read: `Saturday 13 June 2026: 09:00-19:00`."""
        when = format_date(self.date, language=language)
        if self.closed:
            body = "tumefunga siku nzima" if language == "sw" else "closed all day"
        else:
            body = (f"tuko wazi {format_ranges(self.ranges)}" if language == "sw"
                    else f"open {format_ranges(self.ranges)}")
        note = f" ({self.note})" if self.note else ""
        return f"{when}{note}: {body}."

    def to_dict(self) -> dict:
        return {"date": self.date.isoformat(), "label": self.label, "weekday": WEEKDAYS_EN[self.date.weekday()],
                "closed": self.closed, "ranges": [[f"{o:%H:%M}", f"{c:%H:%M}"] for o, c in self.ranges],
                "special": self.special, "note": self.note}


@dataclass
class Facts:
    """The structured data a services/hours answer may quote, plus ready-made sentences to cite."""

    timezone: str
    today: date
    currency: str
    services: list[ServiceFact] = field(default_factory=list)
    matched_services: list[str] = field(default_factory=list)  # names the customer mentioned
    days: list[DayHours] = field(default_factory=list)  # days the customer asked about (or today)
    weekly: dict[str, str] = field(default_factory=dict)  # "Monday" -> "09:00-20:00" | "closed"

    def to_dict(self) -> dict:
        """The JSON that rides in the prompt's raw_data."""
        return {
            "timezone": self.timezone,
            "today": self.today.isoformat(),
            "currency": self.currency,
            "services": [asdict(service) for service in self.services],
            "matched_services": self.matched_services,
            "days_asked": [day.to_dict() for day in self.days],
            "weekly_hours": self.weekly,
        }

    def sentences(self, *, language: str = "en") -> list[tuple[str, str]]:
        """(citation key, sentence) pairs an extractive answer can quote verbatim."""
        lines: list[tuple[str, str]] = []
        shown = [s for s in self.services if s.name in self.matched_services] or self.services
        for service in shown:
            lines.append((SERVICES_KEY, service_sentence(service, language=language)))
        for day in self.days:
            lines.append((HOURS_KEY, day.sentence(language=language)))
        return lines

    @property
    def is_empty(self) -> bool:
        return not self.services and not self.days and not self.weekly


def service_sentence(service: ServiceFact, *, language: str = "en") -> str:
    """`Box Braids: KES 4,500, 240 minutes.`; a product has no duration: `Feeding bowl: KES 800.`"""
    if service.duration_minutes is None:
        return f"{service.name}: {service.price_text}."
    return f"{service.name}: {service.price_text}, {format_duration(service.duration_minutes, language=language)}."


# ----------------------------------------------------------------------------- reads


def tenant_zone() -> ZoneInfo:
    name = getattr(getattr(connection, "tenant", None), "timezone", None) or "UTC"
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def tenant_today(*, now: datetime | None = None) -> date:
    """Today's date where the business is (not the server's UTC date)."""
    return (now or timezone.now()).astimezone(tenant_zone()).date()


def services_list() -> list[ServiceFact]:
    """Active services in the owner's order, prices formatted in their currency."""
    return [
        ServiceFact(name=s.name, description=s.description, duration_minutes=s.duration_minutes,
                    price=str(s.price), currency=s.currency, price_text=format_money(s.price, s.currency))
        for s in Service.objects.filter(is_active=True).order_by("position", "name")
    ]


def weekly_hours() -> dict[int, list[tuple[time, time]]]:
    schedule: dict[int, list[tuple[time, time]]] = {day: [] for day in range(7)}
    for row in OpeningHours.objects.order_by("weekday", "opens"):
        schedule[row.weekday].append((row.opens, row.closes))
    return schedule


def hours_on(*, day: date, label: str = "", weekly: dict[int, list[tuple[time, time]]] | None = None) -> DayHours:
    """Opening ranges on a date: a special day replaces the weekly ranges (no ranges = closed)."""
    special = SpecialDay.objects.filter(date=day).prefetch_related("ranges").first()
    if special is not None:
        ranges = [(r.opens, r.closes) for r in special.ranges.order_by("opens")]
        return DayHours(date=day, ranges=ranges, special=True, note=special.note, label=label)
    schedule = weekly if weekly is not None else weekly_hours()
    return DayHours(date=day, ranges=list(schedule[day.weekday()]), label=label)


# ----------------------------------------------------------------------------- date words


def _next_on_or_after(today: date, month: int, day: int) -> date | None:
    for year in (today.year, today.year + 1):
        try:
            candidate = date(year, month, day)
        except ValueError:
            continue
        if candidate >= today:
            return candidate
    return None


def _special_day_names(today: date) -> list[tuple[str, date]]:
    """Upcoming special days by their name (the note up to a bracket or comma), e.g. 'Madaraka Day'."""
    names = []
    horizon = today + timedelta(days=366)
    for special in SpecialDay.objects.filter(date__gte=today, date__lte=horizon).order_by("date"):
        name = re.split(r"[(,;:]", special.note or "")[0].strip().lower()
        if 2 <= len(name.split()) <= 4:
            names.append((name, special.date))
    return names


def resolve_dates(text: str, *, today: date) -> list[tuple[date, str]]:
    """Dates a message names ("tomorrow", "Saturday", "Christmas Eve", "17 August", "Jumapili"), in order."""
    lowered = text.lower().replace("’", "'")
    words = re.findall(r"[a-z0-9'-]+", lowered)
    found: list[tuple[date, str]] = []

    def add(day: date | None, label: str) -> None:
        if day is not None and all(day != existing for existing, _ in found):
            found.append((day, label))

    for name, day in _special_day_names(today):
        if re.search(rf"\b{re.escape(name)}\b", lowered):
            add(day, name.title())
    for pattern, month, day_of_month, label in _FIXED_DAYS:
        if pattern.search(lowered):
            add(_next_on_or_after(today, month, day_of_month), label)
            lowered = pattern.sub(" ", lowered)  # "Christmas Eve" must not also count as Christmas Day
    for match in _ISO_DATE.finditer(lowered):
        try:
            add(date(int(match[1]), int(match[2]), int(match[3])), match[0])
        except ValueError:
            pass
    for pattern, day_group, month_group in ((_DAY_MONTH, 1, 2), (_MONTH_DAY, 2, 1), (_SW_DATE, 1, 2)):
        for match in pattern.finditer(lowered):
            month = _MONTH_LOOKUP.get(match[month_group])
            if month:
                add(_next_on_or_after(today, month, int(match[day_group])), match[0])
    for match in _SLASH_DATE.finditer(lowered):
        # Day first, as written in Kenya (17/8 is 17 August).
        day_number, month = int(match[1]), int(match[2])
        if 1 <= month <= 12:
            if match[3]:
                year = int(match[3]) + (2000 if len(match[3]) == 2 else 0)
                try:
                    add(date(year, month, day_number), match[0])
                except ValueError:
                    pass
            else:
                add(_next_on_or_after(today, month, day_number), match[0])
    for word in words:
        if word in _RELATIVE_WORDS:
            add(today + timedelta(days=_RELATIVE_WORDS[word]), word)
        elif word in _WEEKEND_WORDS:
            for weekday in (5, 6):
                add(today + timedelta(days=(weekday - today.weekday()) % 7), word)
        elif word in _WEEKDAY_LOOKUP:
            weekday = _WEEKDAY_LOOKUP[word]
            add(today + timedelta(days=(weekday - today.weekday()) % 7), WEEKDAYS_EN[weekday])
    return found


# ----------------------------------------------------------------------------- service names

_GENERIC_TOKENS = {"and", "the", "a", "of", "&", "with", "for", "spa"}


def _tokens(text: str) -> list[str]:
    return [t for t in re.findall(r"[a-z0-9]+", text.lower()) if t not in _GENERIC_TOKENS]


def _fuzzy_in(token: str, words: list[str]) -> bool:
    for word in words:
        if word == token:
            return True
        if len(token) >= 5 and len(word) >= 4:
            if difflib.SequenceMatcher(None, token, word).ratio() >= 0.8:
                return True
            if len(word) >= 4 and token.startswith(word):  # "mani" for manicure, "pedi" for pedicure
                return True
    return False


def match_services(text: str, services: list[ServiceFact]) -> list[str]:
    """Names of services a message mentions, tolerant of typos ("deep tisue massage")."""
    if not services:
        return []
    words = _tokens(text)
    names = {s.name: _tokens(s.name) for s in services}
    document_frequency: dict[str, int] = {}
    for tokens in names.values():
        for token in set(tokens):
            document_frequency[token] = document_frequency.get(token, 0) + 1
    total = len(services)
    scores: dict[str, float] = {}
    for name, tokens in names.items():
        if not tokens:
            continue
        weights = {t: math.log(1 + total / document_frequency[t]) for t in tokens}
        matched = [t for t in tokens if _fuzzy_in(t, words)]
        # A name is only "mentioned" if one of its distinctive words is (not just "massage").
        if not any(document_frequency[t] * 3 <= total or len(tokens) == 1 for t in matched):
            continue
        scores[name] = sum(weights[t] for t in matched) / sum(weights.values())
    if not scores:
        return []
    best = max(scores.values())
    if best < 0.5:
        return []
    return [name for name, score in sorted(scores.items(), key=lambda item: -item[1]) if score >= best * 0.6]


# ----------------------------------------------------------------------------- the selector

# Questions about the whole menu or price list (not about one service), English and Swahili.
_LISTING = re.compile(
    r"\b(what|which)\s+(treatments|services|massages|facials|packages)\b|\b(price|prices|pricing)\s*(list)?\b"
    r"|\bmenu\b|\bwhat do you (offer|do|have)\b|\bhow much (are|is) (your|the) (treatments|services|prices)\b"
    r"|\bhuduma (gani|zenu|zote)\b|\borodha ya (huduma|bei)\b|\bbei zenu\b|\bmnatoa huduma\b", re.I)


def asks_for_listing(message: str) -> bool:
    """Whether a message asks about the services in general (so the whole list is an answer)."""
    return bool(_LISTING.search(message or ""))


def facts_for(*, intent: str, message: str, now: datetime | None = None) -> Facts:
    """The facts a `services` or `hours` turn may quote: matched services, asked-about days, the week."""
    tenant = getattr(connection, "tenant", None)
    zone = tenant_zone()
    today = tenant_today(now=now)
    facts = Facts(timezone=str(zone), today=today, currency=getattr(tenant, "currency", "KES") or "KES")
    if intent == "services":
        services = services_list()
        facts.matched_services = match_services(message, services)
        # The list only answers a question about a named service or about the menu as a whole;
        # "do you do home visits?" is not answered by a price list.
        if facts.matched_services or asks_for_listing(message):
            facts.services = services
    if intent == "hours":
        schedule = weekly_hours()
        asked = resolve_dates(message, today=today) or [(today, "today")]
        facts.days = [hours_on(day=day, label=label, weekly=schedule) for day, label in asked[:7]]
        facts.weekly = {WEEKDAYS_EN[day]: format_ranges(ranges) if ranges else "closed"
                        for day, ranges in schedule.items()}
    return facts
