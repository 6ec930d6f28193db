"""WhatsApp Cloud API webhook bodies: the signature check and a tolerant reading into dataclasses.

Meta adds fields and message types over time: anything unknown is kept as its type name and never raises.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import hmac
from dataclasses import dataclass, field

SIGNATURE_HEADER = "X-Hub-Signature-256"
# Types answered with a short "I can only read text" reply; reactions and anything else are only recorded.
MEDIA_KINDS = frozenset({"image", "audio", "video", "document", "location", "sticker", "contacts", "voice"})


def signature_valid(*, raw_body: bytes, header: str, app_secret: str) -> bool:
    """`X-Hub-Signature-256: sha256=<hex>` is the HMAC-SHA256 of the raw body with the app secret."""
    if not (header and app_secret and header.startswith("sha256=")):
        return False
    expected = hmac.new(app_secret.encode(), raw_body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, header.removeprefix("sha256=").strip().lower())


def signature_for(*, raw_body: bytes, app_secret: str) -> str:
    """The header value Meta would send (for tests, the bench and the stand-in sender)."""
    return "sha256=" + hmac.new(app_secret.encode(), raw_body, hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class InboundMessage:
    wamid: str
    wa_id: str
    kind: str
    text: str  # the body of a text, the caption of media, the emoji of a reaction, "" otherwise
    timestamp: dt.datetime | None
    profile_name: str = ""
    reply_to_wamid: str = ""  # a reaction's target, or the message a reply quotes


@dataclass(frozen=True)
class StatusUpdate:
    wamid: str
    status: str
    recipient: str
    timestamp: dt.datetime | None
    errors: list = field(default_factory=list)


@dataclass(frozen=True)
class Change:
    """One `entry[].changes[]` of field `messages`, for one business number."""

    phone_number_id: str
    messages: list[InboundMessage]
    statuses: list[StatusUpdate]


def _timestamp(value) -> dt.datetime | None:
    try:
        return dt.datetime.fromtimestamp(int(value), tz=dt.timezone.utc)
    except (TypeError, ValueError, OverflowError, OSError):
        return None


def _text_of(message: dict, kind: str) -> str:
    part = message.get(kind)
    if not isinstance(part, dict):
        return ""
    if kind == "text":
        return str(part.get("body") or "")
    if kind == "reaction":
        return str(part.get("emoji") or "")
    if kind == "location":
        return " ".join(str(part[k]) for k in ("name", "address") if part.get(k))
    if kind == "button":
        return str(part.get("text") or "")
    return str(part.get("caption") or "")


def _message(raw: dict, names: dict[str, str]) -> InboundMessage | None:
    wamid, sender = raw.get("id"), raw.get("from")
    if not (isinstance(wamid, str) and wamid and isinstance(sender, str) and sender):
        return None
    kind = str(raw.get("type") or "unknown")[:24]
    target = ""
    if kind == "reaction" and isinstance(raw.get("reaction"), dict):
        target = str(raw["reaction"].get("message_id") or "")
    elif isinstance(raw.get("context"), dict):
        target = str(raw["context"].get("id") or "")
    return InboundMessage(wamid=wamid[:200], wa_id=sender[:32], kind=kind, text=_text_of(raw, kind)[:4096],
                          timestamp=_timestamp(raw.get("timestamp")), profile_name=names.get(sender, "")[:200],
                          reply_to_wamid=target[:200])


def _status(raw: dict) -> StatusUpdate | None:
    wamid, status = raw.get("id"), raw.get("status")
    if not (isinstance(wamid, str) and wamid and isinstance(status, str) and status):
        return None
    errors = raw.get("errors") if isinstance(raw.get("errors"), list) else []
    return StatusUpdate(wamid=wamid[:200], status=status[:16], recipient=str(raw.get("recipient_id") or ""),
                        timestamp=_timestamp(raw.get("timestamp")), errors=errors[:5])


def _dicts(value) -> list[dict]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def changes_read(payload) -> list[Change]:
    """Every `messages` change of a delivery, with what could be read of it (malformed parts are skipped)."""
    if not isinstance(payload, dict):
        return []
    changes: list[Change] = []
    for entry in _dicts(payload.get("entry")):
        for change in _dicts(entry.get("changes")):
            value = change.get("value")
            if change.get("field") != "messages" or not isinstance(value, dict):
                continue
            metadata = value.get("metadata") if isinstance(value.get("metadata"), dict) else {}
            number = str(metadata.get("phone_number_id") or "")
            if not number:
                continue
            names = {str(c.get("wa_id")): str((c.get("profile") or {}).get("name") or "")
                     for c in _dicts(value.get("contacts")) if isinstance(c.get("profile") or {}, dict)}
            messages = [m for m in (_message(raw, names) for raw in _dicts(value.get("messages"))) if m]
            statuses = [s for s in (_status(raw) for raw in _dicts(value.get("statuses"))) if s]
            changes.append(Change(phone_number_id=number, messages=messages, statuses=statuses))
    return changes


def phone_number_ids(payload) -> set[str]:
    """The business numbers a delivery names (to pick the app secrets its signature may be made with)."""
    return {change.phone_number_id for change in changes_read(payload)}
