"""Per-session LLM spend: `record_cost` adds a turn's cost, `peek_cost` says where a session stands.

The soft ceiling (COST_SOFT_CEILING_USD, default $0.05) is a warning an owner sees in telemetry; past
the hard ceiling (COST_HARD_CEILING_USD, default $0.20) the session's turns use the free extractive
provider. The running total lives on the session row and is incremented in SQL, so two concurrent
turns of one session never lose an increment.
"""
from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.conf import settings
from django.db.models import F

from conversations.models import Session

_MICRO = Decimal("0.000001")


def _usd(value) -> Decimal:
    return Decimal(str(value or 0)).quantize(_MICRO)


@dataclass(frozen=True)
class CostState:
    """A session's spend against its ceilings."""

    spent_usd: Decimal
    soft_ceiling_usd: Decimal
    hard_ceiling_usd: Decimal

    @property
    def over_soft(self) -> bool:
        return self.spent_usd >= self.soft_ceiling_usd

    @property
    def over_hard(self) -> bool:
        return self.spent_usd >= self.hard_ceiling_usd


def _state(spent: Decimal) -> CostState:
    return CostState(spent_usd=_usd(spent), soft_ceiling_usd=_usd(settings.COST_SOFT_CEILING_USD),
                     hard_ceiling_usd=_usd(settings.COST_HARD_CEILING_USD))


def peek_cost(*, session: Session) -> CostState:
    """The session's spend so far, read fresh from the database."""
    spent = Session.objects.filter(pk=session.pk).values_list("cost_usd", flat=True).first()
    return _state(spent if spent is not None else session.cost_usd)


def record_cost(*, session: Session, usd: Decimal | float | str) -> CostState:
    """Add `usd` to the session's total atomically; return the new state."""
    amount = _usd(usd)
    if amount > 0:
        Session.objects.filter(pk=session.pk).update(cost_usd=F("cost_usd") + amount)
    state = peek_cost(session=session)
    session.cost_usd = state.spent_usd
    return state
