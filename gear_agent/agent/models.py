"""The chat models one agent may call: the configured one, and others chosen per run.

A run names its model in LangGraph's context (``agent.invoke(inputs, context={"model":
"ollama:llama3.1"})``) or, for clients that only pass a config (LangServe), in
``config={"configurable": {"model": ...}}``. :class:`ChatModels` builds the
:class:`~gear_agent.llm.client.LLMClient` of each model once, on first use, and keeps it,
so one deployment serves several models without rebuilding anything per run. Only the
configured model and those listed in ``GEAR_LLM_MODELS`` may be chosen (``*`` allows any).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from gear_agent.config import LLMSettings
from gear_agent.llm.client import LLMClient
from gear_agent.llm.errors import LLMConfigError

CONTEXT_KEY = "model"
"""The key that names a run's chat model, in ``context`` and in ``configurable``."""


class ChatModels:
    """One :class:`LLMClient` per model name, built lazily and kept (thread-safe).

    Args:
        settings: How to build a client (the LLM section; a ``GearSettings`` is one):
            ``llm_model`` is the default model and ``llm_models`` the others a run may choose.
        default: A ready client for the default model (a test double, or a chat model the
            caller passed); built from ``settings`` on first use when None.
        clients: Ready clients of other models, by name (test doubles, or models built by
            hand); each must still be allowed by ``settings.llm_models``.

    Example:
        >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
        >>> models = ChatModels(LLMSettings(), LLMClient(FakeListChatModel(responses=["ok"])))
        >>> models.get(None).invoke("hi", node="qa").text
        'ok'
        >>> models.get("ollama:llama3.1")  # doctest: +IGNORE_EXCEPTION_DETAIL
        Traceback (most recent call last):
        gear_agent.llm.errors.LLMConfigError: the model 'ollama:llama3.1' may not be chosen ...
    """

    def __init__(
        self,
        settings: LLMSettings,
        default: LLMClient | None = None,
        clients: Mapping[str, LLMClient] | None = None,
    ) -> None:
        self.settings = settings
        self._clients: dict[str, LLMClient] = {}
        for name, client in (clients or {}).items():
            if not self.allows(name):
                raise LLMConfigError(f"the model {name!r} is not in run_models {settings.run_models}")
            self._clients[name] = client
        if default is not None:
            self._clients[settings.llm_model] = default
        self._lock = threading.Lock()

    @property
    def default(self) -> LLMClient:
        """The configured model's client (built on first use).

        Raises:
            LLMConfigError: The configured model cannot be built (no key, no package).
        """
        return self.get(None)

    def allows(self, name: str) -> bool:
        """Whether a run may choose the model ``name``."""
        allowed = self.settings.run_models
        return name == self.settings.llm_model or "*" in allowed or name in allowed

    def get(self, name: str | None) -> LLMClient:
        """The client of the model ``name`` (the default one when None or empty).

        Raises:
            LLMConfigError: ``name`` is not the configured model nor in ``GEAR_LLM_MODELS``,
                or its client cannot be built (the message names the missing package or key).
        """
        name = (name or "").strip() or self.settings.llm_model
        client = self._clients.get(name)
        if client is not None:
            return client
        if not self.allows(name):
            listed = ", ".join(self.settings.run_models) or "none"
            raise LLMConfigError(
                f"the model {name!r} may not be chosen per run: this deployment serves "
                f"{self.settings.llm_model!r} and GEAR_LLM_MODELS lists {listed}; add it there "
                "(comma-separated, or * for any)"
            )
        with self._lock:
            client = self._clients.get(name)
            if client is None:
                client = LLMClient.from_settings(self.settings.model_copy(update={"llm_model": name}))
                self._clients[name] = client
        return client


def chosen_model(context: Any, config: Mapping[str, Any] | None = None) -> str | None:
    """The model a run names: its context's ``model`` (``Runtime[GearContext].context``),
    else ``configurable["model"]`` (clients that only pass a config: LangServe), else None.

    Raises:
        LLMConfigError: The value is not a name.

    Example:
        >>> chosen_model(None, {"configurable": {"model": "ollama:llama3.1"}})
        'ollama:llama3.1'
        >>> chosen_model({"model": "a"}, {"configurable": {"model": "b"}})
        'a'
        >>> chosen_model(None) is None
        True
    """
    for value in _values(context, config, CONTEXT_KEY):
        if isinstance(value, str) and value.strip():
            return value.strip()
        if value is not None and not isinstance(value, str):
            raise LLMConfigError(f"the run's model must be a name, got {type(value).__name__}")
    return None


def run_option(context: Any, config: Mapping[str, Any] | None, key: str) -> Any:
    """A per-run value named ``key``: the run's context's (a ``GearContext`` dict, or a
    dataclass or pydantic context), else ``configurable``'s, else None.

    Example:
        >>> run_option(None, {"configurable": {"deadline_s": 30}}, "deadline_s")
        30
    """
    return next((value for value in _values(context, config, key) if value is not None), None)


def _values(context: Any, config: Mapping[str, Any] | None, key: str) -> list[Any]:
    """``key``'s value in the run's context, then in ``configurable``."""
    configurable = (config or {}).get("configurable") or {}
    return [source.get(key) if isinstance(source, Mapping) else getattr(source, key, None)
            for source in (context, configurable)]
