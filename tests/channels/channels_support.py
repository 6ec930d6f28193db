"""Builders for the channel tests: documented payloads, signatures, a stand-in Graph API."""
from __future__ import annotations

import copy
import itertools
import json
import time
from pathlib import Path

import httpx
from django_tenants.utils import schema_context

from channels.models import WhatsAppMessage
from channels.whatsapp.payloads import signature_for

# Copies of the Cloud API documentation's payload shapes, kept with the tests so a checkout is self-contained.
PAYLOADS = Path(__file__).resolve().parent / "payloads"
PHONE_NUMBER_ID = "106540352242922"
CUSTOMER = "254722333444"
APP_SECRET = "app-secret-for-tests"
TOKEN = "EAAG-test-access-token"
VERIFY_TOKEN = "verify-me-please"
SCHEMA = "test_tenant"


def rows(**filters) -> list[WhatsAppMessage]:
    """The test tenant's WhatsApp messages matching `filters`, oldest first."""
    with schema_context(SCHEMA):
        return list(WhatsAppMessage.objects.filter(**filters).order_by("id"))


def documented(name: str, *, fresh: bool = True) -> dict:
    """One of the documented payloads in payloads/, its message timestamps moved to now unless
    fresh=False (the files' own timestamps are long past: a reply to them is outside the 24-hour window)."""
    body = json.loads((PAYLOADS / f"{name}.json").read_text())
    if fresh:
        for entry in body["entry"]:
            for change in entry["changes"]:
                for message in change["value"].get("messages", []):
                    message["timestamp"] = str(int(time.time()))
    return body


_ids = itertools.count(1)


def message_delivery(kind: str = "text", *, text: str = "", wamid: str | None = None, wa_id: str = CUSTOMER,
                     timestamp: int | None = None, **part) -> dict:
    """The documented text delivery with its message replaced by one of `kind` (ids unique per call)."""
    body = documented("text_message")
    value = body["entry"][0]["changes"][0]["value"]
    message = value["messages"][0]
    message.update({"id": wamid or f"wamid.TEST{next(_ids):06d}", "from": wa_id, "type": kind})
    value["contacts"][0]["wa_id"] = wa_id
    if timestamp is not None:
        message["timestamp"] = str(timestamp)
    else:
        message["timestamp"] = str(int(time.time()))
    if kind == "text":
        message["text"] = {"body": text}
    else:
        message.pop("text", None)
        message[kind] = part or {}
    return body


def status_delivery(wamid: str, status: str, **extra) -> dict:
    body = copy.deepcopy(documented("status_delivered"))
    row = body["entry"][0]["changes"][0]["value"]["statuses"][0]
    row.update({"id": wamid, "status": status, **extra})
    return body


def post_delivery(client, body, *, secret: str | None = None, signature: str | None = None):
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    header = signature if signature is not None else signature_for(raw_body=raw, app_secret=secret or APP_SECRET)
    return client.post("/webhooks/whatsapp/", data=raw, content_type="application/json",
                       HTTP_X_HUB_SIGNATURE_256=header)


class FakeGraph:
    """Answers send-message calls: queued responses first, then 200 with a fresh message id."""

    def __init__(self):
        self.requests: list[dict] = []
        self.queued: list[tuple[int, dict]] = []
        self.count = itertools.count(1)

    def respond(self, status: int, body: dict | None = None, times: int = 1) -> None:
        self.queued += [(status, body or {})] * times

    def transport(self) -> httpx.MockTransport:
        def handler(request: httpx.Request) -> httpx.Response:
            self.requests.append({"url": str(request.url), "auth": request.headers.get("Authorization"),
                                  "json": json.loads(request.content)})
            if self.queued:
                status, body = self.queued.pop(0)
                return httpx.Response(status, json=body)
            wamid = f"wamid.OUT{next(self.count):06d}"
            return httpx.Response(200, json={"messaging_product": "whatsapp",
                                             "contacts": [{"input": "x", "wa_id": "x"}], "messages": [{"id": wamid}]})

        return httpx.MockTransport(handler)

    @property
    def texts(self) -> list[str]:
        return [r["json"]["text"]["body"] for r in self.requests]
