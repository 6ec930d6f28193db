"""Chat REST API: turns (JSON and Server-Sent Events) and a session's knowledge bases (ADD_KB / CLEAR_KB)."""
from __future__ import annotations

import functools
import json
import logging
from collections.abc import Iterator

from django.conf import settings
from django.http import HttpResponse, StreamingHttpResponse
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.throttling import BaseThrottle
from rest_framework.views import APIView

from conversations import selectors, services
from conversations.serializers import (SessionCollectionInput, SessionCollectionsOutput, TurnInput, TurnOutput)
from ratiba.api_errors import domain_error_response, error_body
from ratiba.auth import ApiClient
from ratiba.models import KeyScope
from ratiba.ratelimit import rate_limit_hit

log = logging.getLogger(__name__)


# ----------------------------------------------------------------------------- shared helpers


class ApiKeyRateThrottle(BaseThrottle):
    """Per API key (or per signed-in owner), per tenant: API_RATE_LIMIT_PER_MINUTE requests a minute; a chat
    key's visitors (address and session) each get CHAT_KEY_RATE_LIMIT_PER_VISITOR_PER_MINUTE as well."""

    def allow_request(self, request, view) -> bool:
        user = request.user
        if isinstance(user, ApiClient):
            bucket = f"key:{user.api_key.prefix}"
            if user.api_key.scope == KeyScope.CHAT and not self._visitor_allowed(request, user.api_key.prefix):
                # Refused before the key's own count: one abusive visitor cannot spend everyone's budget.
                return False
        elif getattr(user, "is_authenticated", False):
            bucket = f"user:{user.pk}"
        else:
            bucket = f"ip:{self.get_ident(request)}"
        decision = rate_limit_hit(bucket=bucket, limit=settings.API_RATE_LIMIT_PER_MINUTE)
        self._retry_after = decision.retry_after
        return decision.allowed

    def _visitor_allowed(self, request, prefix: str) -> bool:
        limit = settings.CHAT_KEY_RATE_LIMIT_PER_VISITOR_PER_MINUTE
        # REMOTE_ADDR, not X-Forwarded-For: a header the visitor writes would let them pick a fresh bucket.
        buckets = [f"key:{prefix}:ip:{request.META.get('REMOTE_ADDR', 'unknown')}"]
        session_id = request.data.get("session_id") if hasattr(request.data, "get") else None
        if isinstance(session_id, str) and session_id:
            buckets.append(f"key:{prefix}:session:{session_id[:64]}")
        for bucket in buckets:
            decision = rate_limit_hit(bucket=bucket, limit=limit)
            if not decision.allowed:
                self._retry_after = decision.retry_after
                return False
        return True

    def wait(self) -> float:
        return float(getattr(self, "_retry_after", 60))


def turn_input_from(data: dict, *, api_key_prefix: str = "", started_by: str = "") -> services.TurnInput:
    return services.TurnInput(message=data["message"], session_id=data.get("session_id") or None,
                              channel=data.get("channel") or "chat", language=data.get("language") or "auto",
                              filters=data.get("filters"), api_key_prefix=api_key_prefix, started_by=started_by)


def turn_error_response(exc: services.TurnError) -> Response:
    """What the API handler answers a turn error with (for callers outside DRF's handler)."""
    return domain_error_response(exc)


def sse_event(event: str, data: dict) -> bytes:
    """One Server-Sent Event; the data is one line of JSON, so no line of it can end the event early."""
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False, separators=(',', ':'))}\n\n".encode()


def sse_body(stream: Iterator) -> Iterator[bytes]:
    """`delta` events, then one `final` event (or an `error` event); closing it stops the turn cleanly."""
    try:
        for item in stream:
            if isinstance(item, services.Delta):
                yield sse_event("delta", {"text": item.text})
            else:
                final = item.to_response()
                # The final answer is authoritative: when it differs from the deltas (an LLM answer that
                # failed a check was replaced), clients must show it instead of what they streamed.
                final["replaces_streamed_text"] = bool(item.meta.get("replaces_streamed_text"))
                yield sse_event("final", final)
    except Exception:  # noqa: BLE001 - headers are sent; say so in-band rather than cutting the stream
        log.exception("chat stream failed")
        yield sse_event("error", error_body("internal_error", "The answer could not be completed; please retry."))
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()  # a client that went away: the turn is stored as aborted


def sse_response(stream: Iterator) -> StreamingHttpResponse:
    response = StreamingHttpResponse(sse_body(stream), content_type="text/event-stream; charset=utf-8")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # no proxy buffering: deltas must arrive as they are written
    return response


def widget_cors(view):
    """Let the websites in CHAT_WIDGET_ORIGINS call a chat endpoint from the browser (the web widget)."""

    @functools.wraps(view)  # keeps `cls`, so the OpenAPI generator still sees the DRF view
    def wrapped(request, *args, **kwargs):
        origin = request.headers.get("Origin", "")
        allowed = origin and origin in getattr(settings, "CHAT_WIDGET_ORIGINS", [])
        if request.method == "OPTIONS" and allowed and request.headers.get("Access-Control-Request-Method"):
            response = HttpResponse(status=204)
            response["Access-Control-Allow-Methods"] = "POST, DELETE, OPTIONS"
            response["Access-Control-Allow-Headers"] = "Authorization, Content-Type, Accept"
            response["Access-Control-Max-Age"] = "600"
        else:
            response = view(request, *args, **kwargs)
        if allowed:
            response["Access-Control-Allow-Origin"] = origin
            response["Access-Control-Expose-Headers"] = "Retry-After"
        response["Vary"] = "Origin" if "Vary" not in response else f"{response['Vary']}, Origin"
        return response

    wrapped.csrf_exempt = True  # API-key requests carry no cookies
    return wrapped


# ----------------------------------------------------------------------------- examples for the docs

_REQUEST_EXAMPLES = [
    OpenApiExample("A new conversation", request_only=True,
                   value={"message": "Is there parking at the spa?", "channel": "whatsapp"}),
    OpenApiExample("Continue a session, in Swahili", request_only=True,
                   value={"message": "Mnafungua saa ngapi Jumapili?", "session_id": "s_3kQ9x1vXbZ0aPq7LmN2rT4uW",
                          "language": "auto"}),
    OpenApiExample("With retrieval filters", request_only=True,
                   value={"message": "What is your cancellation policy?", "filters": {"category": ["policy"]}}),
]
_ANSWER_EXAMPLE = {
    "session_id": "s_3kQ9x1vXbZ0aPq7LmN2rT4uW", "turn_id": "t_Xw2c9QeRk1Lm", "intent": "other",
    "answer": "Here is what I found: Free parking for guests is available in the basement of Mirage Tower. [1]",
    "citations": [{"ref": 1, "key": "parking", "version": 2, "title": "Parking", "score": 0.71,
                   "excerpt": "Free parking for guests is available in the basement of Mirage Tower.",
                   "last_reviewed_at": "2026-05-01", "source": "snippet", "location": {}}],
    "refusal_reason": None,
    "meta": {"mode": "inline", "provider": "extractive", "model": "extractive-1", "latency_ms": 38,
             "retrieved_count": 4, "prompt_tokens": 912, "cost_usd": 0.0, "language": "en", "trivial": False,
             "prompt_version": "1.1.0"},
}
_REFUSAL_EXAMPLE = {
    "session_id": "s_3kQ9x1vXbZ0aPq7LmN2rT4uW", "turn_id": "t_p0Lk2s8Wq1Za", "intent": "other",
    "answer": "I'm sorry, I don't have an answer to that yet. Please call or message us and the team will "
              "help you.",
    "citations": [], "refusal_reason": "no_relevant_context",
    "meta": {"mode": "hybrid", "provider": "none", "model": "", "latency_ms": 41, "retrieved_count": 0,
             "prompt_tokens": 0, "cost_usd": 0.0, "language": "en", "trivial": False, "prompt_version": "1.1.0"},
}
SSE_EVENT_SCHEMA = {
    "type": "object",
    "properties": {
        "event": {"type": "string", "enum": ["delta", "final", "error"]},
        "data": {"type": "string", "description": "One line of JSON: {\"text\"} for delta, the turn object for "
                                                  "final, {\"error\": {code, message}} for error."},
    },
    "required": ["event", "data"],
}
_ERRORS = {
    400: OpenApiResponse(description="Invalid fields: `{error: {code: invalid_request, message, fields}}`."),
    401: OpenApiResponse(description="Missing or invalid API key."),
    404: OpenApiResponse(description="Unknown `session_id` (code `session_not_found`)."),
    413: OpenApiResponse(description="Request body too large."),
    429: OpenApiResponse(description="Rate limited; see the `Retry-After` header (seconds)."),
}


# ----------------------------------------------------------------------------- views


class ChatTurnApi(APIView):
    """POST /api/v1/chat/turns/: answer one customer message."""

    throttle_classes = [ApiKeyRateThrottle]
    chat_key_allowed = True

    @extend_schema(
        operation_id="chat_turn_create", tags=["chat"], request=TurnInput, examples=_REQUEST_EXAMPLES + [
            OpenApiExample("Grounded answer", value=_ANSWER_EXAMPLE, response_only=True, status_codes=["200"]),
            OpenApiExample("Refusal (still a 200)", value=_REFUSAL_EXAMPLE, response_only=True,
                           status_codes=["200"])],
        responses={200: TurnOutput, **_ERRORS},
        description="A grounded answer with citations, or a typed refusal (`refusal_reason`, HTTP 200). "
                    "Bookings, cancellations and reschedules are recorded for the team to follow up.")
    def post(self, request):
        serializer = TurnInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        result = services.turn_run(turn_input_from(serializer.validated_data, api_key_prefix=request.auth.prefix))
        return Response(result.to_response(), status=status.HTTP_200_OK)


class ChatTurnStreamApi(APIView):
    """POST /api/v1/chat/turns/stream/: the same turn as Server-Sent Events."""

    throttle_classes = [ApiKeyRateThrottle]
    chat_key_allowed = True

    def perform_content_negotiation(self, request, force=False):
        # Clients send `Accept: text/event-stream`; errors before the stream starts are still JSON.
        renderer = JSONRenderer()
        return renderer, renderer.media_type

    @extend_schema(
        operation_id="chat_turn_stream", tags=["chat"], request=TurnInput, examples=_REQUEST_EXAMPLES,
        responses={(200, "text/event-stream"): OpenApiResponse(
            # OpenAPI 3.0: the schema of an event-stream describes one event (as SSE parsers read it).
            response=SSE_EVENT_SCHEMA,
            description="`event: delta` events (`data: {\"text\": \"...\"}`) as the answer is written, then one "
                        "`event: final` whose data is the same object the JSON endpoint returns, plus "
                        "`replaces_streamed_text` (when true, show `answer` instead of the deltas). A failure "
                        "after the stream started is an `event: error` with the usual error object.",
            examples=[OpenApiExample("Stream", value=(
                'event: delta\ndata: {"text":"Here is what I "}\n\n'
                'event: delta\ndata: {"text":"found: Free parking ..."}\n\n'
                'event: final\ndata: {"session_id":"s_3kQ9...","turn_id":"t_Xw2c...","intent":"other",'
                '"answer":"Here is what I found: Free parking ... [1]","citations":[...],'
                '"refusal_reason":null,"meta":{...},"replaces_streamed_text":false}\n\n'))]),
            **_ERRORS})
    def post(self, request):
        serializer = TurnInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        # Planning errors (an unknown session...) raise here, before the stream starts: a JSON 4xx.
        stream = services.turn_stream(turn_input_from(serializer.validated_data, api_key_prefix=request.auth.prefix))
        return sse_response(stream)


class SessionCollectionsApi(APIView):
    """ADD_KB / CLEAR_KB: which document collections a session's turns search."""

    throttle_classes = [ApiKeyRateThrottle]

    def _session(self, session_id: str):
        return selectors.session_get(public_id=session_id)

    @extend_schema(operation_id="session_collections_add", tags=["chat"], request=SessionCollectionInput,
                   responses={200: SessionCollectionsOutput, 400: _ERRORS[400], 404: OpenApiResponse(
                       description="Unknown session or collection.")},
                   examples=[OpenApiExample("ADD_KB", value={"collection": "wedding-packages"}, request_only=True)])
    def post(self, request, session_id: str):
        session = self._session(session_id)
        if session is None:
            return Response(error_body("session_not_found", f"No chat session {session_id!r} here."), status=404)
        serializer = SessionCollectionInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        names = services.session_collection_add(session=session, collection=serializer.validated_data["collection"])
        return Response({"session_id": session.public_id, "collections": names})

    @extend_schema(operation_id="session_collections_clear", tags=["chat"],
                   parameters=[OpenApiParameter("collection", str, description="Clear only this collection; "
                                                "omit to clear all (CLEAR_KB).")],
                   responses={200: SessionCollectionsOutput, 404: OpenApiResponse(description="Unknown session.")})
    def delete(self, request, session_id: str):
        session = self._session(session_id)
        if session is None:
            return Response(error_body("session_not_found", f"No chat session {session_id!r} here."), status=404)
        name = request.query_params.get("collection") or None
        names = services.session_collection_clear(session=session, collection=name)
        return Response({"session_id": session.public_id, "collections": names})
