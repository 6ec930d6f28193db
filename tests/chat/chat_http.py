"""A real HTTP server on a free loopback port for the chat tests (SSE and browser), plus an SSE reader."""
from __future__ import annotations

import json
import threading
from contextlib import contextmanager
from dataclasses import dataclass

from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler


class QuietHandler(WSGIRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the stdlib's name
        pass


@contextmanager
def serve():
    """Serve the project's WSGI app in a thread; yields the port. Hosts route to tenants as in production."""
    from ratiba.wsgi import application

    server = ThreadedWSGIServer(("127.0.0.1", 0), QuietHandler)
    server.set_app(application)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


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
