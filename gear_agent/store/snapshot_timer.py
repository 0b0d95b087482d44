"""``GEAR_SNAPSHOT_EVERY``: a server snapshots its index on a timer.

One daemon thread waits ``snapshot_every`` seconds, then asks the backend for a snapshot
(:data:`gear_agent.store.backends.BACKENDS`' ``snapshot``: the embedded store's is skipped
when the newest snapshot already holds the last commit), and again. A snapshot that fails
(a full disk, a cluster without the repository) is logged as a warning with its one-line
reason and kept in :attr:`SnapshotTimer.last_error`; the timer goes on and the server is
not stopped by it.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from gear_agent.errors import GearError

if TYPE_CHECKING:
    from gear_agent.config import BackendSettings

logger = logging.getLogger(__name__)


class SnapshotTimer:
    """Snapshots of ``settings``' index every ``settings.snapshot_every`` seconds.

    Args:
        settings: Which index, how often, how many to keep.
        take: ``take(only_if_changed) -> line or None``; the backend's by default.

    Example:
        >>> timer = SnapshotTimer(settings)  # doctest: +SKIP
        >>> timer.start(); ...; timer.stop()  # doctest: +SKIP
    """

    def __init__(self, settings: BackendSettings, take: Callable[[bool], str | None] | None = None) -> None:
        from gear_agent.store.backends import backend

        self.every = float(settings.snapshot_every)
        row = backend(settings.backend)
        self._take = take if take is not None else (lambda changed_only: row.snapshot(settings, changed_only))
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.taken = 0
        self.last_error: str | None = None

    def tick(self) -> str | None:
        """Take one snapshot now if the index changed; the line, or None."""
        try:
            line = self._take(True)
        except GearError as exc:
            self.last_error = str(exc)
            logger.warning("snapshot failed: %s", exc)
            return None
        if line is not None:
            self.taken += 1
            self.last_error = None
            logger.info("%s", line)
        return line

    def start(self) -> None:
        """Start the timer's thread (nothing when ``snapshot_every`` is 0)."""
        if self.every <= 0 or self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="gear-snapshots", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the timer; a snapshot under way finishes first."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.tick()


def with_timer(lifespan: Callable[[Any], Any], timer: SnapshotTimer) -> Callable[[Any], Any]:
    """An ASGI app's ``lifespan`` that also runs ``timer`` while the app is up (started, if
    it is not already, before the app's own start-up; stopped after its shutdown, off the
    event loop). A server that runs no lifespan (``gear serve``'s warm-up wrapper) keeps the
    timer, a daemon thread, until the process ends."""

    @asynccontextmanager
    async def running(app: Any) -> AsyncIterator[Any]:
        timer.start()
        try:
            async with lifespan(app) as state:
                yield state
        finally:
            await asyncio.to_thread(timer.stop)

    return running
