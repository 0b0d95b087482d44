"""How much one extraction run may spend: tokens (``GEAR_EXTRACT_MAX_TOKENS``) or dollars
(``gear index --extract --max-cost``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gear_agent.errors import SettingsError
from gear_agent.llm.pricing import cost_usd

if TYPE_CHECKING:
    from gear_agent.config import LLMSettings


@dataclass(frozen=True)
class ExtractionBudget:
    """A run stops sending passages once either limit is reached; the calls in flight finish
    and are kept, the passages not sent stay unextracted for the next run.

    Attributes:
        max_tokens: Prompt plus completion tokens billed (cached replies are free), or None.
        max_usd: Dollars at the model's published rates (:mod:`gear_agent.llm.pricing`), or
            None; a model without a price cannot be held to it (refused before the run).
        model: The model the price is for.

    Example:
        >>> ExtractionBudget(max_tokens=1000).spent(600, 500)
        True
    """

    max_tokens: int | None = None
    max_usd: float | None = None
    model: str = ""

    def __post_init__(self) -> None:
        if self.max_tokens is not None and self.max_tokens < 1:
            raise SettingsError(f"the token budget must be at least 1, got {self.max_tokens}")
        if self.max_usd is not None and not self.max_usd > 0:
            raise SettingsError(f"the cost budget must be above 0, got {self.max_usd}")
        if self.max_usd is not None and cost_usd(self.model, 1_000_000, 0) is None:
            raise SettingsError(f"--max-cost needs a price for {self.model!r}, which the price table "
                             "lacks: give a token budget instead (GEAR_EXTRACT_MAX_TOKENS)")

    @classmethod
    def of(cls, settings: LLMSettings, max_usd: float | None = None) -> ExtractionBudget | None:
        """The budget the LLM section (``extract_max_tokens``) and ``max_usd`` set, or None."""
        if settings.extract_max_tokens is None and max_usd is None:
            return None
        return cls(settings.extract_max_tokens, max_usd, settings.llm_model)

    def spent(self, input_tokens: int, output_tokens: int) -> bool:
        """Whether a run that used these tokens has reached the budget."""
        if self.max_tokens is not None and input_tokens + output_tokens >= self.max_tokens:
            return True
        if self.max_usd is not None:
            usd = cost_usd(self.model, input_tokens, output_tokens)
            return usd is not None and usd >= self.max_usd
        return False

    def describe(self) -> str:
        """The budget in words, for the CLI."""
        parts = []
        if self.max_tokens is not None:
            parts.append(f"{self.max_tokens:,} tokens")
        if self.max_usd is not None:
            parts.append(f"${self.max_usd:g}")
        return " or ".join(parts)
