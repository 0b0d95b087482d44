"""The GEAR agent for ``langgraph dev``, LangGraph Studio and LangGraph Platform (``langgraph.json``).

``graph`` is a graph factory: importing this module loads nothing (no index, no embedding
model, no chat model), so the server starts at once. A schema or drawing request gets the
agent's graph described (:func:`~gear_agent.agent.graph.describe_agent`: no LLM needed,
milliseconds); the first run builds the agent in a worker thread, and every later one
reuses it. Settings come from
the environment (``GEAR_*``: ``GEAR_INDEX_DIR``, ``GEAR_LLM_MODEL``, ``GEAR_LLM_MODELS``,
...). A run may pick another chat model in its context (``{"model": "ollama:llama3.1"}``,
one of ``GEAR_LLM_MODELS``). Compiled without a checkpointer: the LangGraph server brings
its own persistence, so a thread is a conversation (Studio's chat, Agent Chat UI).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph
    from langgraph_sdk.runtime import ServerRuntime


class _BuildOnce:
    """Calls ``build`` once, on first use, from whichever thread asks first; then keeps it."""

    def __init__(self, build: Callable[[], Any]) -> None:
        self._build = build
        self._lock = threading.Lock()
        self._value: Any = None

    def __call__(self) -> Any:
        if self._value is None:
            with self._lock:
                if self._value is None:
                    self._value = self._build()
        return self._value


def build() -> CompiledStateGraph:
    """The agent over the index the environment names (loads the index and the models)."""
    from gear_agent.agent.graph import build_agent
    from gear_agent.config import settings_from

    return build_agent(settings_from())  # a bad GEAR_* value: one-line SettingsError


_agent = _BuildOnce(build)


def describe() -> CompiledStateGraph:
    """The agent's graph for schema and drawing requests (no index or models loaded)."""
    from gear_agent.agent.graph import describe_agent
    from gear_agent.config import settings_from

    return describe_agent(settings_from())


_description = _BuildOnce(describe)


async def graph(runtime: ServerRuntime) -> Any:
    """For a run, the compiled GEAR agent, built on the first call (off the event loop),
    then reused; for anything else (schemas, drawing), the graph described.

    langgraph-api passes ``runtime`` because of the annotation, which it resolves itself
    (``ServerRuntime`` by name); the return annotation stays ``Any`` so that resolving the
    annotations needs nothing imported here.
    """
    if runtime.access_context != "threads.create_run":
        return _description()
    return await asyncio.to_thread(_agent)
