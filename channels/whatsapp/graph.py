"""The Graph API send-message call: one pooled httpx client, explicit timeouts, retries with backoff on 429/5xx.

Errors say whether to retry (`GraphError.retryable`). The access token travels only in the Authorization
header; nothing here logs it or the request body.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

import httpx
from django.conf import settings

log = logging.getLogger(__name__)

# Meta's codes that mean "not now, later may work" (rate limits, temporary errors) besides HTTP 429/5xx.
_RETRYABLE_CODES = {"4", "80007", "130429", "131016", "131048", "131056", "133004", "2"}
OUTSIDE_WINDOW = "131047"
MAX_BODY_CHARS = 4096  # Meta's limit for a text message body

_client: httpx.Client | None = None
_transport: httpx.BaseTransport | None = None
_lock = threading.Lock()


@dataclass(frozen=True)
class Sent:
    wamid: str
    attempts: int


class GraphError(Exception):
    """A send that failed; `retryable` says whether trying again later may work."""

    def __init__(self, message: str, *, code: str, retryable: bool, attempts: int = 1, status: int = 0):
        super().__init__(message)
        self.code = code
        self.retryable = retryable
        self.attempts = attempts
        self.status = status


def use_transport(transport: httpx.BaseTransport | None) -> None:
    """Point the client at another transport (tests and the bench use a mocked or loopback Graph API)."""
    global _client, _transport
    with _lock:
        if _client is not None:
            _client.close()
        _client, _transport = None, transport


def _http() -> httpx.Client:
    global _client
    with _lock:
        if _client is None:
            timeout = httpx.Timeout(settings.WHATSAPP_TIMEOUT_SECONDS, connect=min(5.0, settings.WHATSAPP_TIMEOUT_SECONDS))
            _client = httpx.Client(timeout=timeout, transport=_transport,
                                   limits=httpx.Limits(max_connections=20, max_keepalive_connections=10))
        return _client


def messages_url(phone_number_id: str) -> str:
    return f"{settings.WHATSAPP_GRAPH_URL}/{settings.WHATSAPP_GRAPH_VERSION}/{phone_number_id}/messages"


def text_payload(*, to: str, body: str, reply_to_wamid: str = "") -> dict:
    """The documented send-text request (tests/channels/payloads/send_text_request.json)."""
    payload = {"messaging_product": "whatsapp", "recipient_type": "individual", "to": to, "type": "text",
               "text": {"preview_url": False, "body": body[:MAX_BODY_CHARS]}}
    if reply_to_wamid:
        payload["context"] = {"message_id": reply_to_wamid}
    return payload


def _error_of(response: httpx.Response, attempts: int) -> GraphError:
    try:
        error = response.json().get("error") or {}
    except ValueError:
        error = {}
    code = str(error.get("code") or response.status_code)
    message = str(error.get("message") or f"HTTP {response.status_code}")[:250]
    retryable = response.status_code == 429 or response.status_code >= 500 or code in _RETRYABLE_CODES
    return GraphError(message, code=code, retryable=retryable, attempts=attempts, status=response.status_code)


def _pause(attempt: int, response: httpx.Response | None) -> float:
    base = settings.WHATSAPP_RETRY_BASE_SECONDS * (2 ** (attempt - 1))
    retry_after = response.headers.get("Retry-After") if response is not None else None
    if retry_after and retry_after.isdigit():
        base = max(base, float(retry_after))
    return min(base, 30.0)


def send_text(*, phone_number_id: str, token: str, to: str, body: str, reply_to_wamid: str = "") -> Sent:
    """Send a text message; retries 429/5xx/network errors WHATSAPP_SEND_ATTEMPTS times, then raises GraphError."""
    attempts = max(1, settings.WHATSAPP_SEND_ATTEMPTS)
    payload = text_payload(to=to, body=body, reply_to_wamid=reply_to_wamid)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    last: GraphError | None = None
    for attempt in range(1, attempts + 1):
        response = None
        try:
            response = _http().post(messages_url(phone_number_id), json=payload, headers=headers)
        except httpx.HTTPError as exc:
            last = GraphError(f"{type(exc).__name__}: could not reach the Graph API", code="network",
                              retryable=True, attempts=attempt)
        else:
            if response.status_code < 300:
                try:
                    wamid = str(response.json()["messages"][0]["id"])
                except (ValueError, KeyError, IndexError, TypeError):
                    raise GraphError("The Graph API accepted the message but returned no message id.",
                                     code="bad_response", retryable=False, attempts=attempt) from None
                return Sent(wamid=wamid, attempts=attempt)
            last = _error_of(response, attempt)
            if not last.retryable:
                raise last
        log.warning("whatsapp send attempt %s/%s failed: %s (%s)", attempt, attempts, last.code, last)
        if attempt < attempts:
            time.sleep(_pause(attempt, response))
    assert last is not None
    raise last
