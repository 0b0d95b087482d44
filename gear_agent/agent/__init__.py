"""The GEAR agent: a LangGraph loop of retrieve, read, link, expand, reason and rewrite.

Imports are lazy so that ``import gear_agent.agent`` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gear_agent.agent.graph import build_agent, build_graph
    from gear_agent.agent.state import GearState, InputState, OutputState
    from gear_agent.parts import IndexParts, index_parts

__all__ = [
    "GearState", "IndexParts", "InputState", "OutputState", "build_agent", "build_graph", "index_parts",
]

_WHERE = {
    "build_agent": "gear_agent.agent.graph",
    "build_graph": "gear_agent.agent.graph",
    "IndexParts": "gear_agent.parts",
    "index_parts": "gear_agent.parts",
    "GearState": "gear_agent.agent.state",
    "InputState": "gear_agent.agent.state",
    "OutputState": "gear_agent.agent.state",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'gear_agent.agent' has no attribute {name!r}")
