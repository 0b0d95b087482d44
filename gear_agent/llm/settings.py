"""What the LLM layer reads from the settings: one small typed object."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gear_agent.types import ResponseFormatMode

if TYPE_CHECKING:
    from gear_agent.config import GearSettings


@dataclass(frozen=True)
class LLMSettings:
    """How to build and call the chat model.

    Attributes:
        model: ``provider:model`` for any LangChain chat integration (``ollama:llama3.1``,
            ``anthropic:claude-3-5-haiku-latest``; its package must be installed), or a plain
            model name for the OpenAI API or an OpenAI-compatible server (``OPENAI_BASE_URL``).
        temperature: Sampling temperature.
        max_tokens: Completion token cap per call.
        timeout_s: Timeout of one request.
        max_retries: Retries on rate limits, time-outs, 5xx and empty replies.
        response_format: How JSON replies are asked for (see
            :mod:`gear_agent.llm.response_format`).
        cache_dir: On-disk cache of replies; None for no cache.
        run_models: Other models a run may choose (LangGraph ``context={"model": ...}``),
            besides ``model``; ``"*"`` allows any. Each is built once, on first use.
    """

    model: str = "gpt-4o-mini"
    temperature: float = 0.0
    max_tokens: int = 512
    timeout_s: float = 60.0
    max_retries: int = 4
    response_format: ResponseFormatMode = "text"
    cache_dir: Path | None = None
    run_models: tuple[str, ...] = ()

    @classmethod
    def from_gear(cls, settings: GearSettings) -> LLMSettings:
        """The ``llm_*`` fields of the project settings.

        Example:
            >>> from gear_agent.config import GearSettings
            >>> LLMSettings.from_gear(GearSettings(llm_model="ollama:llama3.1")).model
            'ollama:llama3.1'
        """
        return cls(
            model=settings.llm_model,
            temperature=settings.llm_temperature,
            max_tokens=settings.llm_max_tokens,
            timeout_s=settings.llm_timeout_s,
            max_retries=settings.llm_max_retries,
            response_format=settings.llm_response_format,
            cache_dir=settings.llm_cache_dir,
            run_models=split_names(settings.llm_models),
        )


def split_names(names: str) -> tuple[str, ...]:
    """Model names from a comma-separated setting, stripped, empty ones left out.

    Example:
        >>> split_names(" ollama:llama3.1, anthropic:claude-3-5-haiku-latest ,")
        ('ollama:llama3.1', 'anthropic:claude-3-5-haiku-latest')
    """
    return tuple(name.strip() for name in names.split(",") if name.strip())
