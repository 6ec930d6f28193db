"""Masking of phone numbers and e-mail addresses in what the platform stores (REDACT_STORED_MESSAGES).

Only stored copies are masked: the customer's live answer, and the contact a hand-off keeps so the business
can call back, are never changed. Pure functions; callers decide what is stored text.
"""
from __future__ import annotations

import re

from django.conf import settings

EMAIL_MASK = "[email]"
PHONE_MASK = "[phone]"

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
# 9 to 15 digits, optionally with a leading + or (, separated by at most two of space . - ( ) between digits:
# +254 712 345 678, 0712-345-678, (020) 123 4567. Dates (8 digits), times, prices and durations stay.
_PHONE = re.compile(r"(?<![\w+(])[+(]?\d(?:[\s().-]{0,2}\d){8,14}(?![\w])")
# Payload keys of telemetry events that carry a customer's (or an LLM's) free text.
TEXT_KEYS = frozenset({"question", "message", "query", "text", "excerpt", "answer", "unsupported"})


def redact_contacts(text: str) -> str:
    """`text` with every e-mail address and phone number replaced by a placeholder."""
    if not text:
        return text
    return _PHONE.sub(PHONE_MASK, _EMAIL.sub(EMAIL_MASK, text))


def redaction_enabled() -> bool:
    return bool(getattr(settings, "REDACT_STORED_MESSAGES", False))


def stored_text(text: str) -> str:
    """The form of `text` to store: masked when REDACT_STORED_MESSAGES is on, else unchanged."""
    return redact_contacts(text) if redaction_enabled() and isinstance(text, str) else text


def stored_payload(payload: dict) -> dict:
    """An event payload to store: its free-text values masked when redaction is on (ids and numbers kept)."""
    if not redaction_enabled():
        return payload
    clean = dict(payload)
    for key in TEXT_KEYS.intersection(clean):
        value = clean[key]
        if isinstance(value, str):
            clean[key] = redact_contacts(value)
        elif isinstance(value, (list, tuple)):
            clean[key] = [redact_contacts(item) if isinstance(item, str) else item for item in value]
    return clean
