"""What a WhatsApp customer reads: plain text (no Markdown, no citation markers) and short canned replies."""
from __future__ import annotations

import re

from channels.plaintext import plain_text
from channels.whatsapp.graph import MAX_BODY_CHARS


def whatsapp_text(answer: str) -> str:
    """An answer as WhatsApp shows it: Markdown and [n] markers removed, bullets as •, within Meta's length."""
    text = plain_text(answer)
    if len(text) > MAX_BODY_CHARS:
        text = text[: MAX_BODY_CHARS - 1].rsplit(" ", 1)[0] + "…"
    return text


_CANNED = {
    "en": {
        "media": "Thanks for this. I can only read text messages, so please type your question and I'll answer it.",
        "stop": "You won't get any more messages from us here. Send START if you change your mind.",
        "start": "Welcome back. Send your question any time.",
    },
    "sw": {
        "media": "Asante. Ninaweza kusoma ujumbe wa maandishi tu, tafadhali andika swali lako nami nitakujibu.",
        "stop": "Hutapokea tena ujumbe kutoka kwetu hapa. Tuma START ukibadilisha nia.",
        "start": "Karibu tena. Tuma swali lako wakati wowote.",
    },
}

STOP_WORDS = frozenset({"stop", "stop all", "unsubscribe", "acha", "sitisha"})
START_WORDS = frozenset({"start", "subscribe", "anza"})


def canned_reply(kind: str, language: str) -> str:
    """A short fixed reply ("media", "stop", "start") in the customer's language."""
    return _CANNED["sw" if language == "sw" else "en"][kind]


def command_of(text: str) -> str:
    """'stop' or 'start' when a message is exactly an opt-out / opt-in word, else ''."""
    word = re.sub(r"[\s.!]+", " ", (text or "").strip().lower()).strip()
    if word in STOP_WORDS:
        return "stop"
    if word in START_WORDS:
        return "start"
    return ""
