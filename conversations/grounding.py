"""Checks an LLM answer must pass before it leaves: grounding (no invented figures) and the output filter.

Grounding: every price, time, date, phone number, percentage and long number (till or account numbers)
in the answer must also appear in a source the answer cites or in the structured facts. Values are
compared in a canonical form, so `KES 4,500` matches `4500.00`, `8 pm` matches `20:00` and
`24 December` matches `2026-12-24`. Citing a ref the prompt never gave counts as a failure too.
Times written the Swahili way ("saa tatu asubuhi") are words, not figures, and are not checked.

Output filter: an answer that repeats the system message or the business's guardrail/behaviour sections
verbatim (a run of words long enough that it cannot be a coincidence), or names the prompt's data
sections, is a leak: a prompt-injection that worked. Runs that also occur in the knowledge the answer may
quote are allowed, because quoting the knowledge is the job.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from conversations.prompting import SECTION_TAGS, AssembledPrompt, Source

_MONTHS = {
    "january": 1, "jan": 1, "januari": 1, "february": 2, "feb": 2, "februari": 2, "march": 3, "mar": 3,
    "machi": 3, "april": 4, "apr": 4, "aprili": 4, "may": 5, "mei": 5, "june": 6, "jun": 6, "juni": 6,
    "july": 7, "jul": 7, "julai": 7, "august": 8, "aug": 8, "agosti": 8, "september": 9, "sep": 9, "sept": 9,
    "septemba": 9, "october": 10, "oct": 10, "oktoba": 10, "november": 11, "nov": 11, "novemba": 11,
    "december": 12, "dec": 12, "desemba": 12,
}
_MONTH_WORDS = "|".join(sorted(_MONTHS, key=len, reverse=True))
_NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_CURRENCY = r"kes|kshs?|shs?|usd|us\$|\$|€|£|eur|gbp|tzs|tshs?|ugx|ushs?"

_PATTERNS: list[tuple[str, re.Pattern]] = [
    ("date_iso", re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")),
    ("date_slash", re.compile(r"(?<![\d/])(\d{1,2})/(\d{1,2})(?:/(\d{2}|\d{4}))?(?![\d/])")),
    ("date_day_month", re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH_WORDS})\b\.?")),
    ("date_month_day", re.compile(rf"\b({_MONTH_WORDS})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?![:.]\d)")),
    ("price_before", re.compile(rf"(?<![a-z])({_CURRENCY})\.?\s?({_NUMBER})\s*(k|m|million|thousand|elfu)?\b")),
    ("price_after", re.compile(rf"\b({_NUMBER})\s*(k|m|million|thousand)?\s*(/=|/-|shillings|shilingi|bob|kes|kshs?|"
                               r"usd|dollars)(?![a-z])")),
    ("price_sw", re.compile(rf"\bshilingi\s+({_NUMBER})\b")),
    ("percent", re.compile(rf"\b({_NUMBER})\s*(%|percent\b|per\s+cent\b)|\basilimia\s+({_NUMBER})\b")),
    ("time_clock", re.compile(r"\b([01]?\d|2[0-3]):([0-5]\d)(?:\s*([ap])\.?\s?m\b\.?)?")),
    ("time_dot", re.compile(r"\b(1[0-2]|0?\d)\.([0-5]\d)\s*([ap])\.?\s?m\b\.?")),
    ("time_ampm", re.compile(r"\b(1[0-2]|0?\d)\s*([ap])\.?\s?m\b\.?")),
    ("time_word", re.compile(r"\b(noon|midday|midnight)\b")),
    ("phone", re.compile(r"(?<![\w.,])(\+?\d[\d \-().]{7,}\d)(?![\w])")),
    ("number", re.compile(r"(?<![\w.,])(\d{5,})(?![\w])")),
]

_REF_MARKER = re.compile(r"\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]")
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class Claim:
    """A checkable figure found in text, with its canonical value (what is compared)."""

    kind: str  # price | time | date | phone | percent | number
    text: str
    values: tuple[str, ...]  # canonical forms; the claim is supported if any one is found


@dataclass
class GroundingReport:
    ok: bool
    claims: list[Claim] = field(default_factory=list)
    unsupported: list[Claim] = field(default_factory=list)
    cited_refs: list[int] = field(default_factory=list)
    invalid_refs: list[int] = field(default_factory=list)

    def summary(self) -> dict:
        return {"unsupported": [f"{c.kind}:{c.text}" for c in self.unsupported], "invalid_refs": self.invalid_refs}


@dataclass
class OutputCheck:
    leaked: bool
    reason: str = ""
    excerpt: str = ""


# ----------------------------------------------------------------------------- canonical values


def _number(text: str) -> str | None:
    try:
        value = Decimal(text.replace(",", ""))
    except InvalidOperation:
        return None
    normalized = value.normalize()
    return format(normalized.quantize(Decimal(1)) if normalized == normalized.to_integral() else normalized, "f")


def _scaled(number: str | None, suffix: str | None) -> str | None:
    if number is None or not suffix:
        return number
    factor = {"k": 1000, "thousand": 1000, "elfu": 1000, "m": 1_000_000, "million": 1_000_000}[suffix]
    return _number(str(Decimal(number) * factor))


def _time(hour: int, minute: int, meridiem: str | None, *, padded: bool = False) -> tuple[str, ...]:
    if meridiem == "p" and hour < 12:
        hour += 12
    elif meridiem == "a" and hour == 12:
        hour = 0
    if meridiem is None and not padded and 1 <= hour < 12:
        # "8:00" without am/pm may mean either; the data decides.
        return f"{hour:02d}:{minute:02d}", f"{hour + 12:02d}:{minute:02d}"
    return (f"{hour:02d}:{minute:02d}",)


def _date(month: int, day: int) -> tuple[str, ...]:
    if 1 <= month <= 12 and 1 <= day <= 31:
        return (f"{month:02d}-{day:02d}",)
    return ()


def _claim(kind: str, match: re.Match) -> Claim | None:
    groups = match.groups()
    text = match.group(0).strip()
    values: tuple[str, ...] = ()
    if kind == "date_iso":
        values = _date(int(groups[1]), int(groups[2]))
    elif kind == "date_slash":
        if text == "24/7":  # "open 24/7" is not the 24th of July
            return None
        values = _date(int(groups[1]), int(groups[0]))  # day first, as written in East Africa
    elif kind == "date_day_month":
        values = _date(_MONTHS[groups[1]], int(groups[0]))
    elif kind == "date_month_day":
        values = _date(_MONTHS[groups[0]], int(groups[1]))
    elif kind == "price_before":
        values = tuple(v for v in [_scaled(_number(groups[1]), groups[2])] if v)
    elif kind == "price_after":
        values = tuple(v for v in [_scaled(_number(groups[0]), groups[1])] if v)
    elif kind == "price_sw":
        values = tuple(v for v in [_number(groups[0])] if v)
    elif kind == "percent":
        values = tuple(v for v in [_number(groups[0] or groups[2])] if v)
    elif kind == "time_clock":
        # "09:00" is 24-hour notation; "9:00" could be morning or evening.
        values = _time(int(groups[0]), int(groups[1]), groups[2], padded=len(groups[0]) == 2)
    elif kind == "time_dot":
        values = _time(int(groups[0]), int(groups[1]), groups[2])
    elif kind == "time_ampm":
        values = _time(int(groups[0]), 0, groups[1])
    elif kind == "time_word":
        values = ("00:00",) if groups[0] == "midnight" else ("12:00",)
    elif kind == "phone":
        digits = re.sub(r"\D", "", text)
        if not 9 <= len(digits) <= 15:
            return None
        values = (digits[-9:],)
    elif kind == "number":
        values = (groups[0],)
    if not values:
        return None
    return Claim(kind=kind.split("_")[0], text=text, values=values)


def extract_claims(text: str) -> list[Claim]:
    """Prices, times, dates, phone numbers, percentages and long numbers in `text`, left to right."""
    remaining = (text or "").lower().replace("\u00a0", " ").replace("–", "-").replace("—", "-")
    found: list[tuple[int, Claim]] = []
    for kind, pattern in _PATTERNS:
        def take(match: re.Match, kind=kind) -> str:
            claim = _claim(kind, match)
            if claim is None:
                return match.group(0)
            found.append((match.start(), claim))
            # Blank the span (same length) so later, looser patterns cannot re-read it.
            return " " * len(match.group(0))
        remaining = pattern.sub(take, remaining)
    return [claim for _, claim in sorted(found, key=lambda item: item[0])]


def supported_values(text: str) -> set[str]:
    """Every canonical value a text supports: its claims plus each plain number it contains."""
    values: set[str] = set()
    lowered = (text or "").lower()
    for claim in extract_claims(lowered):
        values.update(claim.values)
    for match in re.finditer(_NUMBER, lowered):
        number = _number(match.group(0))
        if number:
            values.add(number)
    for match in re.finditer(r"\d[\d \-().]{7,}\d", lowered):
        digits = re.sub(r"\D", "", match.group(0))
        if len(digits) >= 9:
            values.add(digits[-9:])
    return values


# ----------------------------------------------------------------------------- citations


def cited_refs(text: str) -> list[int]:
    """Ref numbers cited as [n] or [n, m], in order of first appearance."""
    refs: list[int] = []
    for match in _REF_MARKER.finditer(text or ""):
        for part in match.group(1).split(","):
            ref = int(part)
            if ref not in refs:
                refs.append(ref)
    return refs


def check_grounding(*, answer: str, prompt: AssembledPrompt) -> GroundingReport:
    """Whether every figure in `answer` appears in a source it cites or in the structured facts."""
    refs = cited_refs(answer)
    known = {source.ref: source for source in prompt.sources}
    invalid = [ref for ref in refs if ref not in known]
    # An answer with no markers is checked against everything it was given.
    cited: Iterable[Source] = [known[ref] for ref in refs if ref in known] if refs else prompt.sources
    corpus = "\n".join([prompt.facts_text] + [f"{s.title}\n{s.body}" for s in cited]
                       + [s.body for s in prompt.sources if s.kind == "facts"])
    allowed = supported_values(corpus)
    claims = extract_claims(_REF_MARKER.sub(" ", answer or ""))
    unsupported = [claim for claim in claims if not any(value in allowed for value in claim.values)]
    return GroundingReport(ok=not unsupported and not invalid, claims=claims, unsupported=unsupported,
                           cited_refs=refs, invalid_refs=invalid)


# ----------------------------------------------------------------------------- output filter

LEAK_RUN_WORDS = 10
_SECTION_NAME = re.compile(r"</?\s*(%s)\b|\b(%s)\b" % ("|".join(SECTION_TAGS), "|".join(SECTION_TAGS)), re.I)


def _words(text: str) -> list[str]:
    return [word.lower() for word in _WORD.findall(text or "")]


def _shingles(words: list[str], size: int) -> set[tuple[str, ...]]:
    return {tuple(words[i:i + size]) for i in range(len(words) - size + 1)}


class LeakDetector:
    """The output filter for one prompt, built once so a stream can be checked after every delta."""

    def __init__(self, prompt: AssembledPrompt):
        allowed_text = "\n".join(source.body for source in prompt.sources)
        protected = [("system_message", prompt.system)] + [(f"{s.role}:{s.key}", s.body)
                                                          for s in prompt.core_sections]
        self.runs: dict[int, dict[tuple[str, ...], str]] = {}  # run length -> {words: where from}
        allowed_words = _words(allowed_text)
        for name, text in protected:
            words = _words(text)
            if len(words) < 6:
                continue  # too short to tell a quote from a coincidence
            size = min(LEAK_RUN_WORDS, len(words))
            runs = self.runs.setdefault(size, {})
            for shingle in _shingles(words, size) - _shingles(allowed_words, size):
                runs.setdefault(shingle, name)

    def check(self, answer: str) -> OutputCheck:
        match = _SECTION_NAME.search(answer or "")
        if match:
            return OutputCheck(leaked=True, reason="section_name", excerpt=match.group(0))
        answer_words = _words(answer)
        for size, runs in sorted(self.runs.items()):
            for shingle in sorted(_shingles(answer_words, size)):
                if shingle in runs:
                    return OutputCheck(leaked=True, reason=runs[shingle], excerpt=" ".join(shingle))
        return OutputCheck(leaked=False)


def check_output(*, answer: str, prompt: AssembledPrompt) -> OutputCheck:
    """Whether `answer` leaks the system message or the guardrail/behaviour sections."""
    return LeakDetector(prompt).check(answer)
