"""What ``gear serve`` sets in its process before any thread starts, so that ``/health``
and the shedding of a flood never wait long behind the page's read threads.

* **The GIL's switch interval** down to :data:`SWITCH_INTERVAL_S` (Python's default is
  5 ms): a read thread building records in Python then hands the GIL to the event loop
  within a millisecond when the loop has a request to answer, instead of within five; a
  request passes the GIL several times between the loop and its sends, so this is what
  ``/health`` waits during a flood of reads on a busy machine.
* **Few malloc arenas** (:func:`gear_agent.serve.memory.limit_malloc_arenas`).
"""

from __future__ import annotations

import sys

from gear_agent.serve.memory import limit_malloc_arenas

SWITCH_INTERVAL_S = 0.001
"""The GIL's switch interval in the server (seconds)."""


def prepare_server_process() -> None:
    """Apply the module docstring's settings (a smaller switch interval is kept)."""
    limit_malloc_arenas()
    if sys.getswitchinterval() > SWITCH_INTERVAL_S:
        sys.setswitchinterval(SWITCH_INTERVAL_S)


__all__ = ["SWITCH_INTERVAL_S", "prepare_server_process"]
