"""gear-agent: GEAR (Graph-enhanced Agent for Retrieval-augmented Generation) on LangGraph.

Example:
    >>> from gear_agent import build_agent  # doctest: +SKIP
    >>> agent = build_agent()  # doctest: +SKIP
    >>> agent.invoke({"question": "In which county is Bled?"})["answer"]  # doctest: +SKIP

Imports are lazy: ``import gear_agent`` loads nothing heavy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gear_agent.agent.graph import build_agent
    from gear_agent.config import GearSettings

__all__ = ["GearSettings", "build_agent"]


def __getattr__(name: str) -> Any:
    if name == "build_agent":
        from gear_agent.agent.graph import build_agent

        return build_agent
    if name == "GearSettings":
        from gear_agent.config import GearSettings

        return GearSettings
    raise AttributeError(f"module 'gear_agent' has no attribute {name!r}")
