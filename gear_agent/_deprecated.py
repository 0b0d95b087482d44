"""Old import paths kept working, with a DeprecationWarning: one helper for every shim."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable


def moved_names(module: str, names: dict[str, tuple[str, str]], why: str = "") -> Callable[[str], object]:
    """A module ``__getattr__`` that hands out each old name of ``names`` (old name ->
    (new module, new name)) with a DeprecationWarning; other names raise AttributeError.

    Example:
        >>> __getattr__ = moved_names(__name__, {"Runtime": ("gear_agent.open_index", "OpenIndex")})
    """

    def __getattr__(name: str) -> object:
        if name not in names:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        target, new = names[name]
        warnings.warn(f"{module}.{name} is now {target}.{new}{f' ({why})' if why else ''}",
                      DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(target), new)

    return __getattr__


def moved_module(module: str, target: str) -> Callable[[str], object]:
    """A module ``__getattr__`` for a module that moved whole to ``target``: every name of
    ``target``, with a DeprecationWarning.

    Example:
        >>> __getattr__ = moved_module(__name__, "gear_agent.retrieval.registry")
    """

    def __getattr__(name: str) -> object:
        moved = importlib.import_module(target)
        if name.startswith("__") or not hasattr(moved, name):
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warnings.warn(f"{module}.{name} is now {target}.{name}", DeprecationWarning, stacklevel=2)
        return getattr(moved, name)

    return __getattr__
