"""Anthropic Messages API provider (official `anthropic` client), whole or streamed.

The system message goes in a system block marked `cache_control: {"type": "ephemeral"}`: it is the same
for every tenant, so one cached prefix serves them all. Every call has an explicit timeout; errors are
mapped to ProviderError with `retryable` set (429, 5xx, 529 overloaded, timeouts and dropped connections
are retryable; other 4xx are not).
"""
from __future__ import annotations

import time
from collections.abc import Iterator

import anthropic
import httpx2
from django.conf import settings

from conversations.prompting import AssembledPrompt
from conversations.providers.base import Provider, ProviderError, ProviderNotConfigured, ProviderResult, TextDelta
from conversations.providers.pricing import cost_usd

_RETRYABLE_ERROR_TYPES = {"overloaded_error", "api_error", "rate_limit_error", "timeout_error"}


def provider_error(exc: Exception) -> ProviderError:
    """Translate an anthropic/httpx exception into a ProviderError that says whether to retry."""
    name = "anthropic"
    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, (anthropic.APITimeoutError, httpx2.TimeoutException)):
        return ProviderError(f"Anthropic timed out: {exc}", retryable=True, provider=name, code="timeout")
    if isinstance(exc, (anthropic.APIConnectionError, httpx2.TransportError)):
        return ProviderError(f"Anthropic unreachable: {exc}", retryable=True, provider=name, code="connection")
    if isinstance(exc, anthropic.APIStatusError):
        status = exc.status_code
        if status == 429:
            return ProviderError(f"Anthropic rate limit: {exc}", retryable=True, provider=name, code="rate_limited",
                                 status_code=status)
        if status == 529:
            return ProviderError(f"Anthropic overloaded: {exc}", retryable=True, provider=name, code="overloaded",
                                 status_code=status)
        if status >= 500:
            return ProviderError(f"Anthropic server error: {exc}", retryable=True, provider=name,
                                 code="server_error", status_code=status)
        if status < 400:
            # An `error` event inside a 200 stream: its type says what happened.
            error_type = ((exc.body or {}).get("error") or {}).get("type") if isinstance(exc.body, dict) else None
            code = "overloaded" if error_type == "overloaded_error" else "stream_error"
            return ProviderError(f"Anthropic stream error: {exc}", retryable=error_type in _RETRYABLE_ERROR_TYPES,
                                 provider=name, code=code, status_code=status)
        return ProviderError(f"Anthropic rejected the request: {exc}", retryable=False, provider=name,
                             code="rejected", status_code=status)
    return ProviderError(f"Anthropic response unreadable: {type(exc).__name__}: {exc}", retryable=True,
                         provider=name, code="malformed")


class AnthropicProvider(Provider):
    """Claude through the Messages API."""

    name = "anthropic"

    def __init__(self, *, api_key: str | None = None, model: str | None = None, base_url: str | None = None,
                 timeout: float | None = None, max_retries: int | None = None, max_tokens: int | None = None,
                 http_client: httpx2.Client | None = None):
        key = api_key if api_key is not None else settings.ANTHROPIC_API_KEY
        if not key:
            raise ProviderNotConfigured("ANTHROPIC_API_KEY is not set", provider=self.name)
        self.model = model or settings.ANTHROPIC_MODEL
        self.timeout = timeout if timeout is not None else settings.LLM_TIMEOUT_SECONDS
        self.max_tokens = max_tokens or settings.LLM_MAX_OUTPUT_TOKENS
        self.client = anthropic.Anthropic(
            api_key=key, base_url=base_url or settings.ANTHROPIC_BASE_URL, timeout=self.timeout,
            max_retries=settings.LLM_MAX_RETRIES if max_retries is None else max_retries, http_client=http_client)

    def request(self, prompt: AssembledPrompt) -> dict:
        """The Messages API arguments for a prompt (exposed for tests and the docs)."""
        return {"model": self.model, "max_tokens": self.max_tokens, "system": prompt.anthropic_system(),
                "messages": [{"role": "user", "content": prompt.user}]}

    def _result(self, *, text: str, model: str, usage: dict, stop_reason: str) -> ProviderResult:
        if not text.strip():
            raise ProviderError("Anthropic returned no text", retryable=True, provider=self.name, code="malformed")
        input_tokens = int(usage.get("input_tokens") or 0)
        output_tokens = int(usage.get("output_tokens") or 0)
        cache_read = int(usage.get("cache_read_input_tokens") or 0)
        cache_write = int(usage.get("cache_creation_input_tokens") or 0)
        return ProviderResult(
            text=text, provider=self.name, model=model or self.model,
            input_tokens=input_tokens + cache_read + cache_write, output_tokens=output_tokens,
            cost_usd=cost_usd(provider=self.name, model=model or self.model, input_tokens=input_tokens,
                              output_tokens=output_tokens, cache_read_tokens=cache_read,
                              cache_write_tokens=cache_write),
            cache_read_tokens=cache_read, cache_write_tokens=cache_write, stop_reason=stop_reason or "")

    def generate(self, prompt: AssembledPrompt) -> ProviderResult:
        """One Messages API call; the text blocks of the reply joined."""
        try:
            message = self.client.messages.create(**self.request(prompt))
            text = "".join(block.text for block in message.content if getattr(block, "type", "") == "text")
            usage = message.usage.model_dump() if message.usage is not None else {}
            return self._result(text=text, model=message.model, usage=usage, stop_reason=message.stop_reason or "")
        except Exception as exc:  # the client's errors, transport errors and unreadable replies alike
            raise provider_error(exc) from exc

    def stream(self, prompt: AssembledPrompt) -> Iterator[TextDelta | ProviderResult]:
        """Streamed Messages API events: text deltas, then the result once `message_stop` arrives."""
        deadline = time.monotonic() + self.timeout * 2  # the client's timeout is per read; bound the whole stream
        parts: list[str] = []
        usage: dict = {}
        model, stop_reason, finished = self.model, "", False
        try:
            events = self.client.messages.create(**self.request(prompt), stream=True)
            try:
                for event in events:
                    if time.monotonic() > deadline:
                        raise ProviderError("Anthropic stream exceeded its deadline", retryable=True,
                                            provider=self.name, code="timeout")
                    kind = getattr(event, "type", None)
                    if kind == "message_start":
                        model = event.message.model or model
                        usage.update({k: v for k, v in (event.message.usage.model_dump() or {}).items()
                                      if v is not None})
                    elif kind == "content_block_delta" and getattr(event.delta, "type", "") == "text_delta":
                        if event.delta.text:
                            parts.append(event.delta.text)
                            yield TextDelta(text=event.delta.text)
                    elif kind == "message_delta":
                        stop_reason = event.delta.stop_reason or stop_reason
                        if event.usage is not None:
                            usage.update({k: v for k, v in event.usage.model_dump().items() if v is not None})
                    elif kind == "message_stop":
                        finished = True
                        break
            finally:
                events.close()
            if not finished:
                raise ProviderError("Anthropic stream ended before message_stop", retryable=True,
                                    provider=self.name, code="malformed")
            yield self._result(text="".join(parts), model=model, usage=usage, stop_reason=stop_reason)
        except Exception as exc:
            raise provider_error(exc) from exc
