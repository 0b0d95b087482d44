"""Old import paths and call forms kept working for a while, with a DeprecationWarning that
names the release that removes them: one helper for every shim (as LangGraph's
``langgraph/warnings.py`` does). ``tests/unit/test_deprecations.py`` fails once the package
reaches a shim's ``removed_in`` version, so no shim outlives its announcement.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable

#: The release that removes every shim deprecated during the 0.1 series.
NEXT_REMOVAL = "0.3.0"


def warn_deprecated(message: str, *, removed_in: str, stacklevel: int = 2) -> None:
    """Warn (DeprecationWarning) that ``message``'s old form goes in ``removed_in``.

    Example:
        >>> warn_deprecated("f(runtime) is now f(index)", removed_in=NEXT_REMOVAL)  # doctest: +SKIP
    """
    warnings.warn(f"{message} (deprecated; removed in gear-agent {removed_in})",
                  DeprecationWarning, stacklevel=stacklevel + 1)


def moved_names(module: str, names: dict[str, tuple[str, str]], why: str = "", *,
                removed_in: str) -> Callable[[str], object]:
    """A module ``__getattr__`` that hands out each old name of ``names`` (old name ->
    (new module, new name)) with a DeprecationWarning; other names raise AttributeError.

    Example:
        >>> __getattr__ = moved_names(__name__, {"Runtime": ("gear_agent.open_index", "OpenIndex")},
        ...                           removed_in=NEXT_REMOVAL)
    """

    def __getattr__(name: str) -> object:
        if name not in names:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        target, new = names[name]
        warn_deprecated(f"{module}.{name} is now {target}.{new}{f' ({why})' if why else ''}",
                        removed_in=removed_in)
        return getattr(importlib.import_module(target), new)

    return __getattr__


def moved_module(module: str, target: str, *, removed_in: str) -> Callable[[str], object]:
    """A module ``__getattr__`` for a module that moved whole to ``target``: every name of
    ``target``, with a DeprecationWarning.

    Example:
        >>> __getattr__ = moved_module(__name__, "gear_agent.registry",
        ...                            removed_in=NEXT_REMOVAL)
    """

    def __getattr__(name: str) -> object:
        moved = importlib.import_module(target)
        if name.startswith("__") or not hasattr(moved, name):
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warn_deprecated(f"{module}.{name} is now {target}.{name}", removed_in=removed_in)
        return getattr(moved, name)

    return __getattr__
