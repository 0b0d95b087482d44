"""``gear check`` for the page's health panel, run in a child process.

The check reads every row and vector of the index (about 2 s of CPU at 40,000 passages,
most of it Python building records), so on one of the server's threads it would hold the
GIL against the event loop (``/health`` and every shed request wait for it) and leave its
garbage in the server's heap. In a child process it has a GIL and a heap of its own,
handed back when it exits, and a lower CPU priority (:data:`CHECK_NICENESS`). The settings
go to the child pickled on its standard input (its own parent, no other reader), the
report comes back the same way.

    python -m gear_agent.serve.check_process < pickled-settings > pickled-report
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gear_agent.errors import GearError

if TYPE_CHECKING:
    from gear_agent.config import BackendSettings

CHECK_TIMEOUT_S = 600.0
"""The longest a check may take before the panel says it did not finish."""
PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
"""The folder holding this ``gear_agent``, put first on the child's path (the same code)."""


def check_report(settings: BackendSettings) -> dict[str, Any]:
    """``gear check``'s verdict, items and the index's size on disk, on any backend (its row
    of :data:`gear_agent.store.backends.BACKENDS` says how it is checked and sized)."""
    from gear_agent.store.backends import backend

    row = backend(settings.backend)
    report = row.check(settings) if row.check is not None else None
    return {
        "ok": None if report is None else report.ok,
        "size_bytes": None if row.size_on_disk is None else row.size_on_disk(settings),
        "items": [] if report is None else [
            {"name": i.name, "ok": i.ok, "detail": i.detail, "derived": i.derived} for i in report.items
        ],
    }


def check_in_child(settings: BackendSettings, timeout_s: float = CHECK_TIMEOUT_S) -> dict[str, Any]:
    """:func:`check_report` run by a child Python process (blocks until it is done).

    Raises:
        GearError: the child failed or ran past ``timeout_s`` (its last line says why).
    """
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (PACKAGE_ROOT, os.environ.get("PYTHONPATH")) if p)}
    try:
        done = subprocess.run([sys.executable, "-m", __name__], input=pickle.dumps(settings),
                              capture_output=True, env=env, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise GearError(f"gear check did not finish within {timeout_s:g} s") from None
    if done.returncode != 0:
        lines = done.stderr.decode(errors="replace").strip().splitlines()
        raise GearError(f"gear check failed: {lines[-1] if lines else f'exit status {done.returncode}'}")
    return pickle.loads(done.stdout)  # noqa: S301 - our own child's answer to our own request


CHECK_NICENESS = 10
"""How much lower the child's CPU priority is than the server's (POSIX ``nice``), so that on
a busy machine the server's event loop gets the CPU before the check does."""


def main() -> None:
    if hasattr(os, "nice"):
        os.nice(CHECK_NICENESS)  # before the heavy imports of the check itself
    settings = pickle.loads(sys.stdin.buffer.read())  # noqa: S301 - written by the parent server
    sys.stdout.buffer.write(pickle.dumps(check_report(settings)))


if __name__ == "__main__":
    main()
