"""OpenAI Chat Completions provider (official `openai` client), whole or streamed.

The tenant-invariant system message goes first, so OpenAI's automatic prompt caching can reuse the
shared prefix. Streams ask for usage (`stream_options.include_usage`); a stream that ends without a
finish reason is treated as broken. Errors map to ProviderError with `retryable` set.
"""
from __future__ import annotations

import time
from collections.abc import Iterator

import httpx2
import openai
from django.conf import settings

from conversations.prompting import AssembledPrompt
from conversations.providers.base import Provider, ProviderError, ProviderNotConfigured, ProviderResult, TextDelta
from conversations.providers.pricing import cost_usd
from knowledge.tokens import token_estimate


def provider_error(exc: Exception) -> ProviderError:
    """Translate an openai/httpx exception into a ProviderError that says whether to retry."""
    name = "openai"
    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, (openai.APITimeoutError, httpx2.TimeoutException)):
        return ProviderError(f"OpenAI timed out: {exc}", retryable=True, provider=name, code="timeout")
    if isinstance(exc, (openai.APIConnectionError, httpx2.TransportError)):
        return ProviderError(f"OpenAI unreachable: {exc}", retryable=True, provider=name, code="connection")
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        if status == 429:
            return ProviderError(f"OpenAI rate limit: {exc}", retryable=True, provider=name, code="rate_limited",
                                 status_code=status)
        if status >= 500:
            return ProviderError(f"OpenAI server error: {exc}", retryable=True, provider=name, code="server_error",
                                 status_code=status)
        return ProviderError(f"OpenAI rejected the request: {exc}", retryable=False, provider=name, code="rejected",
                             status_code=status)
    if isinstance(exc, openai.APIError):
        # An error object inside a stream.
        return ProviderError(f"OpenAI stream error: {exc}", retryable=True, provider=name, code="stream_error")
    return ProviderError(f"OpenAI response unreadable: {type(exc).__name__}: {exc}", retryable=True, provider=name,
                         code="malformed")


class OpenAIProvider(Provider):
    """GPT models through Chat Completions."""

    name = "openai"

    def __init__(self, *, api_key: str | None = None, model: str | None = None, base_url: str | None = None,
                 timeout: float | None = None, max_retries: int | None = None, max_tokens: int | None = None,
                 http_client: httpx2.Client | None = None):
        key = api_key if api_key is not None else settings.OPENAI_API_KEY
        if not key:
            raise ProviderNotConfigured("OPENAI_API_KEY is not set", provider=self.name)
        self.model = model or settings.OPENAI_MODEL
        self.timeout = timeout if timeout is not None else settings.LLM_TIMEOUT_SECONDS
        self.max_tokens = max_tokens or settings.LLM_MAX_OUTPUT_TOKENS
        self.client = openai.OpenAI(
            api_key=key, base_url=base_url or settings.OPENAI_BASE_URL, timeout=self.timeout,
            max_retries=settings.LLM_MAX_RETRIES if max_retries is None else max_retries, http_client=http_client)

    def request(self, prompt: AssembledPrompt) -> dict:
        """The Chat Completions arguments for a prompt."""
        return {"model": self.model, "max_completion_tokens": self.max_tokens, "messages": prompt.chat_messages()}

    def _result(self, *, prompt: AssembledPrompt, text: str, model: str, usage, stop_reason: str) -> ProviderResult:
        if not text.strip():
            raise ProviderError("OpenAI returned no text", retryable=True, provider=self.name, code="malformed")
        if usage is not None:
            prompt_tokens = int(usage.prompt_tokens or 0)
            output_tokens = int(usage.completion_tokens or 0)
            details = getattr(usage, "prompt_tokens_details", None)
            cached = int(getattr(details, "cached_tokens", 0) or 0)
        else:
            # A compatible server that reports no usage: estimate rather than record a free call.
            prompt_tokens, output_tokens, cached = prompt.token_estimate, token_estimate(text), 0
        model = model or self.model
        return ProviderResult(
            text=text, provider=self.name, model=model, input_tokens=prompt_tokens, output_tokens=output_tokens,
            cost_usd=cost_usd(provider=self.name, model=model, input_tokens=prompt_tokens - cached,
                              output_tokens=output_tokens, cache_read_tokens=cached),
            cache_read_tokens=cached, stop_reason=stop_reason or "")

    def generate(self, prompt: AssembledPrompt) -> ProviderResult:
        """One Chat Completions call."""
        try:
            completion = self.client.chat.completions.create(**self.request(prompt))
            if not completion.choices:
                raise ProviderError("OpenAI returned no choices", retryable=True, provider=self.name, code="malformed")
            choice = completion.choices[0]
            return self._result(prompt=prompt, text=choice.message.content or "", model=completion.model,
                                usage=completion.usage, stop_reason=choice.finish_reason or "")
        except Exception as exc:  # the client's errors, transport errors and unreadable replies alike
            raise provider_error(exc) from exc

    def stream(self, prompt: AssembledPrompt) -> Iterator[TextDelta | ProviderResult]:
        """Streamed chat.completion.chunk events: text deltas, then the result after `[DONE]`."""
        deadline = time.monotonic() + self.timeout * 2  # the client's timeout is per read; bound the whole stream
        parts: list[str] = []
        usage = None
        model, stop_reason = self.model, ""
        try:
            chunks = self.client.chat.completions.create(**self.request(prompt), stream=True,
                                                         stream_options={"include_usage": True})
            try:
                for chunk in chunks:
                    if time.monotonic() > deadline:
                        raise ProviderError("OpenAI stream exceeded its deadline", retryable=True,
                                            provider=self.name, code="timeout")
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
            finally:
                chunks.close()
            if not stop_reason:
                raise ProviderError("OpenAI stream ended without a finish reason", retryable=True,
                                    provider=self.name, code="malformed")
            yield self._result(prompt=prompt, text="".join(parts), model=model, usage=usage, stop_reason=stop_reason)
        except Exception as exc:
            raise provider_error(exc) from exc
