"""The provider interface: one prompt in, one answer out (whole or streamed), errors that say whether to retry."""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass

from conversations.prompting import AssembledPrompt


class ProviderError(RuntimeError):
    """A provider call failed; `retryable` says whether the same call may succeed later."""

    def __init__(self, message: str, *, retryable: bool, provider: str = "", code: str = "error",
                 status_code: int | None = None):
        super().__init__(message)
        self.retryable = retryable
        self.provider = provider
        self.code = code  # timeout | connection | rate_limited | overloaded | server_error | rejected | malformed
        self.status_code = status_code


class ProviderNotConfigured(ProviderError):
    """The provider cannot run here (no API key, unknown name): permanent until the settings change."""

    def __init__(self, message: str, *, provider: str = ""):
        super().__init__(message, retryable=False, provider=provider, code="not_configured")


@dataclass(frozen=True)
class ProviderResult:
    """A finished answer and what it cost."""

    text: str
    provider: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    stop_reason: str = ""


@dataclass(frozen=True)
class TextDelta:
    """A piece of streamed answer text."""

    text: str


class Provider(ABC):
    """An answer generator behind one interface (healthchecks' Transport pattern)."""

    name: str = ""
    model: str = ""

    @abstractmethod
    def generate(self, prompt: AssembledPrompt) -> ProviderResult:
        """The whole answer at once; raises ProviderError."""

    @abstractmethod
    def stream(self, prompt: AssembledPrompt) -> Iterator[TextDelta | ProviderResult]:
        """Text deltas as they arrive, then exactly one ProviderResult; raises ProviderError (even mid-stream)."""
