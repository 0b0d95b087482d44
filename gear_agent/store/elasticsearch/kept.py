"""State read from an Elasticsearch index and kept in this process at one commit.

The graph expansion's triples (:mod:`.graph_cache`) and the passage vectors of ``ppr``'s dense
list (:mod:`.passage_vectors`) are both copies of documents, each a
:class:`~gear_agent.store.changes.Derived`: read whole by one walk, then brought up to date
from the change feed (what was removed dropped, what was added read by id). This is what
they share; each keeps its own rows (``_clear``, ``_append``, ``apply``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import numpy as np

from gear_agent.store.changes import Changes, Stamp, bring_up_to_date

__all__ = ["DocumentReader", "KeptCopy"]

DocumentReader = Callable[[Sequence[str] | None], Iterator[list[dict[str, Any]]]]
"""Reads documents in batches: every one (in the index's order) for None, else those ids."""

K = TypeVar("K", bound="KeptCopy")


class KeptCopy:
    """A copy kept at one commit: ``stamp`` is the commit it reflects, :meth:`current` brings it
    up to date first, and reads and updates hold :attr:`lock`.

    Args:
        dimension: The vectors' dimension.
        read: Where the documents come from (:data:`DocumentReader`).
    """

    def __init__(self, dimension: int, read: DocumentReader) -> None:
        self.dimension, self._read = dimension, read
        self.stamp: Stamp | None = None
        self.lock = threading.RLock()
        self._clear()

    def _clear(self) -> None:
        """Forget every row (a subclass forgets its own columns too, then calls this)."""
        self._row: dict[str, int] = {}
        self._vectors = np.zeros((0, self.dimension), dtype=np.float32)
        self._alive = np.zeros(0, dtype=bool)

    def __len__(self) -> int:
        return len(self._row)

    def _append(self, docs: list[dict[str, Any]]) -> None:
        raise NotImplementedError

    def _put_vectors(self, start: int, vectors: np.ndarray) -> None:
        """Write ``vectors`` as the live rows from ``start`` on, the arrays (``_vectors``,
        ``_alive``) grown by half when full."""
        need = start + len(vectors)
        if need > len(self._vectors):
            grown = np.zeros((max(need, int(len(self._vectors) * 1.5) + 1024), self.dimension), dtype=np.float32)
            grown[:start] = self._vectors[:start]
            alive = np.zeros(len(grown), dtype=bool)
            alive[:start] = self._alive[:start]
            self._vectors, self._alive = grown, alive
        self._vectors[start:need] = vectors
        self._alive[start:need] = True

    def current(self: K, store: Any) -> K:
        """This copy at ``store``'s commit (:func:`bring_up_to_date`); a copy already at a later
        commit of the same index is used as it is (reads by id see the latest documents
        anyway, and another thread's question may have moved it on)."""
        now = store.stamp()
        held = self.stamp
        if held is not None and held.index_id == now.index_id and held.generation >= now.generation:
            return self
        bring_up_to_date(self, store)
        return self

    def can_apply(self, changes: Changes) -> bool:
        return changes.complete

    def rebuild(self, store: Any, generation: int) -> None:
        """Read every document again (one walk over the index)."""
        self._clear()
        for batch in self._read(None):
            self._append(batch)
        self._settle()

    def _settle(self) -> None:
        """After rows were added: a subclass turns the per-row lists it filled into tuples,
        which the garbage collector stops tracking once it has seen them (a full collection
        walks every item of a list, every time: tens of milliseconds at 100,000s of rows)."""
