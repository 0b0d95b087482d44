"""gear-agent: GEAR (Graph-enhanced Agent for Retrieval-augmented Generation) on LangGraph.

Example:
    >>> from gear_agent import Gear  # doctest: +SKIP
    >>> gear = Gear("my-index", chat_model="openai:gpt-4o-mini")  # doctest: +SKIP
    >>> gear.index(["Oskar Brenner founded the Kestrel Observatory.",
    ...             "Oskar Brenner was married to Ilse Brenner."])  # doctest: +SKIP
    >>> gear.ask("Who was the spouse of the founder of the Kestrel Observatory?").answer  # doctest: +SKIP

Imports are lazy: ``import gear_agent`` loads nothing heavy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gear_agent.agent.graph import build_agent
    from gear_agent.config import GearSettings
    from gear_agent.errors import GearError
    from gear_agent.facade import Answer, Gear
    from gear_agent.retrieval.records import PassageRecord

__all__ = ["Answer", "Gear", "GearError", "GearSettings", "PassageRecord", "build_agent"]

_WHERE = {
    "Answer": "gear_agent.facade",
    "Gear": "gear_agent.facade",
    "GearError": "gear_agent.errors",
    "GearSettings": "gear_agent.config",
    "PassageRecord": "gear_agent.retrieval.records",
    "build_agent": "gear_agent.agent.graph",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'gear_agent' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
