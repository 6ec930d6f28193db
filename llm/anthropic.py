"""Anthropic Messages API plumbing: request arguments, reading replies and streams, mapping errors.

The system message goes in a system block, marked `cache_control: {"type": "ephemeral"}` when the caller
says it is the same for every tenant, so one cached prefix serves them all. 429, 5xx, 529 (overloaded),
timeouts and dropped connections are retryable; any other 4xx is not.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator

import anthropic

from llm.config import LlmConfig
from llm.errors import LlmError, malformed, status_error, transport_error
from llm.pricing import cost_usd
from llm.types import Completion, LlmRequest, TextDelta

NAME = "anthropic"
LABEL = "Anthropic"
_RETRYABLE_ERROR_TYPES = {"overloaded_error", "api_error", "rate_limit_error", "timeout_error"}


def error(exc: Exception) -> LlmError:
    """Translate an anthropic/httpx exception into an LlmError that says whether to retry."""
    known = transport_error(NAME, LABEL, exc, timeouts=(anthropic.APITimeoutError,),
                            connections=(anthropic.APIConnectionError,))
    if known is not None:
        return known
    if isinstance(exc, anthropic.APIStatusError):
        status = exc.status_code
        if status == 529:
            return LlmError(f"Anthropic overloaded: {exc}", retryable=True, provider=NAME, code="overloaded",
                            status_code=status)
        if status < 400:
            # An `error` event inside a 200 stream: its type says what happened.
            error_type = ((exc.body or {}).get("error") or {}).get("type") if isinstance(exc.body, dict) else None
            code = "overloaded" if error_type == "overloaded_error" else "stream_error"
            return LlmError(f"Anthropic stream error: {exc}", retryable=error_type in _RETRYABLE_ERROR_TYPES,
                            provider=NAME, code=code, status_code=status)
        return status_error(NAME, LABEL, exc, status)
    return malformed(NAME, LABEL, f"response unreadable: {type(exc).__name__}: {exc}")


def arguments(config: LlmConfig, request: LlmRequest, *, stream: bool) -> dict:
    """The Messages API arguments for a request."""
    block: dict = {"type": "text", "text": request.system}
    if request.cache_system:
        block["cache_control"] = {"type": "ephemeral"}
    args = {"model": config.model, "max_tokens": request.max_tokens, "system": [block],
            "messages": [{"role": "user", "content": request.user}]}
    return {**args, "stream": True} if stream else args


def send(client: anthropic.Anthropic, args: dict):
    return client.messages.create(**args)


def _completion(*, text: str, model: str, usage: dict, stop_reason: str) -> Completion:
    input_tokens = int(usage.get("input_tokens") or 0)
    output_tokens = int(usage.get("output_tokens") or 0)
    cache_read = int(usage.get("cache_read_input_tokens") or 0)
    cache_write = int(usage.get("cache_creation_input_tokens") or 0)
    return Completion(
        text=text, provider=NAME, model=model, input_tokens=input_tokens + cache_read + cache_write,
        output_tokens=output_tokens,
        cost_usd=cost_usd(provider=NAME, model=model, input_tokens=input_tokens, output_tokens=output_tokens,
                          cache_read_tokens=cache_read, cache_write_tokens=cache_write),
        cache_read_tokens=cache_read, cache_write_tokens=cache_write, stop_reason=stop_reason or "")


def read(config: LlmConfig, request: LlmRequest, message) -> Completion:
    """The text blocks of a Messages API reply joined, with usage and cost."""
    text = "".join(block.text for block in message.content if getattr(block, "type", "") == "text")
    usage = message.usage.model_dump() if message.usage is not None else {}
    return _completion(text=text, model=message.model or config.model, usage=usage,
                       stop_reason=message.stop_reason or "")


def read_stream(config: LlmConfig, request: LlmRequest, events: Iterable) -> Iterator[TextDelta | Completion]:
    """Streamed Messages API events: text deltas, then the Completion once `message_stop` arrives."""
    parts: list[str] = []
    usage: dict = {}
    model, stop_reason = config.model, ""
    for event in events:
        kind = getattr(event, "type", None)
        if kind == "message_start":
            model = event.message.model or model
            usage.update({k: v for k, v in (event.message.usage.model_dump() or {}).items() if v is not None})
        elif kind == "content_block_delta" and getattr(event.delta, "type", "") == "text_delta":
            if event.delta.text:
                parts.append(event.delta.text)
                yield TextDelta(text=event.delta.text)
        elif kind == "message_delta":
            stop_reason = event.delta.stop_reason or stop_reason
            if event.usage is not None:
                usage.update({k: v for k, v in event.usage.model_dump().items() if v is not None})
        elif kind == "message_stop":
            yield _completion(text="".join(parts), model=model, usage=usage, stop_reason=stop_reason)
            return
    raise malformed(NAME, LABEL, "stream ended before message_stop")
