"""Published per-token prices of a few OpenAI models, for cost estimates before a run.

Prices are USD per million tokens (standard tier, no batch or cached-input discount),
as listed on https://openai.com/api/pricing in early 2025. They change: treat every
estimate as a guide, and models not listed (local servers included) get no price.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelPrice:
    """USD per million input (prompt) and output (completion) tokens."""

    input_per_million: float
    output_per_million: float


PRICES: dict[str, ModelPrice] = {
    "gpt-4o-mini": ModelPrice(0.15, 0.60),
    "gpt-4o": ModelPrice(2.50, 10.00),
    "gpt-4.1-nano": ModelPrice(0.10, 0.40),
    "gpt-4.1-mini": ModelPrice(0.40, 1.60),
    "gpt-4.1": ModelPrice(2.00, 8.00),
    "gpt-4-turbo": ModelPrice(10.00, 30.00),
    "gpt-3.5-turbo": ModelPrice(0.50, 1.50),
}


def price_of(model: str) -> ModelPrice | None:
    """The price of ``model``; dated snapshots match their family (longest prefix wins).

    Example:
        >>> price_of("gpt-4o-mini-2024-07-18").input_per_million
        0.15
        >>> price_of("llama3.1:8b") is None
        True
    """
    name = model.strip().lower()
    if name.startswith("openai/"):
        name = name[len("openai/") :]
    best = None
    for family in PRICES:
        if (name == family or name.startswith(family + "-")) and (
            best is None or len(family) > len(best)
        ):
            best = family
    return PRICES[best] if best is not None else None


def cost_usd(model: str, input_tokens: int, output_tokens: int) -> float | None:
    """USD cost of the tokens on ``model``, or None when its price is unknown."""
    price = price_of(model)
    if price is None:
        return None
    return (
        input_tokens * price.input_per_million + output_tokens * price.output_per_million
    ) / 1_000_000
