"""Every LLM call is priced into a Meter; a turn's meter also carries what its session may still spend.

A caller that returns the Completion (an answer, an intent) may pass its own meter; a call whose caller
returns only text (the Swahili query rewrite) runs under the meter a turn made current, and with none
there is no call: nothing is ever spent where no turn or session can account for it.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from decimal import Decimal

from llm.types import Completion


@dataclass(frozen=True)
class MeteredCall:
    """One call as the meter recorded it."""

    purpose: str
    completion: Completion
    estimated: bool = False  # the server reported no usage (a stream cut short): tokens were estimated

    def to_dict(self) -> dict:
        c = self.completion
        return {"purpose": self.purpose, "provider": c.provider, "model": c.model, "input_tokens": c.input_tokens,
                "output_tokens": c.output_tokens, "cost_usd": c.cost_usd, "estimated": self.estimated}


@dataclass
class Meter:
    """The calls one unit of work made and, optionally, the most they may cost together."""

    limit_usd: Decimal | None = None
    calls: list[MeteredCall] = field(default_factory=list)

    @property
    def spent_usd(self) -> Decimal:
        return sum((Decimal(str(call.completion.cost_usd)) for call in self.calls), Decimal(0))

    def allows_call(self) -> bool:
        """False once the limit is reached: past the hard ceiling no call is made at all."""
        return self.limit_usd is None or self.spent_usd < self.limit_usd

    def record(self, purpose: str, completion: Completion, *, estimated: bool = False) -> Completion:
        self.calls.append(MeteredCall(purpose=purpose, completion=completion, estimated=estimated))
        return completion


_current: ContextVar[Meter | None] = ContextVar("llm_meter", default=None)


def current_meter() -> Meter | None:
    """The meter a turn made current, if any."""
    return _current.get()


@contextmanager
def metering(meter: Meter) -> Iterator[Meter]:
    """Make `meter` current for the calls made inside the block (the turn's planning: intent, rewrite)."""
    token = _current.set(meter)
    try:
        yield meter
    finally:
        _current.reset(token)
