"""How many tokens, and roughly how many dollars, an extraction run would cost (``--dry-run``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gear_agent.llm.pricing import cost_usd
from gear_agent.llm.tokens import MESSAGE_OVERHEAD_TOKENS, count_tokens
from gear_agent.prompts import Prompt, load_prompt
from gear_agent.types import Passage

if TYPE_CHECKING:
    from gear_agent.config import GearSettings

OUTPUT_TOKENS_PER_PASSAGE_TOKEN = 1.5
"""Rough reply length: the entity list plus triples restate a passage about 1.5 times."""

OUTPUT_OVERHEAD_TOKENS = 12
"""JSON framing of every reply."""


@dataclass(frozen=True)
class CostEstimate:
    """Expected size and price of extracting triples from some passages.

    Attributes:
        prompt_tokens: Tokens sent (prompt template plus passage, every passage).
        expected_output_tokens: Rough tokens received (capped at ``llm_max_tokens`` each).
        usd: Price at the model's published rates, or None for a model not in the table.
        model: The model the price is for.
        passages: How many passages were counted.
    """

    prompt_tokens: int
    expected_output_tokens: int
    usd: float | None
    model: str = ""
    passages: int = 0


def estimate_cost(
    passages: Iterable[Passage], settings: GearSettings, *, prompt: Prompt | None = None
) -> CostEstimate:
    """Estimate the cost of sending ``passages`` to the extraction prompt; calls no model.

    Token counts are exact where tiktoken's encoding is cached locally, else ~4
    characters per token; the output is a rough guess (see
    :data:`OUTPUT_TOKENS_PER_PASSAGE_TOKEN`); prices come from
    :mod:`gear_agent.llm.pricing`.

    Args:
        passages: The passages that would be sent.
        settings: Uses ``llm_model``, ``llm_max_tokens`` and ``prompts_dir``.
        prompt: The extraction template; loaded from settings when None.

    Returns:
        The estimate.

    Example:
        >>> from gear_agent.config import GearSettings
        >>> e = estimate_cost([Passage("p-1", "Bled", "A town in Slovenia.")], GearSettings())
        >>> e.prompt_tokens > 0 and e.usd is not None
        True
    """
    template = prompt or load_prompt("extraction", settings.prompts_dir)
    model = settings.llm_model
    fixed = count_tokens(template.format(title="", passage=""), model) + MESSAGE_OVERHEAD_TOKENS + 2
    prompt_tokens = 0
    output_tokens = 0
    count = 0
    for passage in passages:
        passage_tokens = count_tokens(passage.title, model) + count_tokens(passage.text, model)
        prompt_tokens += fixed + passage_tokens
        guess = int(passage_tokens * OUTPUT_TOKENS_PER_PASSAGE_TOKEN) + OUTPUT_OVERHEAD_TOKENS
        output_tokens += min(settings.llm_max_tokens, guess)
        count += 1
    return CostEstimate(
        prompt_tokens=prompt_tokens,
        expected_output_tokens=output_tokens,
        usd=cost_usd(model, prompt_tokens, output_tokens),
        model=model,
        passages=count,
    )
