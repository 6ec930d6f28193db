"""The chat tests' HTTP helpers: the shared loopback server (live_http.serve) and an SSE reader."""
from __future__ import annotations

import json
from dataclasses import dataclass

from live_http import serve  # noqa: F401 (re-exported for the chat tests)


@dataclass
class SseEvent:
    event: str
    data: dict


def read_events(lines) -> list[SseEvent]:
    """Parse Server-Sent Events from an iterator of text lines (as httpx's iter_lines yields them)."""
    events: list[SseEvent] = []
    name, data = "message", []
    for line in lines:
        if line == "":
            if data:
                events.append(SseEvent(event=name, data=json.loads("\n".join(data))))
            name, data = "message", []
        elif line.startswith("event:"):
            name = line[len("event:"):].strip()
        elif line.startswith("data:"):
            data.append(line[len("data:"):].lstrip())
    if data:
        events.append(SseEvent(event=name, data=json.loads("\n".join(data))))
    return events
