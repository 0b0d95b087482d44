"""One BLAS thread for the store's small queries.

A query's matrix-vector products are small (a few thousand rows); spread over every core
by OpenBLAS they gain nothing alone and lose badly under concurrent load: measured on the
2 shared cores with other work running, a 2,000 x 384 product took 27-31 ms with the
default two BLAS threads and 0.1-0.4 ms with one (``benchmarks/scale.py --threads``). The
store's searches therefore run with BLAS limited to one thread (process-wide while a
search runs, restored after); concurrent requests then use the cores, one each.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_controller: Any = None
_lock = threading.Lock()
_depth = 0
_limit: Any = None
ENABLED = True
"""Set to False to leave BLAS threading alone (for comparisons)."""


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Limit BLAS to one thread inside the block (re-entrant, shared across threads)."""
    global _controller, _depth, _limit
    if not ENABLED:
        yield
        return
    with _lock:
        if _controller is None:
            from threadpoolctl import ThreadpoolController

            _controller = ThreadpoolController()
        if _depth == 0:
            _limit = _controller.limit(limits=1, user_api="blas")
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _limit is not None:
                _limit.restore_original_limits()
                _limit = None


SMALL_ROWS = 4096
"""Below this many rows a product skips BLAS entirely (numpy's own loop, one thread)."""


def matvec(matrix: Any, vector: Any) -> Any:
    """``matrix @ vector`` on one thread: numpy's einsum for small matrices (no BLAS call,
    no thread hand-off), single-threaded BLAS for large ones."""
    import numpy as np

    if len(matrix) < SMALL_ROWS:
        return np.einsum("ij,j->i", matrix, vector)
    with one_blas_thread():
        return matrix @ vector


