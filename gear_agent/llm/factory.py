"""Build the default chat model (OpenAI or any OpenAI-compatible server) from settings."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from gear_agent.llm.errors import LLMConfigError

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from gear_agent.config import GearSettings

LOCAL_SERVER_API_KEY = "not-needed"
"""Key sent to a local server when OPENAI_BASE_URL is set without OPENAI_API_KEY."""


def make_chat_model(
    settings: GearSettings, environ: Mapping[str, str] | None = None
) -> BaseChatModel:
    """A ``ChatOpenAI`` for ``settings.llm_model``, honouring OPENAI_API_KEY and OPENAI_BASE_URL.

    Retries are off in the model (``max_retries=0``): :class:`~gear_agent.llm.client.LLMClient`
    does them, with backoff and accounting.

    Args:
        settings: Uses ``llm_model``, ``llm_temperature``, ``llm_max_tokens`` and ``llm_timeout_s``.
        environ: Where to read the two variables; ``os.environ`` when None.

    Returns:
        The chat model.

    Raises:
        LLMConfigError: Neither OPENAI_API_KEY nor OPENAI_BASE_URL is set.

    Example:
        >>> from gear_agent.config import GearSettings
        >>> model = make_chat_model(GearSettings(), {"OPENAI_BASE_URL": "http://localhost:8000/v1"})
        >>> model.model_name
        'gpt-4o-mini'
    """
    env = os.environ if environ is None else environ
    api_key = env.get("OPENAI_API_KEY") or None
    base_url = env.get("OPENAI_BASE_URL") or None
    if api_key is None and base_url is None:
        raise LLMConfigError(
            "No LLM is configured: set OPENAI_API_KEY to use the OpenAI API, or "
            "OPENAI_BASE_URL to use an OpenAI-compatible server (vLLM, Ollama, llama.cpp; "
            "e.g. OPENAI_BASE_URL=http://localhost:8000/v1, no key needed). "
            f"The model name comes from GEAR_LLM_MODEL (now {settings.llm_model!r})."
        )
    try:
        from langchain_openai import ChatOpenAI
    except ImportError as exc:  # pragma: no cover - a core dependency
        raise LLMConfigError(
            "langchain-openai is not installed: pip install langchain-openai"
        ) from exc
    # langchain-openai sends the cap as `max_completion_tokens`, which some OpenAI-compatible
    # servers (llama-cpp-python 0.3) ignore; they read only `max_tokens`, so send that too.
    extra_body = {"max_tokens": settings.llm_max_tokens} if base_url else None
    return ChatOpenAI(
        model=settings.llm_model,
        temperature=settings.llm_temperature,
        max_tokens=settings.llm_max_tokens,
        timeout=settings.llm_timeout_s,
        max_retries=0,
        api_key=api_key or LOCAL_SERVER_API_KEY,
        base_url=base_url,
        extra_body=extra_body,
    )
