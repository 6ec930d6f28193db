"""What crosses the LLM boundary: one request in, text deltas and one Completion out."""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class LlmRequest:
    """One completion: a system message, one user message and the budget of the reply."""

    system: str
    user: str
    max_tokens: int
    purpose: str = "answer"  # intent | rewrite | answer: how the turn's meter labels the call
    cache_system: bool = False  # mark the system block for Anthropic's prompt cache (tenant-invariant text)
    timeout: float | None = None  # tighter than the client's for calls a turn can do without (the rewrite)
    max_retries: int | None = None
    input_estimate: int = 0  # the caller's token estimate, charged when a server reports no usage

    @property
    def input_tokens_estimate(self) -> int:
        return self.input_estimate or rough_tokens(self.system) + rough_tokens(self.user)


@dataclass(frozen=True)
class Completion:
    """A finished reply and what it cost."""

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
    """A piece of streamed reply text."""

    text: str


def rough_tokens(text: str) -> int:
    """About four characters a token: only for replies a server did not count (knowledge.tokens sits above)."""
    return math.ceil(len(text or "") / 4)
