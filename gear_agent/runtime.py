"""Deprecated: ``Runtime`` is now :class:`gear_agent.open_index.OpenIndex`."""

from __future__ import annotations


def __getattr__(name: str) -> object:
    """``Runtime``, the old name of :class:`~gear_agent.open_index.OpenIndex`, with a
    DeprecationWarning (it collided with LangGraph's ``langgraph.runtime.Runtime``)."""
    if name == "Runtime":
        import warnings

        from gear_agent.open_index import OpenIndex

        warnings.warn("gear_agent.runtime.Runtime is now gear_agent.open_index.OpenIndex "
                      "(the old name collided with langgraph.runtime.Runtime)",
                      DeprecationWarning, stacklevel=2)
        return OpenIndex
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
