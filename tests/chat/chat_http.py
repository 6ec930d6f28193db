"""The chat tests' HTTP helpers: a session of turns and an SSE reader."""
from __future__ import annotations

import json
from dataclasses import dataclass


def ask(chat, *messages: str) -> list[dict]:
    """Send the messages in one session; the response bodies in order."""
    bodies, session_id = [], None
    for message in messages:
        payload = {"message": message} if session_id is None else {"message": message, "session_id": session_id}
        response = chat(**payload)
        assert response.status_code == 200, response.content
        bodies.append(response.json())
        session_id = bodies[-1]["session_id"]
    return bodies


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
