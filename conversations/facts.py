"""Structured facts for the `services` and `hours` intents: prices, durations and opening hours.

Everything here is read from the tenant's own rows (knowledge.Service, OpeningHours, SpecialDay) and
formatted the way the business writes it (`KES 4,500`, `09:00-20:00`), in the tenant's time zone.
"""
from __future__ import annotations

import calendar
import difflib
import math
import re
from dataclasses import asdict, dataclass, field, replace
from datetime import date, datetime, time, timedelta
from decimal import ROUND_HALF_UP, Decimal
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.db import connection
from django.utils import timezone

from knowledge.models import OpeningHours, Service, SpecialDay
from knowledge.retrieval.answer_types import gives_type
from knowledge.retrieval.language import stem

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
# Swahili months as customers often spell them ("Disemba", "Febuari").
_MONTH_LOOKUP.update({"disemba": 12, "febuari": 2})

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
_WORKWEEK_WORDS = {"weekday", "weekdays", "week-day", "week-days"}  # Monday to Friday

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
    """`90 minutes`, `4 hours`, `2 hours 30 minutes`, `1 day` (`dakika 90`, `masaa 4`, `masaa 2 na dakika 30`,
    `siku 1`): whole hours from two hours up, whole days from a day up, as a customer says them. Swahili hours
    are "masaa": "saa 4" is also ten o'clock."""
    sw = language == "sw"
    if minutes >= 1440 and minutes % 1440 == 0:
        days = minutes // 1440
        return f"siku {days}" if sw else f"{days} day{'s' if days > 1 else ''}"
    if minutes < 120 or minutes % 30:
        return f"dakika {minutes}" if sw else f"{minutes} minutes"
    hours, rest = divmod(minutes, 60)
    if sw:
        return f"masaa {hours}" + (f" na dakika {rest}" if rest else "")
    return f"{hours} hours" + (f" {rest} minutes" if rest else "")


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
    past: bool = False  # a named special day whose next date the owner has not entered: the last one shown

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
        last = ""
        if self.past:
            last = ", ya mwisho iliyoandikwa" if language == "sw" else ", the last one on record"
        if self.closed and language != "sw" and re.search(r"\bclosed\b", self.note, re.I):
            # "Closed all day for annual staff training" says it all: not "(...closed...): closed all day".
            return f"{when}{last}: {self.note.rstrip('.')}."
        # The owner's note in brackets, unless it has its own ("Jamhuri Day (public holiday hours)").
        note = (f", {self.note}" if "(" in self.note else f" ({self.note})") if self.note else ""
        return f"{when}{note}{last}: {body}."

    def to_dict(self) -> dict:
        return {"date": self.date.isoformat(), "label": self.label, "weekday": WEEKDAYS_EN[self.date.weekday()],
                "closed": self.closed, "ranges": [[f"{o:%H:%M}", f"{c:%H:%M}"] for o, c in self.ranges],
                "special": self.special, "note": self.note, "past": self.past}


@dataclass
class Facts:
    """The structured data a services/hours answer may quote, plus ready-made sentences to cite."""

    timezone: str
    today: date
    currency: str
    services: list[ServiceFact] = field(default_factory=list)
    matched_services: list[str] = field(default_factory=list)  # names the customer mentioned
    described: list[str] = field(default_factory=list)  # matched rows whose description the answer quotes
    days: list[DayHours] = field(default_factory=list)  # days the customer asked about (or today)
    weekly: dict[str, str] = field(default_factory=dict)  # "Monday" -> "09:00-20:00" | "closed"
    named_days: bool = False  # the customer named the days (else `days` is today)
    now: time | None = None  # the business's local time, when the customer asks whether it is open now
    answers_alone: bool = False  # these rows are the whole answer (no knowledge beside them)
    answers_part: bool = False  # they answer one part of a question that asks more (knowledge beside them)
    quoted: bool = True  # whether an answer quotes them (facts_beside_knowledge)

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
            **({"now": f"{self.now:%H:%M}"} if self.now else {}),
        }

    def sentences(self, *, language: str = "en") -> list[tuple[str, str]]:
        """(citation key, sentence) pairs an extractive answer can quote verbatim."""
        lines: list[tuple[str, str]] = []
        if not self.quoted:
            return lines
        shown = [s for s in self.services if s.name in self.matched_services] or self.services
        for service in shown:
            line = service_sentence(service, language=language)
            if service.name in self.described:
                line = f"{line} {service.description.strip()}"
            lines.append((SERVICES_KEY, line))
        if self.now and self.days and self.days[0].date == self.today:
            lines.append((HOURS_KEY, now_sentence(self.days[0], self.now, language=language)))
        for day in self.days:
            lines.append((HOURS_KEY, day.sentence(language=language)))
        if self.days and not self.named_days:
            # "When are you open?": today, then the week (days with the same hours run together).
            lines += [(HOURS_KEY, line) for line in weekly_sentences(self.weekly, language=language)]
        return lines

    @property
    def is_empty(self) -> bool:
        """Nothing an answer may quote."""
        return not self.quoted or (not self.services and not self.days and not self.weekly)


def now_sentence(day: DayHours, now: time, *, language: str = "en") -> str:
    """Whether the business is open at `now` on `day` (today), and until when or from when."""
    clock = f"{now:%H:%M}"
    current = next(((opens, closes) for opens, closes in day.ranges if opens <= now < closes), None)
    later = next((opens for opens, _closes in day.ranges if opens > now), None)
    if language == "sw":
        if current:
            return f"Sasa hivi ({clock}) tuko wazi hadi {current[1]:%H:%M}."
        if later:
            return f"Sasa hivi ({clock}) tumefunga; tunafungua tena saa {later:%H:%M} leo."
        return f"Sasa hivi ({clock}) tumefunga."
    if current:
        return f"Right now ({clock}) we are open, until {current[1]:%H:%M}."
    if later:
        return f"Right now ({clock}) we are closed; we open at {later:%H:%M} today."
    return f"Right now ({clock}) we are closed."


# "Are you open now?", "still open?", "Mko wazi sasa hivi?": the answer is about this moment, not just today.
_NOW = re.compile(r"\b(now|right now|currently|at the moment|at this moment|still open|still working|sasa|saa hii"
                  r"|bado mko)\b", re.I)


def asks_now(message: str) -> bool:
    """Whether an hours question asks about this moment."""
    return bool(_NOW.search(message or ""))


def weekly_sentences(weekly: dict[str, str], *, language: str = "en") -> list[str]:
    """`Monday to Friday: 09:00-20:00.` lines, consecutive days with the same hours run together."""
    names = WEEKDAYS_SW if language == "sw" else WEEKDAYS_EN
    runs: list[tuple[int, int, str]] = []
    for index, day in enumerate(WEEKDAYS_EN):
        value = weekly.get(day)
        if value is None:
            continue
        if runs and runs[-1][2] == value and runs[-1][1] == index - 1:
            runs[-1] = (runs[-1][0], index, value)
        else:
            runs.append((index, index, value))
    joiner = " hadi " if language == "sw" else " to "
    closed = "tumefunga" if language == "sw" else "closed"
    lines = []
    for first, last, value in runs:
        when = names[first] if first == last else f"{names[first]}{joiner}{names[last]}"
        lines.append(f"{when}: {closed if value == 'closed' else value}.")
    return lines


def service_sentence(service: ServiceFact, *, language: str = "en") -> str:
    """`Box Braids: KES 4,500, 4 hours.`; a product has no duration: `Feeding bowl: KES 800.`"""
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
    """Special days by their name (the note up to a bracket or comma), e.g. 'Madaraka Day': the next one, or,
    when the owner has not entered the next one yet, the last one of the past year."""
    names: dict[str, date] = {}
    span = timedelta(days=366)
    # Upcoming days first (soonest first), then past ones (latest first): the first date kept for a name wins.
    upcoming = SpecialDay.objects.filter(date__gte=today, date__lte=today + span).order_by("date")
    past = SpecialDay.objects.filter(date__lt=today, date__gte=today - span).order_by("-date")
    for special in [*upcoming, *past]:
        name = re.split(r"[(,;:]", special.note or "")[0].strip().lower()
        if 2 <= len(name.split()) <= 4:
            names.setdefault(name, special.date)
    return list(names.items())


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
        elif word in _WORKWEEK_WORDS:
            for day in (today + timedelta(days=offset) for offset in range(7)):
                if day.weekday() < 5:
                    add(day, WEEKDAYS_EN[day.weekday()])
        elif word in _WEEKDAY_LOOKUP:
            weekday = _WEEKDAY_LOOKUP[word]
            add(today + timedelta(days=(weekday - today.weekday()) % 7), WEEKDAYS_EN[weekday])
    return found


# ----------------------------------------------------------------------------- service names

_GENERIC_TOKENS = frozenset({"and", "the", "a", "of", "with", "for"})

# Words that ask for a fact rather than name a service: "how much", "bei", "how long", "muda gani".
_PRICE_QUESTION = re.compile(
    r"\bhow\s+much\b|\bprices?\b|\bpriced\b|\bpricing\b|\bcosts?\b|\bcosting\b|\bcharges?\b|\bfees?\b"
    r"|\brates?\b|\bbei\b|\bgharama\b|\bkiasi\s+gani\b|\bpesa\s+ngapi\b|\bshilingi\s+ngapi\b"
    # the cheapest thing (not the cheapest way or time); a comparison of two is _COMPARED_PRICES
    r"|\bcheapest\b(?!\s+(?:way|option|time|day)s?\b)|\b(?:most|least)\s+expensive\b|\bfares?\b|\bkodi\s+ya\b"
    # "the rent", "rent for a bedsitter" is a letting's price (renting one, "rent a car", "rent out tents", is not)
    r"|(?<!\bto )(?<!\byou )(?<!\bwe )(?<!\bi )(?<!\bu )(?<!\bi'd )(?<!\bplease )(?<!\bmy )(?<!\bpay )\brent\b"
    r"(?!\s+(out|an|the|my|our|your|it|them|one|some|this|that|me|us|due)\b)(?!\s+a\s+(?!month|week|night|day)\w)",
    re.I)
# Which of two things costs less asks both prices ("Which is cheaper, the 2 day or the 3 day?", "Is the shared
# boat cheaper than the private one?"); a cheaper deal, a cheaper way or time ("cheaper if I come late?", "cheaper
# to pay for the term?") and why one costs more ask about a policy or a reason, not a row's price.
_COMPARED_PRICES = re.compile(r"\b(?:cheaper|dearer|(?:more|less)\s+expensive)\b", re.I)
_COMPARISON_OF_THINGS = re.compile(r"\bwhich\b|\bthan\b", re.I)
_ASKS_WHY = re.compile(r"\bwhy\b", re.I)
_DURATION_QUESTION = re.compile(
    r"\bhow\s+long\b|\bduration\b|\bhow\s+many\s+(minutes|mins|hours|hrs)\b|\bmuda\s+(gani|wa|ngapi)\b"
    r"|\bdakika\s+ngapi\b|\bsaa\s+ngapi\s+(ku|kwa)", re.I)
# Not how long a service takes: how often ("kila baada ya muda gani?"), how long something lasts or may be
# kept ("how long can I keep them in?", "how long do they last?") or how long until something else.
_NOT_A_SERVICE_LENGTH = re.compile(
    r"\bkila\s+baada\s+ya\s+muda\s+(?:gani|ngapi)\b"
    r"|\bhow\s+long\s+(?:before|after|until|till)\b"
    r"|\bhow\s+long\s+(?:can|could|should|must|may|do|does|did|will|would)\s+(?:i|we|you|they|it|he|she|my|our|your"
    r"|the|this|these|those)\b(?:\s+\w+)?\s+(?:keep|leave|wear|last|lasts|store|stay|hold|remain)\b"
    r"|\bhow\s+long\b[^?.]*\b(?:warranty|warranties|guarantee|guaranteed|dhamana)\b", re.I)
_FACT_WORDS = frozenset("""
how much many long price prices priced pricing cost costs costing charge charges charged fee fees rate rates pay
paying amount total bei gharama kiasi pesa ngapi shilingi duration take takes taking minute hour time long muda
dakika saa kes ksh shs shillings what which is are do does you your the a an of for to it its me my we our i
difference between compare compared comparison versus vs cheaper dearer tofauti kati linganisha
""".split())
_STOPWORDS = frozenset("""
a an the and or but if then so to of in on at by for with from about as is are was were be been being do does did
have has had i me my we our us you your he she it its they them their this that these those there here what which
who when where why how can could would should will shall may might must not no yes any some all each more most
such only own same than too very just also please hi hello hey thanks thank ok okay get got want need like know
tell let one one's i'm i'd you're new bring come
je ni na ya wa kwa za la cha vya kuna nini gani wapi lini vipi kama au lakini pia tu sana hii hiyo huu hapo hapa
mimi wewe sisi yangu yako yetu tafadhali naomba nataka ningependa naweza unaweza mnaweza habari asante mna
""".split())
# Words asking whether the business has a thing at all ("do you sell honey?", "mnauza flash?" read as "sell").
_ASKING_VERBS = frozenset("sell sells selling stock stocks offer offers offering provide provides available".split())
# Units as customers and owners write them ("kilo", "kgs", "litres", "5kva"), folded to one spelling.
_UNITS = {"kilo": "kg", "kilos": "kg", "kgs": "kg", "kilogram": "kg", "kilograms": "kg", "liter": "litre",
          "liters": "litre", "litres": "litre", "ltr": "litre", "ltrs": "litre", "l": "litre", "hrs": "hour",
          "hr": "hour", "hours": "hour", "mins": "minute", "min": "minute", "minutes": "minute", "pcs": "piece",
          "pieces": "piece", "pc": "piece"}
# ...and how a thing is sold ("per person", "per guest", "per head"): "the standard buffet per person" names the
# buffet sold per guest, not the day package sold per person.
_UNIT_WORDS = frozenset(_UNITS.values()) | {"per", "kva", "kw", "w", "v", "ah", "mah", "g", "ml", "cm", "inch",
                                             "person", "guest", "head", "pax"}
# Sizes as customers say them and as owners name rows: "the big one" is the "Large" row.
_SIZES = {"big": "large", "bigger": "larger", "biggest": "largest", "little": "small"}
_RANGE = re.compile(r"(\d+)\s*(?:-|to|hadi)\s*(\d+)")
_UP_TO = re.compile(r"\b(?:up\s+to|under|below|less\s+than|max|upto|chini\s+ya)\s*(\d+)")
_OVER = re.compile(r"\b(?:over|above|more\s+than|from|zaidi\s+ya)\s*(\d+)")
# A question's strict bound ("beyond 200", "more than 500 guests", "under 5 kg") asks for the figure just past it,
# so it falls in the range that starts after the bound, not the one that ends at it.
_ABOVE_BOUND = re.compile(r"\b(?:beyond|over|above|past|more\s+than|greater\s+than|bigger\s+than|zaidi\s+ya)\s+"
                          r"(\d+)(?![.,]?\d)", re.I)
_BELOW_BOUND = re.compile(r"\b(?:under|below|less\s+than|smaller\s+than|chini\s+ya)\s+(\d+)(?![.,]?\d)", re.I)


def past_bounds(text: str) -> str:
    """A question with each strict bound written as the figure past it ("and beyond 200?" -> "and 201?")."""
    text = _ABOVE_BOUND.sub(lambda m: str(int(m.group(1)) + 1), text)
    return _BELOW_BOUND.sub(lambda m: str(max(int(m.group(1)) - 1, 0)), text)


_LISTING_WORDS = frozenset("""
treatments treatment services service massages facials packages package menu list offer offers do have sell
products product items things range huduma orodha zenu zote mnatoa gani everything
""".split())


_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")  # "10,000" -> "10000"


def _normalize(text: str) -> str:
    """Lower case, thousands separators dropped ("10,000" -> "10000"), numbers split from units ("5kva"), decimals
    and sizes kept whole."""
    text = re.sub(r"[’‘`´ʼ]", "'", (text or "").lower())
    # "what's", "Men's", "don't": the ending is no word (a letter naming a row, "Zone S", would be read as one).
    text = re.sub(r"(?<=[a-z])'(?:s|t|re|ll|ve|d|m)\b", "", text)
    text = _THOUSANDS.sub("", text)
    # A one-letter code stays whole ("A3" paper, "C1" licence, "B22" bulb): its number is no quantity.
    text = re.sub(r"(?<=\d)(?=[a-z])|(?<=[a-z])(?=\d)(?<!\b[a-z])", " ", text)
    # A decimal is one number ("3.5x6" is not a 5): written "3d5", so neither of its digits names a row. A size is
    # one word ("5x6", "5 by 6"), so a 5x6 mattress is not a 6x9 carpet.
    text = re.sub(r"(?<=\d)\.(?=\d)", "d", text)
    return _SIZE.sub(r"\1x\2", text)


_SIZE = re.compile(r"\b(\d+(?:[d.]\d+)?) ?(?:x|by) ?(\d+(?:[d.]\d+)?)\b", re.I)


def singular(word: str) -> str:
    """"batteries" -> "battery", "braids" -> "braid", "boxes" -> "box"; units folded ("kilos" -> "kg")."""
    if word in _UNITS:
        return _UNITS[word]
    if word in _SIZES:
        return _SIZES[word]
    if word.isdigit() or len(word) <= 3:
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "sses", "xes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _plain_words(text: str) -> list[str]:
    """A text's words as written, lower-cased and without accents or punctuation."""
    return re.findall(r"[a-z0-9]+", _normalize(text))


def _words(text: str, *, keep: frozenset[str] | None = None) -> list[str]:
    """Singular word forms; with `keep`, function words are dropped unless kept (used in a service name)."""
    return [singular(word) for word in _plain_words(text) if keep is None or word not in _STOPWORDS or word in keep]


def content_words(text: str) -> set[str]:
    """A text's words as the facts compare them: singular, sizes and decimals whole ("5 by 6" -> "5x6"), no
    function words."""
    return set(_words(text, keep=frozenset()))


_HYPHENATED = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)+")


def _hyphen_joined(name: str) -> list[str]:
    """A name's hyphenated words written as one ("X-ray" -> "xray", "Check-up" -> "checkup"), as customers do."""
    return [word.replace("-", "") for word in _HYPHENATED.findall(_normalize(name))]


# The particle of a hyphenated name ("Move-Out", "Walk-in", "Check-up", "Call-out"): it names the row only beside
# the word it is joined to ("call-out fee", "move out clean"); alone it names nothing ("how long do we have to stay
# out of the house?" is no move-out clean).
_PARTICLES = frozenset("out in up off on down over back away".split())


@lru_cache(maxsize=1024)
def _joined_particles(name: str) -> dict[str, str]:
    """A name's hyphen-joined particles and the word each is joined to ("Move-Out Cleaning" -> {"out": "move"})."""
    joined = {}
    for compound in _HYPHENATED.findall(_normalize(name)):
        words = compound.split("-")
        joined.update({word: words[i - 1] for i, word in enumerate(words) if i and word in _PARTICLES})
    return joined


def _same_word(question_word: str, word: str) -> bool:
    """Equal, a prefix of 4+ letters ("mani" ~ manicure, "leaking" ~ leak), a three-letter verb's -ing or -ed
    form ("hem" ~ hemming), one stem of 4+ letters ("install" ~ installation, "consult" ~ consultation) or a
    close typo ("tisue") that keeps the first letter (one letter off a five-letter word is as often another
    word: "night" is not a typo of "light")."""
    if question_word == word or _NUMBER_WORDS.get(question_word) == word:
        return True  # ..."two" ~ the "2" of "2-Bedroom Move"
    if question_word.isdigit() or word.isdigit():
        return False
    shorter, longer = sorted((question_word, word), key=len)
    if len(shorter) >= 4 and longer.startswith(shorter) and len(longer) - len(shorter) <= 4:
        return True
    if len(shorter) == 3 and longer in _inflections(shorter):
        return True  # "hem" ~ "hemming", "sew" ~ "sewing", "dye" ~ "dyed"
    if len(shorter) >= 4 and len(common := stem(word)) >= 4 and stem(question_word) == common:
        return True
    if len(shorter) >= 5 and len(base := _verb_base(word)) >= 4 and _verb_base(question_word) == base:
        return True  # "laminate" ~ "lamination", "vaccinate" ~ "vaccination"
    return (len(shorter) >= 4 and len(longer) >= 5 and question_word[0] == word[0]
            and difflib.SequenceMatcher(None, question_word, word).ratio() >= 0.8)


_NUMBER_WORDS = {word: str(value) for value, word in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split())}


def _numbered(tokens: list[str]) -> set[tuple[str, str]]:
    """A name's numbers with the word they count ("2-Bedroom Move" -> ("2", "bedroom"), "3 Piece" -> ("3", "piece"))."""
    return {(number, word) for number, word in zip(tokens, tokens[1:]) if number.isdigit() and not word.isdigit()}


def _names_numbered(groups: list[tuple[str, ...]], numbered: set[tuple[str, str]]) -> bool:
    """Whether the question writes one of a name's numbered words as the name does ("a 2 bedroom", "two bedroom").

    `groups`: the question's words in order, repeats kept ("2 bedroom ... and a 3 bedroom?" names both rows).
    """
    for group, following in zip(groups, groups[1:]):
        numbers = {_NUMBER_WORDS.get(word, word) for word in group}
        if any(number in numbers and any(_same_word(q, word) for q in following) for number, word in numbered):
            return True
    return False


def _inflections(word: str) -> tuple[str, ...]:
    """A short verb's -ing and -ed forms, with the doubled last letter ("hem" -> "hemming", "hemmed")."""
    return tuple(f"{word}{double}{ending}" for double in ("", word[-1]) for ending in ("ing", "ed"))


def _verb_base(word: str) -> str:
    """A word without its -ation / -ate ending ("lamination", "laminate" -> "lamin")."""
    for ending in ("ation", "ate"):
        if word.endswith(ending):
            return word[:-len(ending)]
    return word


def _ranges(text: str) -> list[tuple[int, int]]:
    """Numeric ranges an owner wrote in a name: "1-3 kW", "5,001 to 10,000 Litres", "over 20 kg"."""
    normalized = _normalize(text)
    found = [(int(a), int(b)) for a, b in _RANGE.findall(normalized)]
    found += [(0, int(b)) for b in _UP_TO.findall(normalized)]
    found += [(int(a), 10 ** 12) for a in _OVER.findall(normalized)]
    return found


def question_words(text: str, *, keep: frozenset[str] = frozenset()) -> list[str]:
    """The words of a question that can name something: no function words, no "how much" words.

    A Swahili question is read through the retrieval glossary ("bei ya betri" -> "battery"), keeping
    loanwords and the words the glossary does not know.
    """
    words: list[str] = []
    for group in question_groups(text, keep=keep):
        words += [word for word in group if word not in words]
    return words


def question_groups(text: str, *, keep: frozenset[str] = frozenset(),
                    language: str | None = None) -> list[tuple[str, ...]]:
    """The question's naming words, each with its other readings: a Swahili word is one group of its
    glossary translations ("kufua" -> wash / laundry / clean), so one word counts once however many
    English words it stands for. `language`: the text's, when the caller has detected it."""
    from conversations.i18n import detect_language
    from knowledge.retrieval.language import expand_swahili, is_english_stopword

    # "and the CorelDRAW one?", "a cheaper one": "one" stands for the thing named, even where a row holds the
    # word ("Private One-to-One Lesson"); "the one-hour massage" keeps it.
    text = _PRONOUN_ONE.sub(r"\1", text or "")
    # "how much extra is that?" asks an amount: "extra" names no "Extra Waiter" row there.
    text = _AMOUNT_MORE.sub(" how much ", text)
    text = past_bounds(_THOUSANDS.sub("", text))
    if (language or detect_language(text)) == "sw":
        expansion = expand_swahili(_SIZE.sub(r"\1x\2", text))  # "godoro la 5 by 6": the size, not two numbers
        single = [*expansion.kept, *expansion.unknown]
        # A capitalised word inside the question that a row's name holds is a name, even where Swahili has it as
        # a small word: "safari ya Lake Nakuru" ("lake" is also "his").
        single += [word.lower() for index, word in enumerate(re.findall(r"[^\W_]+", text))
                   if index and word[:1].isupper() and word.lower() in keep and word.lower() not in single]
        readings = [[word] for word in _words(" ".join(single), keep=keep)]
        # A glossary reading's particles ("chukua" -> "pick up") are not the customer's words: "up" must not
        # name "Generator Installation (up to 10 kVA)".
        readings += [[word for word in _words(english, keep=keep) if not is_english_stopword(word)]
                     for english in expansion.english]
    else:
        readings = [[word] for word in _words(text, keep=keep)]
    groups: list[tuple[str, ...]] = []
    seen: set[str] = set()
    for reading in readings:
        group = []
        for word in reading:
            if (word in _STOPWORDS and word not in keep) or word in _FACT_WORDS or word in _GENERIC_TOKENS:
                continue
            # A letter naming a row ("Zone B", "Class C") is a word of the question ("a" and "I" are fact words).
            if (len(word) > 1 or word.isdigit() or word in keep) and word not in group:
                group.append(word)
        group = [word for word in group if word not in seen]
        if group:
            seen.update(group)
            groups.append(tuple(group))
    return groups


_AMOUNT_MORE = re.compile(r"\bhow\s+much\s+(?:extra|more)\b", re.I)
_PRONOUN_ONE = re.compile(r"(\b(?:the|this|that|a|an|another|other|which)\s+(?:[\w&]+\s+){1,3})ones?\b(?!-)", re.I)


@dataclass(frozen=True)
class _Candidate:
    name: str
    by_name: frozenset[int]  # question words (their groups) the service's name accounts for
    by_description: frozenset[int]  # ... that only its description accounts for
    exact: int  # question words the name uses exactly ("ironing" for "Ironing Only", not "Iron")
    name_words: frozenset[str]
    headed: bool = False  # the question says the thing the name is ("tank" for "Plastic Water Tank 5,000 L")

    @property
    def accounts(self) -> frozenset[int]:
        """The question words the name or the description accounts for."""
        return self.by_name | self.by_description


def _candidates(groups: list[tuple[str, ...]], services: list[ServiceFact], *,
                said: list[tuple[str, ...]] | None = None) -> list[_Candidate]:
    written = {s.name: _words(s.name) for s in services}
    names = {name: [w for w in words if w not in _GENERIC_TOKENS] + _hyphen_joined(name)
             for name, words in written.items()}
    frequency: dict[str, int] = {}
    for tokens in names.values():
        for token in set(tokens):
            frequency[token] = frequency.get(token, 0) + 1
    total = len(services)
    found = []
    for service in services:
        tokens = names[service.name]
        ranges = _ranges(service.name)
        description = _words(service.description, keep=frozenset())
        by_name: set[int] = set()
        distinctive = False
        exact = 0
        particles = _joined_particles(service.name)
        heads_said = {head for head in particles.values() if any(_same_word(w, head) for g in groups for w in g)}
        for index, group in enumerate(groups):
            hits = [t for t in tokens if any(_same_word(word, t) for word in group)
                    and (t not in particles or particles[t] in heads_said)]
            if not hits and any(word.isdigit() and any(low <= int(word) <= high for low, high in ranges)
                                for word in group):
                hits = ["#range"]
            if hits:
                by_name.add(index)
                exact += any(word in tokens for word in group)
                # A word most names share ("massage", "course") names none of them on its own.
                # Nor does a unit or a bare number ("per kg", "500") unless it falls in a range the owner wrote,
                # or a function word a name happens to hold ("Can I ..." is not "Air Freshener (Gel Can)").
                distinctive |= any(h == "#range" or (h not in _UNIT_WORDS and not h.isdigit() and h not in _STOPWORDS
                                                     and (frequency[h] * 3 <= total or len(tokens) == 1
                                                          or total <= 2))
                                   for h in hits)
        # A number with the word it counts names the row even when every row has that word ("2-Bedroom Move"
        # among five bedroom rows); a bare number does not ("500" may be grams).
        if not distinctive and not _names_numbered(said or groups, _numbered(written[service.name])):
            continue
        by_description = {index for index, group in enumerate(groups) if index not in by_name
                          and any(_same_word(word, d) for word in group for d in description)}
        head = _head_word(service.name)
        found.append(_Candidate(name=service.name, by_name=frozenset(by_name),
                                by_description=frozenset(by_description), exact=exact,
                                name_words=frozenset(tokens),
                                headed=bool(head) and any(_same_word(w, head) for g in groups for w in g)))
    return found


_GRADE_WORDS = frozenset("only plus pro max premium deluxe lite".split())


@lru_cache(maxsize=1024)
def _head_word(name: str) -> str:
    """The last naming word of a row's name before its qualifiers: what the row is ("Steel Tank Tower (3 m, for up
    to 5,000 L)" is a tower, "Plastic Water Tank 5,000 L" a tank). Cached: the rows' names recur every turn."""
    words = _name_words_in_order(re.split(r"[(\[,:]| - | for | with ", name, maxsplit=1)[0])
    # A grade or a restriction after the noun is no head: "Office Plan Plus" is a plan, "Gym Only" a gym.
    while len(words) > 1 and words[-1] in _GRADE_WORDS:
        words.pop()
    return words[-1] if words else ""


def match_services(text: str, services: list[ServiceFact], *, common: frozenset[str] = frozenset()) -> list[str]:
    """Services and products a message mentions, in the owner's order: tolerant of typos, partial names,
    plurals, units and Swahili ("bei ya box braids?").

    A service is mentioned when one of its distinctive name words is used; then the ones whose name (and
    description) account for the most of the question win: "iPhone 12 screen" picks the 12-to-15 row over
    the X-to-11 one, "wash and fold" plain over express.
    """
    return _best_services(text, services, whole=False, common=common)


def named_services(text: str, services: list[ServiceFact], *, common: frozenset[str] = frozenset()) -> list[str]:
    """The services a question is about: mentioned ones that also account for most of its words, so "how
    much is a gel manicure?" does not get "Spa Manicure" when gel manicures are not on the list."""
    return _best_services(text, services, whole=True, common=common)


def _best_services(text: str, services: list[ServiceFact], *, whole: bool, common: frozenset[str]) -> list[str]:
    from conversations.i18n import detect_language

    if not services:
        return []
    name_words = frozenset(w for s in services for w in _plain_words(s.name))
    language = detect_language(text)
    groups = question_groups(text, keep=name_words, language=language)
    if not groups:
        return []
    # The words in order with their repeats, where a number meets the word it counts (groups keep each once).
    said = [(word,) for word in _words(text)] if language != "sw" else groups
    candidates = _candidates(groups, services, said=said)

    # A word of the business's own, one most of its knowledge uses and a row's name holds ("course" at a college),
    # counts only between rows the other words tie: "the typing course" is Touch Typing, not "Computer Packages
    # (Full Course)" whose description says typing. A common word no name holds ("after") is left as it was.
    named_by_rows = set().union(*(c.by_name for c in candidates))
    business = {index for index in named_by_rows if all(word in common for word in groups[index])}
    if len(business) == len(groups):
        business = set()
    # Only a question that must be about rows, and that the tied names say all of, ends a tie by what the rows are:
    # a mention ("Can you fix glasses?") keeps every row it may mean, and "vegeterian menu" is not the children's.
    said_all = len(groups) if whole else 0
    winners = [c for c in candidates if not any(_beats(other, c, business, said_all=said_all) for other in candidates)]
    # A number no row accounts for is how many the customer wants ("How much for 200 chairs?"), not a name.
    accounted = set().union(*(c.accounts for c in winners))
    quantities = sum(1 for index, group in enumerate(groups)
                     if index not in accounted and all(word.isdigit() for word in group))
    # Nor need the rows account for a word of the business's own ("the typing course": Touch Typing is about it).
    unnamed = quantities + len(business - accounted)
    if whole and not _about_rows(winners, len(groups) - unnamed):
        # "Do you sell honey?": beside the verb asking whether there is one, the rows must account for every
        # word, so "do you offer Class D bus courses?" names no course.
        asked = [group for group in groups if not set(group) & _ASKING_VERBS]
        if not asked or len(asked) == len(groups):
            return []
        winners = [c for c in _candidates(asked, services) if len(c.accounts) == len(asked)]
        if not winners:
            return []
    chosen = {c.name for c in winners}
    return [s.name for s in services if s.name in chosen]


def _beats(other: _Candidate, c: _Candidate, weak: set[int], *, said_all: int = 0) -> bool:
    """Whether `other` is more the row asked about than `c`, on the question's words outside `weak` first.
    `said_all`: how many words a name must say for the head word to end a tie (0: it never does)."""
    if weak:
        strong = [(frozenset(x.by_name - weak), frozenset(x.by_description - weak)) for x in (other, c)]
        if strong[0] != strong[1]:
            return _beats_on(*strong[0], *strong[1])
    if _beats_on(other.by_name, other.by_description, c.by_name, c.by_description):
        return True
    if (other.by_name, other.by_description) != (c.by_name, c.by_description):
        return False
    # Same words matched: the row that is the thing said wins ("a 5000 litre tank": the tank, not the tank's tower),
    # then the exact spelling, then the plainer name ("Wash & Fold" over "Express Wash & Fold" when the customer did
    # not say express).
    if said_all and other.headed != c.headed and len(other.by_name) == said_all:
        return other.headed
    return other.exact > c.exact or (other.exact == c.exact and other.name_words < c.name_words)


def _beats_on(name: frozenset[int], described: frozenset[int], c_name: frozenset[int],
              c_described: frozenset[int]) -> bool:
    """Whether a row whose name accounts for `name` (its description for `described`) beats one with `c_...`."""
    if name > c_name:
        return True
    if not c_name > name and name | described > c_name | c_described:
        return True  # "sew on buttons": Button Replacement ("Sew on up to 4 buttons") over Curtain Sewing
    return name == c_name and described > c_described


def _about_rows(winners: list[_Candidate], groups: int) -> bool:
    """Whether a question is about these rows: together they account for most of its words, and one of them
    for half on its own. "Can you install a charger for an electric car?" shares one word each with three
    rows ("Installation", "Electrical") and is about none of them."""
    accounts = [c.accounts for c in winners]
    accounted = set().union(*accounts) if accounts else set()
    return len(accounted) * 2 > groups and max((len(a) for a in accounts), default=0) * 2 >= groups


# "Is breakfast included in the price?", "Does the rate cover transport?": a question about what a price
# includes, not about the price; "how much" or "bei" still asks the amount.
_INCLUSION = re.compile(r"\b(includ(?:e|es|ed|ing)|inclusive|covers?|covered|part\s+of)\b", re.I)
_AMOUNT_ASKED = re.compile(r"\bhow\s+much\b|\bbei\b|\bgharama\b|\bkiasi\s+gani\b|\bpesa\s+ngapi\b"
                           r"|\bshilingi\s+ngapi\b", re.I)


# "How much fabric do I need?", "how much paint will it take?": an amount of a thing, not of money.
_QUANTITY_ASKED = re.compile(
    r"\bhow\s+much\s+(?!money\b|cash\b|deposit\b|more\b|extra\b)[a-z-]+\s+(?:do|does|will|would|should|must|can)\s+"
    r"(?:i|we|you|it|they|one)\s+(?:need|use|buy|bring|get|take|order|carry|hold)\b", re.I)


def asks_price(message: str) -> bool:
    """Whether a message asks what something costs ("how much", "price", "bei", "gharama"), not what a price
    includes nor how much of a thing is needed."""
    text = _QUANTITY_ASKED.sub(" ", message or "")
    if not _PRICE_QUESTION.search(text) and not _compares_prices(text):
        return False
    return not _INCLUSION.search(text) or bool(_AMOUNT_ASKED.search(text))


def _compares_prices(text: str) -> bool:
    """Whether a message asks which of the things it names costs less or more."""
    return (bool(_COMPARED_PRICES.search(text)) and bool(_COMPARISON_OF_THINGS.search(text))
            and not _ASKS_WHY.search(text))


# Charges a business sets by policy, not by service: "how much deposit for knotless braids?" asks the deposit,
# which the knowledge gives, not the braids' price (unless a row is named for the charge itself).
_POLICY_CHARGE = re.compile(r"\b(deposits?|down ?payments?|penalt(y|ies)|fines?|refunds?|amana|dhamana|faini)\b", re.I)


def asks_a_policy_charge(message: str, names: list[str]) -> bool:
    """Whether a price question asks a deposit, penalty or refund that none of the named rows is for."""
    charges = {match.group(0).lower() for match in _POLICY_CHARGE.finditer(message or "")}
    named = " ".join(names).lower()
    return bool(charges) and not any(charge in named for charge in charges)


# "Do you sell / stock / have ...?", "mnauza ...?", "kuna ...?" with no question word asking something else
# ("which brand of whey do you stock?").
_IF_SOLD = re.compile(r"\b(?:sell|sells|stock|stocks|carry|available|mnauza|inauzwa|mnazo|mnayo)\b"
                      r"|\b(?:do|does)\s+(?:you|u|ya)\s+(?:have|hv|hav|got)\b|^\s*(?:mna|kuna|una)\b", re.I)
_OTHER_QUESTION = re.compile(r"\b(?:how|what|which|when|why|where|who|wat|wht|whr|gani|lini|wapi|vipi|aje|nini)\b",
                             re.I)


_SELL = re.compile(r"\b(?:sell|sells|selling|buy|mnauza|inauzwa|kununua)\b", re.I)
_HIRED = re.compile(r"\b(?:per\s+(?:day|night|hour|event|week)|hire|rental|rent)\b", re.I)


def asks_if_sold(message: str) -> bool:
    """Whether a message only asks if the business sells or has a thing ("Do you sell A4 paper?")."""
    text = message or ""
    return bool(_IF_SOLD.search(text)) and not _OTHER_QUESTION.search(text)


def rows_say_if_sold(message: str, rows: list[ServiceFact]) -> bool:
    """Whether the product rows a question names answer it ("Do you sell A4 paper?": yes, and what it costs), to
    be quoted first, beside the knowledge. A row hired out ("Plastic Chair (per day)") does not say the business
    sells one."""
    return (bool(rows) and asks_if_sold(message) and all(s.duration_minutes is None for s in rows)
            and not (_SELL.search(message) and any(_HIRED.search(s.name) for s in rows)))


def asks_duration(message: str) -> bool:
    """Whether a message asks how long a service takes ("how long", "muda gani"), not how often or how long
    something lasts."""
    return bool(_DURATION_QUESTION.search(_NOT_A_SERVICE_LENGTH.sub(" ", message or "")))


_DAYS_QUESTION = re.compile(r"\bhow\s+many\s+(days|weeks|months|years)\b|\b(siku|wiki|miezi)\s+(ngapi|mingapi)\b",
                            re.I)


def asks_days(message: str) -> bool:
    """Whether a message asks how many days, weeks or months something takes (no booking's minutes answer it)."""
    return bool(_DAYS_QUESTION.search(message or ""))


# ----------------------------------------------------------------------------- the selector

# Questions about the whole menu or price list (not about one service), English and Swahili.
_LISTING = re.compile(
    r"\b(what|which)\s+(treatments|services|massages|facials|packages|products)\b|\b(price|prices|pricing)\s*(list)?\b"
    r"|\bmenu\b|\bwhat do you (offer|do|have|sell)\b|\bhow much (are|is) (your|the) (treatments|services|prices)\b"
    r"|\bhuduma (gani|zenu|zote)\b|\borodha ya (huduma|bei)\b|\bbei zenu\b|\bmnatoa huduma\b", re.I)

# Words an opening-hours question is made of; anything else ("public holidays", "queue") is a topic the
# knowledge may answer better than the timetable.
_HOURS_WORDS = frozenset("""
open opening opens close closing closes closed shut hour time times timing working work operate operating now
right currently moment still late early until till tonight morning afternoon evening night day days week weekday
daily usually normally schedule timetable wazi fungua kufungua
mnafungua mnafunga funga kufunga mko uko mtakuwa mtafungua mtafunga siku saa gani ngapi asubuhi jioni usiku mchana
shop store office clinic salon branch place premise duka ofisi
""".split())


# A listing question about what is sold, not booked: answered from the product rows (no duration) alone.
_PRODUCT_LISTING = re.compile(r"\b(products?|goods|items|sell|bidhaa|mnauza)\b", re.I)


def listed_rows(message: str, services: list[ServiceFact]) -> list[ServiceFact]:
    """The rows a question about the menu as a whole is answered with: every row, or for "what products do
    you sell?" the products alone (none when the owner lists only services: the knowledge may answer)."""
    if not asks_for_listing(message):
        return []
    if _PRODUCT_LISTING.search(message):
        return [s for s in services if s.duration_minutes is None]
    return services


def asks_for_listing(message: str) -> bool:
    """Whether a message asks about the services in general (so the whole list is an answer).

    "What are your prices?" does; "what's the price of gel nails?" names something, so it does not.
    """
    if not _LISTING.search(message or ""):
        return False
    return not [w for w in _words(message, keep=frozenset())
                if w not in _LISTING_WORDS and w not in _FACT_WORDS and len(w) > 1]


def _naming_words(text: str) -> list[str]:
    """Question words other than figures and units ("and the 200W?" names a size, not a new topic)."""
    return [word for word in question_words(text) if not word.isdigit() and word not in _UNIT_WORDS]


def asks_more_than_facts(message: str, *, intent: str, today: date,
                         services: list[ServiceFact] | None = None) -> bool:
    """Whether a question that asks for facts also asks something they do not answer ("How much is the
    call-out fee and what does it cover?", "Are you open on Christmas Day, and who do I call then?").

    A part that only names another row ("... and with a beard trim?", a follow-up joined to its topic) or
    another day asks for facts too.
    """
    from knowledge.retrieval.relevance import message_parts, where_part

    # "Do you do the hot stone massage at home? How long?": the second question names no row and may ask more
    # than the row's minutes (the visit as a whole), so the knowledge is quoted beside the facts.
    pieces = message_parts(message)
    if len(pieces) < 2:
        return False
    # "Where are you, and what time do you open on Saturday?": the place is the knowledge's to answer.
    if where_part(message) is not None:
        return True
    for piece in pieces:
        if intent == "hours":
            if _hours_topic(piece, resolve_dates(piece, today=today)):
                return True
        elif _naming_words(piece) and not (asks_price(piece) or asks_duration(piece)
                                           or _only_names_rows(piece, services or [])):
            return True
    return False


def _only_names_rows(piece: str, services: list[ServiceFact]) -> bool:
    """Whether a part of a question does nothing but name rows: every naming word belongs to a row it names
    ("and a beard trim?"), unlike "can I bring my own braiding hair" (a question about braids, not a row)."""
    named = match_services(piece, services)
    if not named:
        return False
    name_words = {word for name in named for word in _plain_words(name)}
    return all(any(_same_word(word, name) for name in name_words) for word in _naming_words(piece))


def kind_words(name: str) -> frozenset[str]:
    """The words of a row's name that say what it is: no units, numbers or function words ("Upcountry Parcel 2 to
    10 kg" -> upcountry, parcel)."""
    return frozenset(word for word in _name_words_in_order(name) if word not in _STOPWORDS)


def _name_words_in_order(text: str) -> list[str]:
    """A name's words in order without units, numbers and joining words ("and", "of")."""
    return [word for word in _words(text) if word not in _UNIT_WORDS and not word.isdigit()
            and word not in _GENERIC_TOKENS]


def rows_named_in(text: str, services: list[ServiceFact]) -> list[str]:
    """The rows a text names in full, as the owner wrote the name ("Motorcycle Course (Class A)"), not rows
    it merely shares a word with ("week", "class")."""
    said = " ".join(_plain_words(text))
    return [s.name for s in services if re.search(rf"\b{re.escape(' '.join(_plain_words(s.name)))}\b", said)]


def row_the_knowledge_names(message: str, text: str, services: list[ServiceFact]) -> str | None:
    """For a price or duration question that names no row in its own words ("the motorbike course"): the one
    row the knowledge that answers it names in full ("The Motorcycle Course (Class A) runs for 2 weeks"), when
    the question shares a word with that row's name. The owner's text links the customer's word to the row."""
    if not (asks_price(message) or asks_duration(message)):
        return None
    named = rows_named_in(text, services)
    if len(named) != 1:
        return None
    row = next(s for s in services if s.name == named[0])
    # A snippet that quotes the row's price answers by itself, and may say more than the row does.
    figure = _normalize(format_money(row.price, "")).strip()
    if re.search(rf"(?<![\d.]){re.escape(figure)}(?![\d])", _normalize(text)):
        return None
    asked = question_words(message)
    name_words = [w for w in _words(row.name) if w not in _GENERIC_TOKENS and w not in _UNIT_WORDS]
    return row.name if any(_same_word(q, w) for q in asked for w in name_words) else None


def rows_the_question_mentions(message: str, texts: list[str], services: list[ServiceFact]) -> list[str]:
    """For a one-part price or duration question that names no row in full ("What do puppy shots cost?"): the one
    row it mentions by a distinctive word ("Puppy Vaccination (DHPPi+L)"), when the knowledge that answers
    it (`texts`) gives no such figure but holds the question's other words ("puppy shots"): the customer asked for
    a figure only the rows hold. Empty otherwise (and when nothing answers)."""
    from knowledge.retrieval.relevance import message_parts

    kind = "price" if asks_price(message) else "duration" if asks_duration(message) else None
    # A question of several parts is answered part by part by the knowledge (its other parts may hold the figure).
    if kind is None or asks_for_listing(message) or len(message_parts(message)) > 1:
        return []
    mentioned = match_services(message, services)
    if len(mentioned) != 1:
        return []  # "neutering" for the cat and the dog rows, "shower" for a drain and a shower: not one row
    if kind == "duration" and not any(s.duration_minutes for s in services if s.name in mentioned):
        return []
    if not texts or any(gives_type(text, kind) for text in texts):
        return []
    # The knowledge must tie the customer's other words to the row ("Dental cleaning and extractions" for "dental
    # cleaning" and "Dental Scale and Polish"): "knotless braids" is no box braid when nothing found says knotless.
    written = set().union(*map(content_words, texts))
    name_words = {word for s in services if s.name in mentioned for word in _words(s.name)}
    groups = question_groups(message, keep=frozenset(name_words))
    unaccounted = [group for group in groups if not any(_same_word(w, n) for w in group for n in name_words)]
    if any(not any(_same_word(w, t) for w in group for t in written) for group in unaccounted):
        return []
    return mentioned


def _base_name(name: str) -> str:
    """A row's name without its variant in brackets ("Full Wash (SUV/Pick-up)" -> "full wash")."""
    return re.sub(r"\s*\(.*?\)\s*", " ", name).strip().lower()


def variant_the_knowledge_names(message: str, names: list[str], texts: list[str], services: list[ServiceFact], *,
                                siblings: bool = False) -> list[str]:
    """Of several named variants of one service ("Full Wash (Saloon/Hatchback)", "Full Wash (SUV/Pick-up)"), the one
    the knowledge ties to a word of the question no row holds: "a full wash for a Prado" and "SUV/Pick-up prices are
    for ... the RAV4, Prado and Land Cruiser" give the SUV row. With `siblings`, the named rows' other variants
    (the same name before the brackets) are candidates too: "and for a Prado?" after the saloon's price. `names`
    unchanged when no one sentence ties the word to exactly one variant."""
    bases = {_base_name(name) for name in names}
    rows = [s for s in services if s.name in names or siblings and _base_name(s.name) in bases]
    if len(rows) < 2 or len(bases) > 1:
        return names  # one row, or rows of different services (a spray and a fumigation are no variants)
    written = {row.name: set(_words(row.name)) for row in rows}
    shared = set.intersection(*written.values())
    own = {name: words - shared - _GENERIC_TOKENS - _UNIT_WORDS for name, words in written.items()}
    held = set().union(*written.values(), *(set(_words(row.description)) for row in rows))
    loose = [word for word in _naming_words(message) if not any(_same_word(word, h) for h in held)]
    if not loose or any(not words for words in own.values()):
        return names
    from knowledge.retrieval.sentences import split_sentences

    for text in texts:
        for sentence in split_sentences(text or ""):
            said = set(_words(sentence))
            if not any(word in said for word in loose):
                continue
            tied = [name for name, words in own.items() if words & said]
            if len(tied) == 1:
                return tied
    return names


def _says_how_long(service: ServiceFact) -> bool:
    """Whether a row's description gives a length of time ("4 weeks", "ready in 10 working days")."""
    return gives_type(service.description or "", "duration")


def described_rows(message: str, services: list[ServiceFact], names: list[str]) -> list[str]:
    """The named rows whose description, not their name, holds words of an English question ("How much is the
    boat ride and how many people fit?": "... per boat for up to 6 people"): their answer quotes it."""
    from conversations.i18n import detect_language

    rows = [s for s in services if s.name in names and s.description]
    if not rows or detect_language(message) != "en":
        return []
    groups = question_groups(message, keep=frozenset(w for s in rows for w in _plain_words(s.name)), language="en")
    described = []
    for row in rows:
        name = _words(row.name) + _hyphen_joined(row.name)
        description = _words(row.description, keep=frozenset())
        if any(not any(_same_word(word, t) for word in group for t in name)
               and any(_same_word(word, d) for word in group for d in description) for group in groups):
            described.append(row.name)
    return described


def business_words() -> frozenset[str]:
    """The words in more than a third of the tenant's active snippets, in the facts' singular forms."""
    from knowledge.retrieval.spelling import common_words

    return _singular_forms(common_words())


@lru_cache(maxsize=64)
def _singular_forms(words: frozenset[str]) -> frozenset[str]:
    """Cached: a turn asks for the business's words twice (which facts, then the facts), the same set each time."""
    return frozenset(singular(word) for word in words)


def services_asked(message: str, services: list[ServiceFact], *, topic_names: tuple[str, ...] = (),
                   common: frozenset[str] = frozenset()) -> list[str]:
    """The services a question is about; for a price or duration question that names none in its words, the one
    service the conversation was just about (`topic_names`: "bei yake ni ngapi?" after an answer on one course),
    else the row it names by meaning ("a new breaker box" for "Consumer Unit Replacement"). `common`: the
    business's own words (business_words)."""
    named = named_services(message, services, common=common)
    # The row the conversation is about before one the joined text is merely close to by meaning: "bei gani?"
    # after "Mnauza battery ya pikipiki?" asks the battery's price, not the wiring diagnosis's.
    if not named and topic_names and (asks_price(message) or asks_duration(message)):
        named = [s.name for s in services if s.name in topic_names]
    if not named:
        named = row_by_meaning(message, services)
    return named


# A price or duration question that shares no name word with any row may still name one in the customer's own
# words. The closest row by meaning ("name. description", local embeddings) is taken when its cosine reaches
# ROW_MEANING_MIN and leads the next row by ROW_MEANING_LEAD. Chosen on the choosing folds with
# bench/row_meaning.py, where no question about a service the business does not offer (its row taken out of the
# table) and no labelled near miss was answered from another row at these values.
ROW_MEANING_MIN = 0.45
ROW_MEANING_LEAD = 0.05


def row_texts(services: list[ServiceFact]) -> list[str]:
    """What a row is compared by when a question names it only by meaning (web processes warm these)."""
    return [f"{s.name}. {s.description}" if s.description else s.name for s in services]


def row_by_meaning(message: str, services: list[ServiceFact]) -> list[str]:
    """The one row a price or duration question names by meaning only, or none."""
    from knowledge.embeddings import EmbeddingError, embed_cached, embed_query
    from knowledge.retrieval.language import detect_language, english_reading

    if not services or not (asks_price(message) or asks_duration(message)) or asks_for_listing(message):
        return []
    if not _naming_words(message) or match_services(message, services):
        return []  # nothing named, or a row shares a word: the words decide (a gel manicure is not a spa one)
    read = (english_reading(message) or message) if detect_language(message).language == "sw" else message
    try:
        question, rows = embed_query(read), embed_cached(row_texts(services))
    except EmbeddingError:
        return []
    cosines = sorted(((sum(a * b for a, b in zip(question, row)), index) for index, row in enumerate(rows)),
                     reverse=True)
    lead = cosines[0][0] - (cosines[1][0] if len(cosines) > 1 else 0.0)
    if cosines[0][0] < ROW_MEANING_MIN or lead < ROW_MEANING_LEAD:
        return []
    # How long something takes is a row's duration: a row without one (a product, a monthly rent) answers no
    # duration question, however close its words are; not even one whose description gives a length, since by
    # meaning alone "Minimum stay 3 months" on a furnished flat's rent answered "how long would the lease be?".
    best = services[cosines[0][1]]
    return [best.name] if best.duration_minutes or asks_price(message) else []


def facts_intent_for(*, intent: str, message: str, topic_names: tuple[str, ...] = (),
                     services: list[ServiceFact] | None = None) -> str | None:
    """Which facts a turn is answered from: `services`, `hours` or none.

    A price or duration question that names a service or product is a services question whatever the
    intent classifier said ("how much are box braids?" read as `other` must still get the price).
    `services`: the list when the caller has read it already (else it is read here, only if needed).
    """
    # ...and so must one the classifier read as a booking that only asks about it ("How long is a half-day booking
    # of the Acacia Room?": no hand-off is recorded for it, the row answers).
    asks_fact = intent in ("hours", "other", "booking") and (asks_price(message) or asks_duration(message))
    if asks_fact and services_asked(message, services if services is not None else services_list(),
                                    topic_names=topic_names, common=business_words()):
        return "services"
    return intent if intent in ("services", "hours") else None


def _hours_topic(message: str, asked: list[tuple[date, str]]) -> list[str]:
    """The words of an hours question that are neither hours words nor the dates it names."""
    labels = {w for _, label in asked for w in _words(label)}

    def of_hours(w: str) -> bool:
        return (w in _HOURS_WORDS or w in labels or w.isdigit() or w in _WEEKDAY_LOOKUP or w in _MONTH_LOOKUP
                or w in _RELATIVE_WORDS or w in _WEEKEND_WORDS or w in _WORKWEEK_WORDS)

    # A Swahili word is one group of its readings: "kazi" (work, job) is an hours word by its first reading.
    words: list[str] = []
    for group in question_groups(message):
        if not any(of_hours(w) for w in group):
            words += [w for w in group if w not in words]
    return words


def facts_for(*, intent: str, message: str, now: datetime | None = None, topic_names: tuple[str, ...] = (),
              services: list[ServiceFact] | None = None) -> Facts:
    """The facts a `services` or `hours` turn may quote: matched services, asked-about days, the week."""
    tenant = getattr(connection, "tenant", None)
    zone = tenant_zone()
    today = tenant_today(now=now)
    facts = Facts(timezone=str(zone), today=today, currency=getattr(tenant, "currency", "KES") or "KES")
    if intent == "services":
        services = services if services is not None else services_list()
        # "how many weeks" names no row ("Weekend Course"): the rows are matched as for "how long"
        in_days = asks_days(message)
        naming = _DAYS_QUESTION.sub(" how long ", message) if in_days else message
        facts.matched_services = services_asked(naming, services, topic_names=topic_names, common=business_words())
        # The list only answers a question about a named service or about the menu as a whole;
        # "do you do home visits?" is not answered by a price list, nor "how much are gel nails?" when
        # gel nails are not on it, nor "what products do you sell?" by a list of haircuts.
        facts.services = services if facts.matched_services else listed_rows(message, services)
        facts.described = described_rows(naming, services, facts.matched_services)
        listing = bool(facts.services) and not facts.matched_services
        # The rows are the whole answer to what a named service costs or how long it takes, and to a
        # request for the menu; "do you sell power banks?" may be better answered by the knowledge.
        # A duration question about rows the owner gave no duration (made-to-measure suits, products) is for
        # the knowledge to answer ("suits take 2 to 3 weeks"): their prices are no answer to it. Unless the
        # row's description says how long ("Advanced Excel: ... 4 weeks, evenings or Saturdays"): it is quoted.
        # "How many weeks ...?" is never answered by a booking's minutes: a booked row leaves it to the knowledge.
        matched = [s for s in services if s.name in facts.matched_services]
        asks_length = in_days or asks_duration(message)
        said = [s for s in matched if not s.duration_minutes and _says_how_long(s)]
        timed = bool(said) or not in_days and any(s.duration_minutes for s in matched)
        if asks_length:
            facts.described += [s.name for s in said if s.name not in facts.described]
        asks_fact = (bool(facts.matched_services) and (asks_price(message) or asks_length and timed)
                     and not asks_a_policy_charge(message, facts.matched_services))
        facts.answers_part = asks_fact and asks_more_than_facts(message, intent=intent, today=today,
                                                                services=services)
        facts.answers_part |= not asks_fact and rows_say_if_sold(message, matched)
        facts.answers_alone = listing or asks_fact and not facts.answers_part
    if intent == "hours":
        schedule = weekly_hours()
        named = resolve_dates(message, today=today)
        asked = named or [(today, "today")]
        # A past date the customer did not write out ("Mashujaa Day" after this year's) is the last one on record.
        facts.days = [replace(hours_on(day=day, label=label, weekly=schedule),
                              past=day < today and not any(ch.isdigit() for ch in label))
                      for day, label in asked[:7]]
        facts.weekly = {WEEKDAYS_EN[day]: format_ranges(ranges) if ranges else "closed"
                        for day, ranges in schedule.items()}
        facts.named_days = bool(named)
        if asks_now(message) and asked[0][0] == today:
            facts.now = (now or timezone.now()).astimezone(zone).time().replace(second=0, microsecond=0)
        facts.answers_part = bool(named) and asks_more_than_facts(message, intent=intent, today=today)
        facts.answers_alone = not facts.answers_part and (bool(named) or not _hours_topic(message, asked))
    return facts


def facts_beside_knowledge(facts: Facts, *, knowledge: bool) -> Facts:
    """Whether the facts are quoted: when they answer alone or one part of the question; a named service's row
    also when no knowledge answers ("do you sell power banks?"). Today's timetable is no answer to "are you
    open on public holidays?": with no knowledge either, the turn is refused (and the owner sees the gap)."""
    facts.quoted = facts.answers_alone or facts.answers_part or (not knowledge and bool(facts.matched_services))
    return facts
