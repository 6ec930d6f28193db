"""An answer from a hosted LLM (Anthropic or OpenAI): the assembled prompt sent down the one LLM path."""
from __future__ import annotations

from collections.abc import Iterator

import llm
from conversations.prompting import AssembledPrompt
from conversations.providers.base import Provider, ProviderResult, TextDelta


class HostedProvider(Provider):
    """The answer shaper's prompt through `llm.complete` / `llm.stream`."""

    def __init__(self, config: llm.LlmConfig):
        self.config = config
        self.name = config.provider
        self.model = config.model

    def request(self, prompt: AssembledPrompt) -> llm.LlmRequest:
        """What goes to the LLM: the tenant-invariant system message (cacheable) and the user message."""
        return llm.LlmRequest(system=prompt.system, user=prompt.user, max_tokens=self.config.max_tokens,
                              purpose="answer", cache_system=prompt.cache_eligible,
                              input_estimate=prompt.token_estimate)

    def generate(self, prompt: AssembledPrompt, *, meter: llm.Meter | None = None) -> ProviderResult:
        """One completion; without a meter its own, since the result carries the cost."""
        return llm.complete(self.request(prompt), config=self.config,
                            meter=meter if meter is not None else llm.Meter())

    def stream(self, prompt: AssembledPrompt, *,
               meter: llm.Meter | None = None) -> Iterator[TextDelta | ProviderResult]:
        """Deltas, then one result; without a meter its own, since the result carries the cost."""
        return llm.stream(self.request(prompt), config=self.config,
                          meter=meter if meter is not None else llm.Meter())
