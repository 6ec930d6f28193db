"""The answer-provider interface: one prompt in, one answer out (whole or streamed), errors that say whether
to retry. The vocabulary is the LLM layer's (`llm`), so a hosted answer and the extractive one look alike."""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator

from conversations.prompting import AssembledPrompt
from llm import Completion as ProviderResult
from llm import LlmError as ProviderError
from llm import LlmNotConfigured as ProviderNotConfigured
from llm import Meter, TextDelta

__all__ = ["Provider", "ProviderError", "ProviderNotConfigured", "ProviderResult", "TextDelta"]


class Provider(ABC):
    """An answer generator behind one interface (healthchecks' Transport pattern)."""

    name: str = ""
    model: str = ""

    @abstractmethod
    def generate(self, prompt: AssembledPrompt, *, meter: Meter | None = None) -> ProviderResult:
        """The whole answer at once, priced into `meter`; raises ProviderError."""

    @abstractmethod
    def stream(self, prompt: AssembledPrompt, *, meter: Meter | None = None) -> Iterator[TextDelta | ProviderResult]:
        """Text deltas as they arrive, then exactly one ProviderResult; raises ProviderError (even mid-stream)."""
