"""Build the chat model a setting names: any LangChain integration by ``provider:model``, or
the OpenAI API / any OpenAI-compatible server (the default) by a plain model name."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from gear_agent.llm.errors import LLMConfigError

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from gear_agent.config import LLMSettings

LOCAL_SERVER_API_KEY = "not-needed"
"""Key sent to a local server when OPENAI_BASE_URL is set without OPENAI_API_KEY."""

_CAP_NAME = {"ollama": "num_predict"}
"""Providers whose completion cap is not called ``max_tokens``."""


def split_provider(model: str) -> tuple[str | None, str]:
    """``(provider, model)`` when ``model`` starts with a provider LangChain knows, else
    ``(None, model)``; a name like ``llama3:8b`` (an Ollama tag served over the OpenAI
    API) is not mistaken for a provider.

    Example:
        >>> split_provider("ollama:llama3.1"), split_provider("llama3:8b")
        (('ollama', 'llama3.1'), (None, 'llama3:8b'))
    """
    head, sep, rest = model.partition(":")
    if not sep or not rest:
        return None, model
    from langchain.chat_models.base import _BUILTIN_PROVIDERS

    provider = head.strip().lower().replace("-", "_")
    return (provider, rest) if provider in _BUILTIN_PROVIDERS else (None, model)


def make_chat_model(
    settings: LLMSettings, environ: Mapping[str, str] | None = None
) -> BaseChatModel:
    """The chat model ``settings.llm_model`` names.

    * ``provider:model`` (``ollama:llama3.1``, ``anthropic:claude-3-5-haiku-latest``, ...):
      LangChain's ``init_chat_model``; the provider's integration package must be installed
      (a missing one is named in the error). ``openai:`` is the same as no prefix.
    * a plain name: ``ChatOpenAI``, honouring OPENAI_API_KEY and OPENAI_BASE_URL, so any
      OpenAI-compatible server (vLLM, Ollama, llama.cpp) works.

    Retries are off in the model (``max_retries=0``): :class:`~gear_agent.llm.client.LLMClient`
    does them, with backoff and accounting.

    Args:
        settings: The model name, temperature, completion cap and timeout.
        environ: Where to read OPENAI_API_KEY / OPENAI_BASE_URL; ``os.environ`` when None.

    Raises:
        LLMConfigError: A plain name with neither OPENAI_API_KEY nor OPENAI_BASE_URL set, or
            a provider whose package is not installed or that refuses the settings.

    Example:
        >>> from gear_agent.config import LLMSettings
        >>> model = make_chat_model(LLMSettings(), {"OPENAI_BASE_URL": "http://localhost:8000/v1"})
        >>> model.model_name
        'gpt-4o-mini'
    """
    provider, name = split_provider(settings.llm_model)
    if provider is None or provider == "openai":
        return _openai_compatible(settings, name, os.environ if environ is None else environ)
    return _init_chat_model(settings, provider, name)


def _openai_compatible(settings: LLMSettings, name: str, env: Mapping[str, str]) -> BaseChatModel:
    api_key = env.get("OPENAI_API_KEY") or None
    base_url = env.get("OPENAI_BASE_URL") or None
    if api_key is None and base_url is None:
        raise LLMConfigError(
            "No LLM is configured: set OPENAI_API_KEY to use the OpenAI API, or "
            "OPENAI_BASE_URL to use an OpenAI-compatible server (vLLM, Ollama, llama.cpp; "
            "e.g. OPENAI_BASE_URL=http://localhost:8000/v1, no key needed), or name another "
            "provider in GEAR_LLM_MODEL as provider:model (e.g. ollama:llama3.1). "
            f"The model name comes from GEAR_LLM_MODEL (now {settings.llm_model!r})."
        )
    try:
        from langchain_openai import ChatOpenAI
    except ImportError as exc:  # pragma: no cover - a core dependency
        raise LLMConfigError("langchain-openai is not installed: pip install langchain-openai") from exc
    # langchain-openai sends the cap as `max_completion_tokens`, which some OpenAI-compatible
    # servers (llama-cpp-python 0.3) ignore; they read only `max_tokens`, so send that too.
    extra_body = {"max_tokens": settings.llm_max_tokens} if base_url else None
    return ChatOpenAI(
        model=name,
        temperature=settings.llm_temperature,
        max_tokens=settings.llm_max_tokens,
        timeout=settings.llm_timeout_s,
        max_retries=0,
        api_key=api_key or LOCAL_SERVER_API_KEY,
        base_url=base_url,
        extra_body=extra_body,
    )


def _init_chat_model(settings: LLMSettings, provider: str, name: str) -> BaseChatModel:
    from langchain.chat_models import init_chat_model

    options: dict[str, Any] = {
        "temperature": settings.llm_temperature,
        _CAP_NAME.get(provider, "max_tokens"): settings.llm_max_tokens,
        "timeout": settings.llm_timeout_s,
        "max_retries": 0,
    }
    try:
        return init_chat_model(name, model_provider=provider, **options)
    except ImportError as exc:
        package = f"langchain-{provider.replace('_', '-')}"
        raise LLMConfigError(
            f"GEAR_LLM_MODEL={settings.llm_model!r} needs the {package} package: pip install {package}"
        ) from exc
    except (ValueError, TypeError) as exc:  # the provider's own checks (missing key, bad option)
        first = " ".join(str(exc).split())[:300]
        raise LLMConfigError(
            f"cannot build the chat model {settings.llm_model!r}: {type(exc).__name__}: {first}"
        ) from exc
