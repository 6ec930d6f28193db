"""Per-model token prices (USD per million tokens) and the cost of one call.

List prices as published by Anthropic and OpenAI (standard tier, 2025). Model ids are matched by their
longest known prefix, so dated snapshots ("claude-haiku-4-5-20251001", "gpt-4o-mini-2024-07-18") find
their family. An unknown model is charged at its provider's most expensive listed rate: the cost ceiling
must overestimate rather than let an unpriced model run free.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Price:
    input: float  # uncached input tokens
    output: float
    cache_write: float  # Anthropic: tokens written to the prompt cache
    cache_read: float  # Anthropic: cache hits; OpenAI: cached input tokens


PRICES: dict[str, dict[str, Price]] = {
    "anthropic": {
        "claude-opus-4-5": Price(5.00, 25.00, 6.25, 0.50),
        "claude-opus-4-1": Price(15.00, 75.00, 18.75, 1.50),
        "claude-opus-4": Price(15.00, 75.00, 18.75, 1.50),
        "claude-sonnet-4-5": Price(3.00, 15.00, 3.75, 0.30),
        "claude-sonnet-4": Price(3.00, 15.00, 3.75, 0.30),
        "claude-3-7-sonnet": Price(3.00, 15.00, 3.75, 0.30),
        "claude-haiku-4-5": Price(1.00, 5.00, 1.25, 0.10),
        "claude-3-5-haiku": Price(0.80, 4.00, 1.00, 0.08),
        "claude-3-haiku": Price(0.25, 1.25, 0.30, 0.03),
    },
    "openai": {
        "gpt-5-nano": Price(0.05, 0.40, 0.0, 0.005),
        "gpt-5-mini": Price(0.25, 2.00, 0.0, 0.025),
        "gpt-5": Price(1.25, 10.00, 0.0, 0.125),
        "gpt-4.1-nano": Price(0.10, 0.40, 0.0, 0.025),
        "gpt-4.1-mini": Price(0.40, 1.60, 0.0, 0.10),
        "gpt-4.1": Price(2.00, 8.00, 0.0, 0.50),
        "gpt-4o-mini": Price(0.15, 0.60, 0.0, 0.075),
        "gpt-4o": Price(2.50, 10.00, 0.0, 1.25),
    },
}


def price_for(*, provider: str, model: str) -> Price:
    """The price of a model (longest matching prefix), or the provider's dearest rate when unknown."""
    table = PRICES.get(provider, {})
    matches = [prefix for prefix in table if model == prefix or model.startswith(prefix + "-")]
    if matches:
        return table[max(matches, key=len)]
    logger.warning("no price for %s model %r; charging the dearest listed rate", provider, model)
    if not table:
        return Price(0.0, 0.0, 0.0, 0.0)
    return max(table.values(), key=lambda price: (price.output, price.input))


def cost_usd(*, provider: str, model: str, input_tokens: int, output_tokens: int, cache_read_tokens: int = 0,
             cache_write_tokens: int = 0) -> float:
    """USD for one call; `input_tokens` counts only uncached, unwritten input (as Anthropic reports it)."""
    price = price_for(provider=provider, model=model)
    total = (input_tokens * price.input + output_tokens * price.output + cache_read_tokens * price.cache_read
             + cache_write_tokens * price.cache_write) / 1_000_000
    return round(total, 8)
