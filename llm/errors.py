"""Errors of an LLM call, each saying whether the same call may succeed later (healthchecks' Transport style)."""
from __future__ import annotations

import httpx2


class LlmError(RuntimeError):
    """An LLM call failed; `retryable` says whether the same call may succeed later."""

    def __init__(self, message: str, *, retryable: bool, provider: str = "", code: str = "error",
                 status_code: int | None = None):
        super().__init__(message)
        self.retryable = retryable
        self.provider = provider
        # timeout | connection | rate_limited | overloaded | server_error | stream_error | rejected | malformed |
        # not_configured | cost_ceiling | unmetered
        self.code = code
        self.status_code = status_code


class LlmNotConfigured(LlmError):
    """The provider cannot run here (no API key, unknown name): permanent until the settings change."""

    def __init__(self, message: str, *, provider: str = ""):
        super().__init__(message, retryable=False, provider=provider, code="not_configured")


class LlmCallRefused(LlmError):
    """No call was made: past the cost ceiling, or with no meter to price it into."""

    def __init__(self, message: str, *, code: str, provider: str = ""):
        super().__init__(message, retryable=False, provider=provider, code=code)


def transport_error(provider: str, label: str, exc: Exception, *, timeouts: tuple[type, ...],
                    connections: tuple[type, ...]) -> LlmError | None:
    """An LlmError as it is; a timeout or a dropped connection (the SDK's or httpx's) as a retryable one; else None.

    Timeouts are checked first: the SDKs' timeout error is a kind of their connection error.
    """
    if isinstance(exc, LlmError):
        return exc
    if isinstance(exc, (*timeouts, httpx2.TimeoutException)):
        return LlmError(f"{label} timed out: {exc}", retryable=True, provider=provider, code="timeout")
    if isinstance(exc, (*connections, httpx2.TransportError)):
        return LlmError(f"{label} unreachable: {exc}", retryable=True, provider=provider, code="connection")
    return None


def status_error(provider: str, label: str, exc: Exception, status: int) -> LlmError:
    """An HTTP error status as an LlmError: 429 and 5xx are retryable, any other 4xx is permanent."""
    if status == 429:
        return LlmError(f"{label} rate limit: {exc}", retryable=True, provider=provider, code="rate_limited",
                        status_code=status)
    if status >= 500:
        return LlmError(f"{label} server error: {exc}", retryable=True, provider=provider, code="server_error",
                        status_code=status)
    return LlmError(f"{label} rejected the request: {exc}", retryable=False, provider=provider, code="rejected",
                    status_code=status)


def malformed(provider: str, label: str, detail: str) -> LlmError:
    """A reply that could not be read (or said nothing): retryable, a second attempt may read fine."""
    return LlmError(f"{label} {detail}", retryable=True, provider=provider, code="malformed")
