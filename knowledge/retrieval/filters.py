"""Retrieval filters: category, tags, channel, collection, keys, updated_since."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from knowledge.models import Category, Channel

FILTER_NAMES = ("category", "tags", "channel", "collection", "keys", "updated_since")


class FilterError(ValueError):
    """Invalid filters; `fields` maps a filter name to its message."""

    def __init__(self, fields: dict[str, str]):
        super().__init__("; ".join(f"{name}: {message}" for name, message in fields.items()))
        self.fields = fields


@dataclass(frozen=True)
class Filters:
    """Cleaned filters. Lists mean "any of"; empty means no restriction."""

    categories: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    channels: tuple[str, ...] = ()
    collections: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()
    updated_since: dt.datetime | None = None
    extra: dict = field(default_factory=dict, compare=False)

    @property
    def snippet_only(self) -> bool:
        """Filters that only snippets carry (document chunks have no category, tags or key)."""
        return bool(self.categories or self.tags or self.keys)

    @property
    def is_empty(self) -> bool:
        return not (self.categories or self.tags or self.channels or self.collections or self.keys
                    or self.updated_since)

    def as_dict(self) -> dict:
        data = {"category": list(self.categories), "tags": list(self.tags), "channel": list(self.channels),
                "collection": list(self.collections), "keys": list(self.keys),
                "updated_since": self.updated_since.isoformat() if self.updated_since else None}
        return {name: value for name, value in data.items() if value}


def _str_list(value, name: str, errors: dict[str, str], *, max_items: int = 50) -> tuple[str, ...]:
    if value in (None, "", []):
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(item, str) and item.strip() for item in items):
        errors[name] = "Must be a string or a list of non-empty strings."
        return ()
    if len(items) > max_items:
        errors[name] = f"At most {max_items} values."
        return ()
    if any("\x00" in item for item in items):
        # PostgreSQL text cannot hold NUL: refuse it here rather than fail in the query.
        errors[name] = "Null characters are not allowed."
        return ()
    return tuple(dict.fromkeys(item.strip() for item in items))


def _since(value, errors: dict[str, str]) -> dt.datetime | None:
    if value in (None, ""):
        return None
    if isinstance(value, dt.datetime):
        moment = value
    elif isinstance(value, dt.date):
        moment = dt.datetime.combine(value, dt.time.min)
    elif isinstance(value, str):
        moment = parse_datetime(value)
        if moment is None:
            day = parse_date(value) if len(value) <= 10 else None
            moment = dt.datetime.combine(day, dt.time.min) if day else None
    else:
        moment = None
    if moment is None:
        errors["updated_since"] = "Must be an ISO date or date-time."
        return None
    return timezone.make_aware(moment, dt.timezone.utc) if timezone.is_naive(moment) else moment


def filters_clean(raw: dict | Filters | None) -> Filters:
    """Validate a filters mapping (API or caller); raises FilterError naming each bad filter."""
    if raw is None:
        return Filters()
    if isinstance(raw, Filters):
        return raw
    if not isinstance(raw, dict):
        raise FilterError({"filters": "Must be an object."})
    errors: dict[str, str] = {}
    unknown = sorted(set(raw) - set(FILTER_NAMES) - {"categories", "channels", "collections"})
    for name in unknown:
        errors[name] = f"Unknown filter; use one of: {', '.join(FILTER_NAMES)}."
    categories = _str_list(raw.get("category", raw.get("categories")), "category", errors)
    bad = [item for item in categories if item not in Category.values]
    if bad:
        errors["category"] = f"Unknown category {bad[0]!r}; use one of: {', '.join(Category.values)}."
    channels = _str_list(raw.get("channel", raw.get("channels")), "channel", errors)
    bad = [item for item in channels if item not in Channel.values]
    if bad:
        errors["channel"] = f"Unknown channel {bad[0]!r}; use one of: {', '.join(Channel.values)}."
    filters = Filters(
        categories=categories,
        tags=_str_list(raw.get("tags"), "tags", errors),
        channels=channels,
        collections=_str_list(raw.get("collection", raw.get("collections")), "collection", errors),
        keys=_str_list(raw.get("keys"), "keys", errors, max_items=200),
        updated_since=_since(raw.get("updated_since"), errors),
    )
    if errors:
        raise FilterError(errors)
    return filters
