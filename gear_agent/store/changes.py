"""Commit generations and the change feed: how derived state names the commit it reflects.

Every commit a store makes gets the next **generation** (1, 2, ...; 0 is an empty store).
:meth:`Store.changes_since` lists what the commits after a generation added and removed,
so whatever is computed from a store (the PPR graph and its phrase ANN, a cache beside the
index) records the generation it reflects and is brought up to date from those changes by
one rule, :func:`bring_up_to_date`; it is never judged fresh by counting rows (a delete
followed by an add of as many records leaves every count the same).

Inside the embedded store, the ANN parts and the BM25 segments are written in the commit
that changes their rows, so they always reflect the store's generation; SiReRAG nodes
lose deleted passages in the commit that deletes them.

Example:
    >>> changes = Changes(since=3, generation=5, passages_added=("p-2",), passages_removed=("p-1",))
    >>> changes.removes_anything, changes.empty
    (True, False)
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from gear_agent.store.base import Store

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Changes:
    """What the commits after generation ``since`` up to ``generation`` did.

    Attributes:
        since: The generation the changes start after.
        generation: The generation they bring a reader to.
        passages_added: Ids of passages stored now that were not at ``since``.
        passages_removed: Ids of passages stored at ``since`` that are deleted now.
        triples_added: Ids of triples stored now that were not at ``since``.
        triples_removed: Ids of triples stored at ``since`` that are deleted now (a
            backend that cannot list them leaves them out: a removed passage takes its
            triples with it, so a reader that sees ``passages_removed`` rebuilds).
        complete: False when the store no longer knows the changes since ``since`` (a
            generation from another index, or before the feed began): rebuild instead.
    """

    since: int
    generation: int
    passages_added: tuple[str, ...] = ()
    passages_removed: tuple[str, ...] = ()
    triples_added: tuple[str, ...] = ()
    triples_removed: tuple[str, ...] = ()
    complete: bool = True

    @property
    def removes_anything(self) -> bool:
        """True when a passage or triple present at ``since`` is gone."""
        return bool(self.passages_removed or self.triples_removed)

    @property
    def empty(self) -> bool:
        """True when nothing was added or removed (the generation may still have moved)."""
        return not (self.passages_added or self.triples_added or self.removes_anything)


class Derived(Protocol):
    """Something computed from a store that knows which commit it reflects."""

    @property
    def generation(self) -> int:
        """The store generation this state reflects (-1: unknown, rebuild)."""
        ...

    def apply(self, store: Store, changes: Changes) -> None:
        """Take in ``changes`` (complete, adds only, or removals it can handle)."""
        ...

    def rebuild(self, store: Store, generation: int) -> None:
        """Compute everything again from ``store`` as of ``generation``."""
        ...

    def can_apply(self, changes: Changes) -> bool:
        """Whether :meth:`apply` can take these changes (else :meth:`rebuild`)."""
        ...


def bring_up_to_date(derived: Derived, store: Store) -> bool:
    """The one freshness rule: compare generations; apply the changes since, or rebuild.

    Call it inside ``store.snapshot()`` so the generation read and the records read are of
    the same commit. Returns True when ``derived`` changed.

    Example:
        >>> with store.snapshot():  # doctest: +SKIP
        ...     bring_up_to_date(graph, store)
    """
    now = store.generation()
    if derived.generation == now:
        return False
    if derived.generation < 0 or derived.generation > now:
        derived.rebuild(store, now)
        return True
    changes = store.changes_since(derived.generation)
    if changes.complete and derived.can_apply(changes):
        derived.apply(store, changes)
    else:
        derived.rebuild(store, changes.generation)
    return True


Listener = Callable[[int], None]
"""Called with the new generation after a store object commits (the write path)."""


class Listeners:
    """The in-process listeners of one store object, told after each of its commits.

    A listener that fails is logged and kept: a derived cache must never undo a commit
    that has already happened.
    """

    def __init__(self) -> None:
        self._listeners: list[Listener] = []
        self._lock = threading.Lock()

    def add(self, listener: Listener) -> Callable[[], None]:
        with self._lock:
            self._listeners.append(listener)

        def remove() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return remove

    def __bool__(self) -> bool:
        return bool(self._listeners)

    def notify(self, generation: int) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(generation)
            except Exception:  # the commit stands; the listener catches up at its next query
                logger.exception("a listener of commit %d failed; it catches up at its next use", generation)
