"""Answers as plain text for channels that show no Markdown (WhatsApp, email)."""
from __future__ import annotations

import re

_CITATION = re.compile(r"\s?\[\d{1,3}(?:\s*,\s*\d{1,3})*\]")
_LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^)\s]+)\)")
_EMPHASIS = re.compile(r"(\*\*|__)(.+?)\1|(?<![\w*])\*(?!\s)([^*\n]+?)(?<!\s)\*(?![\w*])|`([^`\n]+)`")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+", re.M)
_BULLET = re.compile(r"^\s*[-*•]\s+", re.M)
_BLANKS = re.compile(r"\n{3,}")


def plain_text(answer: str) -> str:
    """Markdown and [n] citation markers removed, bullets as •, blank lines collapsed."""
    text = _CITATION.sub("", answer or "")
    text = _LINK.sub(r"\1 (\2)", text)
    text = _EMPHASIS.sub(lambda m: m.group(2) or m.group(3) or m.group(4) or "", text)
    text = _HEADING.sub("", text)
    text = _BULLET.sub("• ", text)
    text = "\n".join(line.rstrip() for line in text.splitlines())
    return _BLANKS.sub("\n\n", text).strip()
