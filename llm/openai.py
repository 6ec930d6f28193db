"""OpenAI Chat Completions plumbing: request arguments, reading replies and streams, mapping errors.

The system message goes first, so OpenAI's automatic prompt caching can reuse the shared prefix. Streams
ask for usage (`stream_options.include_usage`); a stream that ends without a finish reason is broken. A
compatible server that reports no usage is charged an estimate rather than recorded as a free call.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator

import openai

from llm.config import LlmConfig
from llm.errors import LlmError, malformed, status_error, transport_error
from llm.pricing import cost_usd
from llm.types import Completion, LlmRequest, TextDelta, rough_tokens

NAME = "openai"
LABEL = "OpenAI"


def error(exc: Exception) -> LlmError:
    """Translate an openai/httpx exception into an LlmError that says whether to retry."""
    known = transport_error(NAME, LABEL, exc, timeouts=(openai.APITimeoutError,),
                            connections=(openai.APIConnectionError,))
    if known is not None:
        return known
    if isinstance(exc, openai.APIStatusError):
        return status_error(NAME, LABEL, exc, exc.status_code)
    if isinstance(exc, openai.APIError):
        # An error object inside a stream.
        return LlmError(f"OpenAI stream error: {exc}", retryable=True, provider=NAME, code="stream_error")
    return malformed(NAME, LABEL, f"response unreadable: {type(exc).__name__}: {exc}")


def arguments(config: LlmConfig, request: LlmRequest, *, stream: bool) -> dict:
    """The Chat Completions arguments for a request."""
    args = {"model": config.model, "max_completion_tokens": request.max_tokens,
            "messages": [{"role": "system", "content": request.system}, {"role": "user", "content": request.user}]}
    return {**args, "stream": True, "stream_options": {"include_usage": True}} if stream else args


def send(client: openai.OpenAI, args: dict):
    return client.chat.completions.create(**args)


def _completion(request: LlmRequest, *, text: str, model: str, usage, stop_reason: str) -> Completion:
    if usage is not None:
        prompt_tokens = int(usage.prompt_tokens or 0)
        output_tokens = int(usage.completion_tokens or 0)
        details = getattr(usage, "prompt_tokens_details", None)
        cached = int(getattr(details, "cached_tokens", 0) or 0)
    else:
        prompt_tokens, output_tokens, cached = request.input_tokens_estimate, rough_tokens(text), 0
    return Completion(
        text=text, provider=NAME, model=model, input_tokens=prompt_tokens, output_tokens=output_tokens,
        cost_usd=cost_usd(provider=NAME, model=model, input_tokens=prompt_tokens - cached,
                          output_tokens=output_tokens, cache_read_tokens=cached),
        cache_read_tokens=cached, stop_reason=stop_reason or "")


def read(config: LlmConfig, request: LlmRequest, completion) -> Completion:
    """The first choice of a Chat Completions reply, with usage and cost."""
    if not completion.choices:
        raise malformed(NAME, LABEL, "returned no choices")
    choice = completion.choices[0]
    return _completion(request, text=choice.message.content or "", model=completion.model or config.model,
                       usage=completion.usage, stop_reason=choice.finish_reason or "")


def read_stream(config: LlmConfig, request: LlmRequest, chunks: Iterable) -> Iterator[TextDelta | Completion]:
    """Streamed chat.completion.chunk events: text deltas, then the Completion after the last chunk."""
    parts: list[str] = []
    usage = None
    model, stop_reason = config.model, ""
    for chunk in chunks:
        model = chunk.model or model
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices or []:
            if choice.index != 0:
                continue
            content = choice.delta.content if choice.delta is not None else None
            if content:
                parts.append(content)
                yield TextDelta(text=content)
            if choice.finish_reason:
                stop_reason = choice.finish_reason
    if not stop_reason:
        raise malformed(NAME, LABEL, "stream ended without a finish reason")
    yield _completion(request, text="".join(parts), model=model, usage=usage, stop_reason=stop_reason)
