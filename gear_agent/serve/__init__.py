"""The GEAR agent as a LangServe HTTP service (optional: ``pip install gear-agent[serve]``).

Only ``gear serve`` imports this package; the agent itself never imports LangServe.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gear_agent.serve.app import create_app, gear_runnable
    from gear_agent.serve.schemas import GearRequest, GearResponse, request_model

__all__ = ["GearRequest", "GearResponse", "create_app", "gear_runnable", "request_model"]

_WHERE = {
    "create_app": "gear_agent.serve.app",
    "gear_runnable": "gear_agent.serve.app",
    "GearRequest": "gear_agent.serve.schemas",
    "GearResponse": "gear_agent.serve.schemas",
    "request_model": "gear_agent.serve.schemas",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'gear_agent.serve' has no attribute {name!r}")
