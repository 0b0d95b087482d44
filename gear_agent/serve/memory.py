"""The server process's memory: few malloc arenas, and freed memory handed back after a burst.

glibc gives every thread that allocates its own malloc arena (up to eight per core) and
keeps what is freed in it for reuse, so after a flood of page reads on several threads the
process stays as big as at the flood's peak. :func:`limit_malloc_arenas` caps the arenas
(as ``MALLOC_ARENA_MAX`` does; ``gear serve`` calls it before any thread starts:
:mod:`gear_agent.serve.process`) and :func:`release_free_memory` hands the free pages back
(``malloc_trim``; the page calls it once its reads have been idle a moment:
:class:`gear_agent.serve.web.WebPage`). Both do nothing where the C library is not glibc.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os

M_ARENA_MAX = -8
"""``mallopt``'s parameter number for the arena cap (glibc's ``malloc.h``)."""
SERVER_ARENAS = 2
"""The arenas the server keeps (``MALLOC_ARENA_MAX`` in the environment wins)."""


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        libc = ctypes.CDLL(name)
    except OSError:
        return None
    return libc if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None


def limit_malloc_arenas(count: int = SERVER_ARENAS) -> bool:
    """Cap glibc's malloc arenas at ``count`` unless ``MALLOC_ARENA_MAX`` is set; returns
    whether the cap was set (False off glibc). Arenas made before the call stay."""
    libc = _glibc()
    if libc is None or os.environ.get("MALLOC_ARENA_MAX"):
        return False
    return bool(libc.mallopt(M_ARENA_MAX, count))


def release_free_memory() -> bool:
    """Hand the free pages of every malloc arena back to the system (``malloc_trim(0)``);
    returns whether any was (False off glibc)."""
    libc = _glibc()
    return bool(libc.malloc_trim(0)) if libc is not None else False


__all__ = ["limit_malloc_arenas", "release_free_memory"]
