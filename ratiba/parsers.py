"""Request parsing: JSON nested absurdly deep is a 400, never a RecursionError (a 500).

Python's json module recurses once per level, so ~1,000 levels of `[` exhaust the stack inside a 64 KB
body. No field of the API nests more than a few levels, so anything deeper than MAX_JSON_DEPTH is refused
before a serializer (or a JSON column) sees it.
"""
from __future__ import annotations

from typing import Any

from rest_framework import parsers
from rest_framework.exceptions import ParseError

MAX_JSON_DEPTH = 32


def json_too_deep(value: Any, *, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether lists/dicts in `value` nest deeper than `limit` (checked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, plus a nesting limit."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type=media_type, parser_context=parser_context)
        except RecursionError:
            raise ParseError(f"JSON parse error - nested deeper than {MAX_JSON_DEPTH} levels.") from None
        if json_too_deep(data):
            raise ParseError(f"JSON parse error - nested deeper than {MAX_JSON_DEPTH} levels.")
        return data
