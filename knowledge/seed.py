"""The seed file format (demo/demo_business.yaml is one): parse and validate, apply to a schema, export back.

A seed file is the declared state of a business's knowledge: applying it twice changes nothing; a
changed snippet becomes a new active version, a snippet missing from the file is deactivated (never
deleted). Parsing reports every problem with its line; applying runs in one transaction.
"""
from __future__ import annotations

import datetime as dt
import logging
import time
import zoneinfo
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import yaml
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction

from knowledge.models import (
    SNIPPET_HEAVY_FIELDS, EmbeddingState, OpeningHours, Service, SmokeTest, SnippetVersion, SpecialDay,
)
from knowledge.selectors import stale_versions
from knowledge.services import (
    _content_of,
    currency_check,
    opening_hours_set_week,
    service_clean,
    service_update,
    service_upsert,
    smoke_test_delete,
    smoke_test_upsert,
    snippet_content_clean,
    snippet_deactivate,
    snippet_key_check,
    snippet_version_activate,
    snippet_version_create,
    snippet_versions_embed,
    special_day_delete,
    special_day_set,
    time_range_parse,
    time_ranges_check,
)

logger = logging.getLogger(__name__)

MAX_SEED_BYTES = getattr(settings, "SEED_MAX_BYTES", 2 * 1024 * 1024)
MAX_YAML_NODES = 200_000
MAX_YAML_DEPTH = 32  # a seed file nests about 5 levels
WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
TOP_LEVEL = ("tenant", "services", "hours", "snippets", "smoke_tests")
TENANT_FIELDS = ("schema", "name", "domain", "languages", "timezone", "currency")
SERVICE_FIELDS = ("name", "description", "duration_minutes", "price", "currency", "active")
SNIPPET_FIELDS = ("key", "category", "role", "title", "body", "language", "channels", "tags", "status", "related",
                  "notes", "valid_from", "valid_until", "last_reviewed_at", "translations")
SPECIAL_FIELDS = ("date", "hours", "note")
SMOKE_FIELDS = ("query", "expect")
# How the audit log names changes a seed file makes.
SEED_ACTOR = "command:seed_knowledge"
# YAML field name -> version field name where they differ.
SNIPPET_FIELD_MAP = {"related": "related_keys"}


# ----------------------------------------------------------------------------- errors

@dataclass(frozen=True)
class SeedProblem:
    """One problem in a seed file: where (path and line) and what."""

    path: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"line {self.line}: " if self.line else ""
        return f"{where}{self.path}: {self.message}" if self.path else f"{where}{self.message}"


class SeedError(Exception):
    """A seed file that cannot be applied; `problems` lists every problem found."""

    def __init__(self, problems: list[SeedProblem], source: str = "seed file"):
        self.problems = problems
        self.source = source
        lines = "\n".join(f"  {source}:{p.line}: {p.path + ': ' if p.path else ''}{p.message}" if p.line
                           else f"  {source}: {p}" for p in problems)
        super().__init__(f"{len(problems)} problem(s) in {source}:\n{lines}")


# ----------------------------------------------------------------------------- safe YAML

class _SeedLoader(yaml.SafeLoader):
    """SafeLoader that refuses aliases (no billion-laughs expansion), caps the node count and
    rejects duplicate mapping keys (PyYAML would silently keep the last one)."""

    def __init__(self, stream):
        super().__init__(stream)
        self._nodes = 0
        self._depth = 0

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise _LoaderProblem("YAML aliases (*name) are not allowed in seed files.", event.start_mark)
        self._nodes += 1
        if self._nodes > MAX_YAML_NODES:
            raise _LoaderProblem(f"Too many YAML nodes (over {MAX_YAML_NODES}).", self.peek_event().start_mark)
        # The composer recurses once per level: "[[[[..." would end in a RecursionError, not a clear problem.
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise _LoaderProblem(f"Nested deeper than {MAX_YAML_DEPTH} levels.", self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node, deep=False):
        seen: dict[Any, Any] = {}
        for key_node, _value in node.value:
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise _LoaderProblem(f"Duplicate field {key!r} in one mapping.", key_node.start_mark)
            seen[key] = True
        return super().construct_mapping(node, deep=deep)


class _LoaderProblem(Exception):
    def __init__(self, message: str, mark):
        super().__init__(message)
        self.message = message
        self.line = mark.line + 1 if mark is not None else None


def _marks(node, path: tuple = ()) -> dict[tuple, int]:
    """Line number (1-based) of every value in the composed tree, by path."""
    marks = {path: node.start_mark.line + 1}
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            marks.update(_marks(value_node, path + (key_node.value,)))
            marks[path + (key_node.value, "__key__")] = key_node.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            marks.update(_marks(item, path + (index,)))
    return marks


def _load_yaml(text: str) -> tuple[Any, dict[tuple, int]]:
    try:
        loader = _SeedLoader(text)
    except yaml.YAMLError as exc:  # the reader refuses NUL and other control characters up front
        raise SeedError([SeedProblem("", f"Invalid YAML: {' '.join(str(exc).split())}.")]) from None
    try:
        node = loader.get_single_node()
        if node is None:
            return None, {}
        data = loader.construct_document(node)
        return data, _marks(node)
    except _LoaderProblem as exc:
        raise SeedError([SeedProblem("", exc.message, exc.line)]) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        message = " ".join(part for part in (exc.context, exc.problem) if part) or str(exc)
        raise SeedError([SeedProblem("", f"Invalid YAML: {message}.", mark.line + 1 if mark else None)]) from None
    except yaml.YAMLError as exc:
        raise SeedError([SeedProblem("", f"Invalid YAML: {exc}")]) from None
    finally:
        loader.dispose()


# ----------------------------------------------------------------------------- parsed form

@dataclass(frozen=True)
class TenantSpec:
    schema: str
    name: str
    domain: str
    languages: tuple[str, ...] = ("en",)
    timezone: str = "UTC"
    currency: str = "KES"


@dataclass(frozen=True)
class ServiceSpec:
    name: str
    description: str
    duration_minutes: int | None  # None: a product
    price: Decimal
    currency: str
    is_active: bool = True


@dataclass(frozen=True)
class SpecialDaySpec:
    date: dt.date
    ranges: tuple[tuple[dt.time, dt.time], ...]
    note: str = ""


@dataclass(frozen=True)
class HoursSpec:
    weekly: dict[int, tuple[tuple[dt.time, dt.time], ...]] | None
    special: tuple[SpecialDaySpec, ...] | None


@dataclass(frozen=True)
class SnippetSpec:
    key: str
    content: dict[str, Any]  # cleaned version fields (see knowledge.services.CONTENT_FIELDS)
    line: int | None = None


@dataclass(frozen=True)
class SmokeTestSpec:
    query: str
    expected_keys: tuple[str, ...]


@dataclass
class SeedFile:
    """A validated seed file. A section that is absent (None) is left alone when applied."""

    tenant: TenantSpec | None = None
    services: list[ServiceSpec] | None = None
    hours: HoursSpec | None = None
    snippets: list[SnippetSpec] | None = None
    smoke_tests: list[SmokeTestSpec] | None = None


class _Collector:
    def __init__(self, marks: dict[tuple, int]):
        self.marks = marks
        self.problems: list[SeedProblem] = []

    def add(self, path: tuple, message: str) -> None:
        line = None
        for cut in range(len(path), -1, -1):
            line = self.marks.get(path[:cut])
            if line:
                break
        self.problems.append(SeedProblem(_path_text(path), message, line))

    def unknown_fields(self, item: dict, allowed: tuple, path: tuple) -> None:
        for name in item:
            if name not in allowed:
                self.problems.append(SeedProblem(_path_text(path + (name,)),
                                                 f"Unknown field {name!r} (allowed: {', '.join(allowed)}).",
                                                 self.marks.get(path + (name, "__key__"))))

    def from_validation(self, exc: ValidationError, path: tuple, rename: dict[str, str] | None = None) -> None:
        rename = rename or {}
        for name, messages in exc.message_dict.items():
            name = rename.get(name, name)
            for message in messages:
                self.add(path + ((name,) if name != "__all__" else ()), message)


def _path_text(path: tuple) -> str:
    text = ""
    for part in path:
        if part == "__key__":
            continue
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def seed_parse(*, text: str | bytes, source: str = "seed file") -> SeedFile:
    """Parse and validate a seed file; raise SeedError listing every problem with its line."""
    if isinstance(text, bytes):
        if len(text) > MAX_SEED_BYTES:
            raise SeedError([SeedProblem("", f"File is {len(text)} bytes; the limit is {MAX_SEED_BYTES}.")], source)
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SeedError([SeedProblem("", f"File is not UTF-8: {exc}.")], source) from None
    if len(text.encode("utf-8")) > MAX_SEED_BYTES:
        raise SeedError([SeedProblem("", f"File is larger than the {MAX_SEED_BYTES}-byte limit.")], source)
    try:
        data, marks = _load_yaml(text)
    except SeedError as exc:
        raise SeedError(exc.problems, source) from None
    if not isinstance(data, dict):
        raise SeedError([SeedProblem("", "The file must be a mapping with tenant, services, hours, snippets "
                                         "and smoke_tests sections.", 1)], source)
    found = _Collector(marks)
    found.unknown_fields(data, TOP_LEVEL, ())
    seed = SeedFile()
    if "tenant" in data:
        seed.tenant = _parse_tenant(data["tenant"], found)
    if "services" in data:
        seed.services = _parse_services(data["services"], found)
    if "hours" in data:
        seed.hours = _parse_hours(data["hours"], found)
    if "snippets" in data:
        seed.snippets = _parse_snippets(data["snippets"], found)
    if "smoke_tests" in data:
        seed.smoke_tests = _parse_smoke_tests(data["smoke_tests"], found, seed.snippets)
    if found.problems:
        found.problems.sort(key=lambda p: p.line or 0)
        raise SeedError(found.problems, source)
    return seed


def _mapping(value: Any, path: tuple, found: _Collector) -> dict | None:
    if not isinstance(value, dict):
        found.add(path, "Expected a mapping of field: value.")
        return None
    return value


def _sequence(value: Any, path: tuple, found: _Collector) -> list | None:
    if value is None:
        return []
    if not isinstance(value, list):
        found.add(path, "Expected a list.")
        return None
    return value


def _parse_tenant(value: Any, found: _Collector) -> TenantSpec | None:
    from ratiba.services import PlatformError, check_schema_name

    block = _mapping(value, ("tenant",), found)
    if block is None:
        return None
    found.unknown_fields(block, TENANT_FIELDS, ("tenant",))
    ok = True
    for name in ("schema", "name", "domain"):
        if not isinstance(block.get(name), str) or not block[name].strip():
            found.add(("tenant", name), "This field is required.")
            ok = False
    if ok:
        try:
            check_schema_name(block["schema"])
        except PlatformError as exc:
            found.add(("tenant", "schema"), str(exc))
            ok = False
    languages = block.get("languages", ["en"])
    if not isinstance(languages, list) or not all(isinstance(item, str) and item for item in languages):
        found.add(("tenant", "languages"), "Expected a list of language codes.")
        ok = False
    tz = block.get("timezone", "UTC")
    try:
        zoneinfo.ZoneInfo(str(tz))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        found.add(("tenant", "timezone"), f"Unknown time zone {tz!r} (for example Africa/Nairobi).")
        ok = False
    currency = block.get("currency", "KES")
    try:
        currency = currency_check(currency=currency)
    except ValidationError as exc:
        found.from_validation(exc, ("tenant",))
        ok = False
    if not ok:
        return None
    return TenantSpec(schema=block["schema"], name=block["name"].strip(), domain=block["domain"].strip().lower(),
                      languages=tuple(languages), timezone=str(tz), currency=currency)


def _parse_services(value: Any, found: _Collector) -> list[ServiceSpec]:
    items = _sequence(value, ("services",), found) or []
    specs: list[ServiceSpec] = []
    names: dict[str, int] = {}
    for index, item in enumerate(items):
        path = ("services", index)
        item = _mapping(item, path, found)
        if item is None:
            continue
        found.unknown_fields(item, SERVICE_FIELDS, path)
        try:
            clean = service_clean(name=item.get("name"), description=item.get("description", ""),
                                  duration_minutes=item.get("duration_minutes"), price=item.get("price"),
                                  currency=item.get("currency", "KES"), is_active=item.get("active", True))
        except ValidationError as exc:
            found.from_validation(exc, path, {"is_active": "active"})
            continue
        if clean["name"] in names:
            found.add(path + ("name",), f"Duplicate service {clean['name']!r} (also services[{names[clean['name']]}]).")
            continue
        names[clean["name"]] = index
        specs.append(ServiceSpec(**clean))
    return specs


def _ranges(value: Any, path: tuple, found: _Collector) -> tuple | None:
    items = _sequence(value, path, found)
    if items is None:
        return None
    ranges = []
    for index, text in enumerate(items):
        try:
            ranges.append(time_range_parse(text=text, field="hours"))
        except ValidationError as exc:
            found.add(path + (index,), exc.message_dict["hours"][0])
            return None
    try:
        return tuple(time_ranges_check(ranges=ranges, field="hours"))
    except ValidationError as exc:
        found.add(path, exc.message_dict["hours"][0])
        return None


def _parse_hours(value: Any, found: _Collector) -> HoursSpec | None:
    block = _mapping(value, ("hours",), found)
    if block is None:
        return None
    found.unknown_fields(block, ("weekly", "special"), ("hours",))
    weekly = None
    if "weekly" in block:
        days = _mapping(block["weekly"], ("hours", "weekly"), found) or {}
        found.unknown_fields(days, WEEKDAYS, ("hours", "weekly"))
        weekly = {}
        for number, name in enumerate(WEEKDAYS):
            ranges = _ranges(days.get(name, []), ("hours", "weekly", name), found)
            weekly[number] = ranges or ()
    special = None
    if "special" in block:
        special = []
        dates: dict[dt.date, int] = {}
        for index, item in enumerate(_sequence(block["special"], ("hours", "special"), found) or []):
            path = ("hours", "special", index)
            item = _mapping(item, path, found)
            if item is None:
                continue
            found.unknown_fields(item, SPECIAL_FIELDS, path)
            date = item.get("date")
            if isinstance(date, str):
                try:
                    date = dt.date.fromisoformat(date)
                except ValueError:
                    pass
            if not isinstance(date, dt.date) or isinstance(date, dt.datetime):
                found.add(path + ("date",), f"Enter a date as YYYY-MM-DD, not {item.get('date')!r}.")
                continue
            if date in dates:
                found.add(path + ("date",), f"Duplicate special day {date} (also hours.special[{dates[date]}]).")
                continue
            dates[date] = index
            note = item.get("note", "") or ""
            if not isinstance(note, str) or len(note) > 200:
                found.add(path + ("note",), "Enter a note of at most 200 characters.")
                continue
            ranges = _ranges(item.get("hours", []), path + ("hours",), found)
            if ranges is not None:
                special.append(SpecialDaySpec(date=date, ranges=ranges, note=note.strip()))
        special = tuple(special)
    return HoursSpec(weekly=weekly, special=special)


def _parse_snippets(value: Any, found: _Collector) -> list[SnippetSpec]:
    items = _sequence(value, ("snippets",), found) or []
    specs: list[SnippetSpec] = []
    keys: dict[str, int] = {}
    for index, item in enumerate(items):
        path = ("snippets", index)
        item = _mapping(item, path, found)
        if item is None:
            continue
        found.unknown_fields(item, SNIPPET_FIELDS, path)
        key = item.get("key")
        try:
            snippet_key_check(key=key)
        except ValidationError as exc:
            found.from_validation(exc, path)
            continue
        if key in keys:
            found.add(path + ("key",), f"Duplicate key {key!r} (first at snippets[{keys[key]}], line "
                                      f"{found.marks.get(('snippets', keys[key]))}).")
            continue
        keys[key] = index
        fields = {SNIPPET_FIELD_MAP.get(name, name): item[name] for name in SNIPPET_FIELDS
                  if name in item and name != "key"}
        for required in ("title", "body", "category", "role"):
            fields.setdefault(required, None)
        try:
            content = snippet_content_clean(**fields)
        except ValidationError as exc:
            found.from_validation(exc, path, {"related_keys": "related"})
            continue
        if key in content["related_keys"]:
            found.add(path + ("related",), "A snippet cannot be related to itself.")
        specs.append(SnippetSpec(key=key, content=content, line=found.marks.get(path)))
    known = set(keys)
    for spec in specs:
        dangling = [item for item in spec.content["related_keys"] if item not in known]
        if dangling:
            found.add(("snippets", keys[spec.key], "related"),
                      f"Related key(s) not defined in this file: {', '.join(dangling)}.")
    return specs


def _parse_smoke_tests(value: Any, found: _Collector, snippets: list[SnippetSpec] | None) -> list[SmokeTestSpec]:
    known = {spec.key for spec in snippets or []}
    specs: list[SmokeTestSpec] = []
    queries: set[str] = set()
    for index, item in enumerate(_sequence(value, ("smoke_tests",), found) or []):
        path = ("smoke_tests", index)
        item = _mapping(item, path, found)
        if item is None:
            continue
        found.unknown_fields(item, SMOKE_FIELDS, path)
        query, expect = item.get("query"), item.get("expect")
        if not isinstance(query, str) or not query.strip() or len(query) > 500:
            found.add(path + ("query",), "Enter a query of 1-500 characters.")
            continue
        if not isinstance(expect, list) or not expect or not all(isinstance(key, str) for key in expect):
            found.add(path + ("expect",), "Expected a non-empty list of snippet keys.")
            continue
        if snippets is not None:
            dangling = [key for key in expect if key not in known]
            if dangling:
                found.add(path + ("expect",), f"Key(s) not defined in this file: {', '.join(dangling)}.")
                continue
        if query.strip() in queries:
            found.add(path + ("query",), f"Duplicate smoke test query {query.strip()!r}.")
            continue
        queries.add(query.strip())
        specs.append(SmokeTestSpec(query=query.strip(), expected_keys=tuple(expect)))
    return specs


# ----------------------------------------------------------------------------- applying

@dataclass
class SeedReport:
    """What applying a seed file changed (all zeros on a second run)."""

    versions_created: list[str] = field(default_factory=list)  # "key v3"
    reactivated: list[str] = field(default_factory=list)
    deactivated: list[str] = field(default_factory=list)
    unchanged: int = 0
    services_created: int = 0
    services_updated: int = 0
    services_deactivated: int = 0
    hours_changed: bool = False
    special_days_changed: int = 0
    smoke_tests_changed: int = 0
    embedded: int = 0
    embedding_error: str = ""
    new_version_ids: list[int] = field(default_factory=list)
    write_seconds: float = 0.0
    embed_seconds: float = 0.0

    @property
    def changed(self) -> bool:
        return bool(self.versions_created or self.reactivated or self.deactivated or self.services_created
                    or self.services_updated or self.services_deactivated or self.hours_changed
                    or self.special_days_changed or self.smoke_tests_changed)

    def summary(self) -> str:
        return (f"snippets: {len(self.versions_created)} new version(s), {len(self.reactivated)} reactivated, "
                f"{len(self.deactivated)} deactivated, {self.unchanged} unchanged; services: "
                f"{self.services_created} created, {self.services_updated} updated, {self.services_deactivated} "
                f"deactivated; hours changed: {'yes' if self.hours_changed else 'no'}; special days changed: "
                f"{self.special_days_changed}; smoke tests changed: {self.smoke_tests_changed}; "
                f"embedded: {self.embedded} (write {self.write_seconds:.1f}s, embed {self.embed_seconds:.1f}s)"
                + (f" (embedding failed, left pending: {self.embedding_error})"
                                                if self.embedding_error else ""))


def seed_apply(*, seed: SeedFile, embed: bool = True, embed_per_version: bool = False) -> SeedReport:
    """Apply a parsed seed file to the current schema in one transaction, then embed new versions in batches.

    `embed_per_version` queues one embedding task per version instead (the slow path, kept for the benchmark).
    """
    report = SeedReport()
    started = time.perf_counter()
    with transaction.atomic():
        if seed.snippets is not None:
            _apply_snippets(seed.snippets, report, queue_embedding=embed and embed_per_version)
        if seed.services is not None:
            _apply_services(seed.services, report)
        if seed.hours is not None:
            _apply_hours(seed.hours, report)
        if seed.smoke_tests is not None:
            _apply_smoke_tests(seed.smoke_tests, report)
    report.write_seconds = time.perf_counter() - started
    if embed and not embed_per_version:
        from knowledge.embeddings import EmbeddingError

        pending = list(SnippetVersion.objects.exclude(embedding_state=EmbeddingState.DONE)
                       .filter(pk__in=report.new_version_ids).values_list("pk", flat=True))
        try:
            # Naming the current model reads the embedding settings, which may be wrong: inside the try too.
            pending += list(stale_versions().exclude(pk__in=pending).values_list("pk", flat=True))
            report.embedded = snippet_versions_embed(version_ids=pending) if pending else 0
        except EmbeddingError as exc:
            # The knowledge is committed and keyword-searchable; the sweep task embeds it later.
            report.embedding_error = str(exc)
            logger.warning("seed: embeddings left pending: %s", exc)
    report.embed_seconds = time.perf_counter() - started - report.write_seconds
    return report


def _apply_snippets(specs: list[SnippetSpec], report: SeedReport, *, queue_embedding: bool) -> None:
    wanted = {spec.key for spec in specs}
    # One read for every key's history instead of one per snippet.
    history: dict[str, list[SnippetVersion]] = {}
    for row in (SnippetVersion.objects.defer(*SNIPPET_HEAVY_FIELDS).filter(key__in=wanted)
                .order_by("key", "-version")):
        history.setdefault(row.key, []).append(row)
    for spec in specs:
        versions = history.get(spec.key, [])
        active = next((v for v in versions if v.is_active), None)
        if active is not None and _content_of(active) == spec.content:
            report.unchanged += 1
            continue
        # A key the file brings back with content it already had (latest version): reactivate, no new version.
        latest = versions[0] if versions else None
        if latest is not None and _content_of(latest) == spec.content:
            snippet_version_activate(version=latest, enforce_release_gate=False, actor=SEED_ACTOR)
            report.reactivated.append(f"{spec.key} v{latest.version}")
            continue
        # The seed file is the reviewed artefact (an operator applies it), so the release gate does not apply.
        version = snippet_version_create(key=spec.key, **spec.content, enforce_release_gate=False,
                                         queue_embedding=queue_embedding, check_related=False, actor=SEED_ACTOR)
        report.versions_created.append(f"{spec.key} v{version.version}")
        report.new_version_ids.append(version.pk)
    for key in (SnippetVersion.objects.filter(is_active=True).exclude(key__in=wanted)
                .order_by("key").values_list("key", flat=True)):
        snippet_deactivate(key=key, actor=SEED_ACTOR)
        report.deactivated.append(key)


def _apply_services(specs: list[ServiceSpec], report: SeedReport) -> None:
    existing = {service.name: service for service in Service.objects.all()}
    for position, spec in enumerate(specs, start=1):
        before = existing.get(spec.name)
        if before is None:
            report.services_created += 1
        elif any(getattr(before, name) != getattr(spec, name) for name in
                 ("description", "duration_minutes", "price", "currency", "is_active")) or before.position != position:
            report.services_updated += 1
        service_upsert(name=spec.name, description=spec.description, duration_minutes=spec.duration_minutes,
                       price=spec.price, currency=spec.currency, is_active=spec.is_active, position=position,
                       actor=SEED_ACTOR)
    names = {spec.name for spec in specs}
    # Missing services are switched off, not deleted: past conversations may refer to them.
    missing = list(Service.objects.filter(is_active=True).exclude(name__in=names).order_by("name"))
    for service in missing:
        service_update(service=service, changes={"is_active": False}, actor=SEED_ACTOR)
    report.services_deactivated = len(missing)


def _apply_hours(hours: HoursSpec, report: SeedReport) -> None:
    if hours.weekly is not None:
        before = [(row.weekday, row.opens, row.closes) for row in OpeningHours.objects.order_by("weekday", "opens")]
        opening_hours_set_week(week={day: list(ranges) for day, ranges in hours.weekly.items()}, actor=SEED_ACTOR)
        after = [(row.weekday, row.opens, row.closes) for row in OpeningHours.objects.order_by("weekday", "opens")]
        report.hours_changed = before != after
    if hours.special is not None:
        current = {day.date: (day.note, tuple((r.opens, r.closes) for r in day.ranges.order_by("opens")))
                   for day in SpecialDay.objects.prefetch_related("ranges")}
        for spec in hours.special:
            if current.get(spec.date) != (spec.note, spec.ranges):
                special_day_set(date=spec.date, ranges=list(spec.ranges), note=spec.note, actor=SEED_ACTOR)
                report.special_days_changed += 1
        gone = list(SpecialDay.objects.exclude(date__in=[spec.date for spec in hours.special])
                    .values_list("date", flat=True))
        for date in gone:
            special_day_delete(date=date, actor=SEED_ACTOR)
        report.special_days_changed += 1 if gone else 0


def _apply_smoke_tests(specs: list[SmokeTestSpec], report: SeedReport) -> None:
    current = {test.query: tuple(test.expected_keys) for test in SmokeTest.objects.all()}
    for spec in specs:
        if current.get(spec.query) != spec.expected_keys:
            smoke_test_upsert(query=spec.query, expected_keys=list(spec.expected_keys))
            report.smoke_tests_changed += 1
    wanted = {spec.query for spec in specs}
    for query in current:
        if query not in wanted and smoke_test_delete(query=query):
            report.smoke_tests_changed += 1


def seed_tenant_ensure(*, spec: TenantSpec | None, schema: str | None = None):
    """Return (tenant, created) for `schema` (default: the file's), creating it from the file's tenant block."""
    from ratiba.models import Tenant
    from ratiba.services import PlatformError, tenant_create, tenant_profile_update

    schema = schema or (spec.schema if spec else None)
    if not schema:
        raise PlatformError("No tenant: give --tenant SCHEMA or a `tenant:` block with a schema.")
    existing = Tenant.objects.filter(schema_name=schema).first()
    if existing is not None:
        if spec is not None and spec.schema == schema:
            tenant_profile_update(tenant=existing, name=spec.name, timezone_name=spec.timezone,
                                  languages=list(spec.languages), currency=spec.currency)
        return existing, False
    if spec is None:
        raise PlatformError(f"Tenant {schema!r} does not exist and the file has no `tenant:` block to create it.")
    # Another schema than the file's gets its own host, so the file's domain is not claimed twice.
    domain = spec.domain if spec.schema == schema else f"{schema.replace('_', '-')}.localhost"
    return tenant_create(schema=schema, name=spec.name, domain=domain, timezone_name=spec.timezone,
                         languages=list(spec.languages), currency=spec.currency)


# ----------------------------------------------------------------------------- export

class _LiteralStr(str):
    pass


class _SeedDumper(yaml.SafeDumper):
    pass


_SeedDumper.add_representer(_LiteralStr, lambda dumper, value: dumper.represent_scalar(
    "tag:yaml.org,2002:str", value, style="|"))
_SeedDumper.add_representer(Decimal, lambda dumper, value: dumper.represent_str(f"{value:.2f}"))


def seed_export(*, tenant=None) -> str:
    """The current schema's knowledge in the seed format (active versions, in key creation order)."""
    data: dict[str, Any] = {}
    if tenant is not None:
        primary = tenant.get_primary_domain()
        data["tenant"] = {"schema": tenant.schema_name, "name": tenant.name,
                          "domain": primary.domain if primary else "", "languages": list(tenant.languages or ["en"]),
                          "timezone": tenant.timezone, "currency": tenant.currency}
    data["services"] = [
        {"name": s.name, "description": s.description,
         **({} if s.duration_minutes is None else {"duration_minutes": s.duration_minutes}), "price": s.price,
         "currency": s.currency, **({} if s.is_active else {"active": False})}
        for s in Service.objects.order_by("position", "name")
    ]
    weekly: dict[str, list[str]] = {name: [] for name in WEEKDAYS}
    for row in OpeningHours.objects.order_by("weekday", "opens"):
        weekly[WEEKDAYS[row.weekday]].append(f"{row.opens:%H:%M}-{row.closes:%H:%M}")
    data["hours"] = {
        "weekly": weekly,
        "special": [{"date": day.date, "hours": [f"{r.opens:%H:%M}-{r.closes:%H:%M}" for r in day.ranges.order_by("opens")],
                     "note": day.note} for day in SpecialDay.objects.prefetch_related("ranges").order_by("date")],
    }
    snippets = []
    actives = (SnippetVersion.objects.filter(is_active=True).defer(*SNIPPET_HEAVY_FIELDS)
               .select_related("snippet").order_by("snippet_id"))
    for version in actives:
        item: dict[str, Any] = {"key": version.key, "category": version.category, "role": version.role,
                                "title": version.title, "body": _LiteralStr(version.body + "\n"),
                                "language": version.language, "channels": list(version.channels),
                                "tags": list(version.tags), "status": version.status}
        if version.related_keys:
            item["related"] = list(version.related_keys)
        for name in ("notes", "valid_from", "valid_until", "last_reviewed_at"):
            if getattr(version, name):
                item[name] = getattr(version, name)
        if version.translations:
            item["translations"] = {language: {"title": text.get("title", ""),
                                               "body": _LiteralStr(text.get("body", "") + "\n")}
                                    for language, text in version.translations.items()}
        snippets.append(item)
    data["snippets"] = snippets
    data["smoke_tests"] = [{"query": t.query, "expect": list(t.expected_keys)} for t in SmokeTest.objects.order_by("id")]
    return yaml.dump(data, Dumper=_SeedDumper, sort_keys=False, allow_unicode=True, default_flow_style=None,
                     width=120)

