"""Deprecated: this module moved to :mod:`gear_agent.retrieval.llm_free` (the retrievers'
modules live in one package, :mod:`gear_agent.retrieval`)."""

from __future__ import annotations


def __getattr__(name: str) -> object:
    """Every name of :mod:`gear_agent.retrieval.llm_free`, with a DeprecationWarning."""
    import importlib
    import warnings

    module = importlib.import_module("gear_agent.retrieval.llm_free")
    if not hasattr(module, name):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(f"gear_agent.llm_free_retrievers.{name} is now gear_agent.retrieval.llm_free.{name}",
                  DeprecationWarning, stacklevel=2)
    return getattr(module, name)
