"""Deprecated: this module moved to :mod:`gear_agent.retrieval.registry` (the retrievers'
modules live in one package, :mod:`gear_agent.retrieval`)."""

from __future__ import annotations


def __getattr__(name: str) -> object:
    """Every name of :mod:`gear_agent.retrieval.registry`, with a DeprecationWarning."""
    import importlib
    import warnings

    module = importlib.import_module("gear_agent.retrieval.registry")
    if not hasattr(module, name):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(f"gear_agent.retrievers.{name} is now gear_agent.retrieval.registry.{name}",
                  DeprecationWarning, stacklevel=2)
    return getattr(module, name)
