"""Test material for answer shaping: a small spa's knowledge, and mocked Anthropic/OpenAI HTTP transports
that speak the real wire formats (JSON bodies, SSE event streams, error bodies)."""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import httpx2

from conversations.prompting import CoreSection
from knowledge.retrieval.types import RetrievedSnippet

# ----------------------------------------------------------------------------- knowledge


def snippet(key: str, body: str, *, title: str | None = None, version: int = 1, score: float = 0.8,
            category: str = "general", last_reviewed_at: str | None = "2026-05-01") -> RetrievedSnippet:
    return RetrievedSnippet(key=key, version=version, title=title or key.replace("_", " ").title(), body=body,
                            category=category, score=score, match_type="hybrid", token_count=len(body) // 4,
                            similarity=score, last_reviewed_at=last_reviewed_at)


PARKING = snippet("parking", "Free parking is available for guests in the basement for up to 3 hours. "
                  "Enter from Rhapta Road and bring your ticket to reception to be validated.",
                  title="Parking", version=3, score=0.91, category="facility")
CANCELLATION = snippet("cancellation_policy", "You can cancel free of charge up to 12 hours before your "
                       "appointment. Cancellations made later are charged 50% of the treatment price, and "
                       "no-shows are charged in full.", title="Cancellation policy", version=2, score=0.62,
                       category="policy")
DEPOSIT = snippet("deposit_policy", "A 30% deposit is required for couples massages and bookings worth KES 10,000 "
                  "or more. Pay the deposit by M-Pesa to Till 5123987 within 2 hours of booking.",
                  title="Deposits", version=1, score=0.55, category="policy")
ARRIVE = snippet("arrive_early", "Please arrive 15 minutes before your appointment to check in. On your first "
                 "visit, allow 20 minutes.", title="How early to arrive", version=4, score=0.4, category="prep")

GUARDRAIL = CoreSection(key="guardrail_no_medical_advice", version=2, role="guardrail",
                        title="No medical advice",
                        body="Never diagnose, treat or give medical advice to any guest under any circumstances. "
                             "Suggest they check with their own doctor before booking a treatment.")
GUARDRAIL_SECRET = CoreSection(key="guardrail_escalation", version=1, role="guardrail", title="Escalation",
                               body="Hand complaints to the manager Wanjiru, who calls back within two working "
                                    "hours on the private line. Never argue with or blame an upset guest.")
BEHAVIOUR = CoreSection(key="behaviour_voice", version=5, role="behaviour", title="Voice",
                        body="You are Savannah, the calm and welcoming receptionist of the spa. Keep replies under "
                             "eighty words and end with one clear next step for the guest.")
CORE = (GUARDRAIL, GUARDRAIL_SECRET, BEHAVIOUR)


# ----------------------------------------------------------------------------- hosted providers


def hosted(name: str, server: "MockServer", *, api_key: str = "sk-test", model: str | None = None,
           max_retries: int = 0, **options):
    """A hosted answer provider whose real SDK client talks to `server` (built once, like any configuration)."""
    from django.conf import settings

    from conversations.providers import HostedProvider
    from llm import LlmConfig

    model = model or getattr(settings, f"{name.upper()}_MODEL")
    return HostedProvider(LlmConfig(provider=name, api_key=api_key, model=model, max_retries=max_retries,
                                    http_client=server.client(), **options))


# ----------------------------------------------------------------------------- HTTP mocks


@dataclass
class MockServer:
    """Answers each request with the next queued reply (a Response or a callable); records requests."""

    replies: list = field(default_factory=list)
    requests: list[httpx2.Request] = field(default_factory=list)

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        request.read()
        self.requests.append(request)
        if not self.replies:
            raise AssertionError(f"unexpected request {request.method} {request.url}")
        reply = self.replies.pop(0)
        return reply(request) if callable(reply) else reply

    def client(self) -> httpx2.Client:
        return httpx2.Client(transport=httpx2.MockTransport(self.handler))

    def body(self, index: int = -1) -> dict:
        return json.loads(self.requests[index].content)


def sse(events: Iterable[tuple[str | None, object]]) -> bytes:
    """Server-Sent Events bytes: (event name or None, data as JSON-able or a raw string)."""
    out = []
    for name, data in events:
        text = data if isinstance(data, str) else json.dumps(data)
        out.append((f"event: {name}\n" if name else "") + f"data: {text}\n\n")
    return "".join(out).encode()


def stream_response(body: bytes | Iterator[bytes], *, status: int = 200) -> httpx2.Response:
    return httpx2.Response(status, headers={"content-type": "text/event-stream"}, content=body)


def broken_stream(first: bytes, exc: Exception) -> Iterator[bytes]:
    """A response body that sends `first` and then fails (a dropped or stalled connection)."""
    yield first
    raise exc


# ----------------------------------------------------------------------------- Anthropic wire format

ANTHROPIC_MODEL = "claude-haiku-4-5-20251001"


def anthropic_message(text: str, *, input_tokens: int = 1200, output_tokens: int = 60, cache_read: int = 0,
                      cache_write: int = 0, model: str = ANTHROPIC_MODEL) -> httpx2.Response:
    return httpx2.Response(200, json={
        "id": "msg_01", "type": "message", "role": "assistant", "model": model,
        "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                  "cache_creation_input_tokens": cache_write, "cache_read_input_tokens": cache_read}})


def anthropic_events(pieces: list[str], *, input_tokens: int = 800, output_tokens: int = 42, cache_read: int = 0,
                     finish: bool = True, model: str = ANTHROPIC_MODEL) -> list[tuple[str, dict]]:
    events: list[tuple[str, dict]] = [
        ("message_start", {"type": "message_start", "message": {
            "id": "msg_02", "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": 1, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": cache_read}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("ping", {"type": "ping"}),
    ]
    events += [("content_block_delta", {"type": "content_block_delta", "index": 0,
                                        "delta": {"type": "text_delta", "text": piece}}) for piece in pieces]
    if finish:
        events += [
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                               "usage": {"output_tokens": output_tokens}}),
            ("message_stop", {"type": "message_stop"}),
        ]
    return events


def anthropic_error(status: int, error_type: str, message: str = "boom", headers: dict | None = None
                    ) -> httpx2.Response:
    return httpx2.Response(status, headers=headers or {},
                           json={"type": "error", "error": {"type": error_type, "message": message}})


# ----------------------------------------------------------------------------- OpenAI wire format

OPENAI_MODEL = "gpt-4o-mini-2024-07-18"


def openai_completion(text: str, *, prompt_tokens: int = 1100, completion_tokens: int = 50, cached: int = 0,
                      model: str = OPENAI_MODEL) -> httpx2.Response:
    return httpx2.Response(200, json={
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1767225600, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text, "refusal": None},
                     "finish_reason": "stop", "logprobs": None}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens,
                  "prompt_tokens_details": {"cached_tokens": cached}}})


def openai_chunks(pieces: list[str], *, prompt_tokens: int = 900, completion_tokens: int = 30, finish: bool = True,
                  done: bool = True, with_usage: bool = True, model: str = OPENAI_MODEL) -> list[tuple[None, object]]:
    def chunk(delta: dict, finish_reason=None, usage=None, choices=True) -> dict:
        return {"id": "chatcmpl-2", "object": "chat.completion.chunk", "created": 1767225600, "model": model,
                "system_fingerprint": "fp_1",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}]
                if choices else [], "usage": usage}

    events: list[tuple[None, object]] = [(None, chunk({"role": "assistant", "content": ""}))]
    events += [(None, chunk({"content": piece})) for piece in pieces]
    if finish:
        events.append((None, chunk({}, finish_reason="stop")))
    if finish and with_usage:
        events.append((None, chunk({}, choices=False, usage={
            "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens, "prompt_tokens_details": {"cached_tokens": 0}})))
    if done:
        events.append((None, "[DONE]"))
    return events


def openai_error(status: int, message: str = "boom", code: str = "server_error") -> httpx2.Response:
    return httpx2.Response(status, json={"error": {"message": message, "type": code, "param": None, "code": code}})


def raise_timeout(request: httpx2.Request) -> httpx2.Response:
    raise httpx2.ReadTimeout("timed out", request=request)


Reply = httpx2.Response | Callable[[httpx2.Request], httpx2.Response]


# ----------------------------------------------------------------------------- database seed


def seed_spa(*, embed: bool = True) -> None:
    """A small spa in the current tenant: services, weekly hours and a few embedded snippets."""
    import datetime as dt
    from decimal import Decimal

    from knowledge.embeddings import embed_texts
    from knowledge.models import OpeningHours, Service, Snippet, SnippetVersion

    for position, (name, minutes, price) in enumerate([("Swedish Relaxation Massage", 60, "4500.00"),
                                                       ("Deep Tissue Massage", 60, "5500.00"),
                                                       ("Spa Pedicure", 60, "2800.00")]):
        Service.objects.create(name=name, duration_minutes=minutes, price=Decimal(price), currency="KES",
                               position=position, description=f"{name}.")
    for weekday in range(7):
        OpeningHours.objects.create(weekday=weekday, opens=dt.time(9), closes=dt.time(20))
    versions = []
    for item in (PARKING, CANCELLATION, DEPOSIT, ARRIVE):
        versions.append(SnippetVersion.objects.create(
            snippet=Snippet.objects.create(key=item.key), key=item.key, version=1, title=item.title,
            body=item.body, category=item.category, status="canonical", is_active=True,
            token_count=len(item.body.split()) * 4 // 3, last_reviewed_at=dt.date(2026, 5, 1)))
    if embed:
        for version, vector in zip(versions, embed_texts([f"{v.title}\n{v.body}" for v in versions])):
            version.embedding = vector
            version.embedding_state = "done"
            version.save(update_fields=["embedding", "embedding_state"])
