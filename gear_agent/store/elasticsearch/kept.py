"""State read from an Elasticsearch index and kept in this process at one commit.

The graph expansion's triples (:mod:`.graph_cache`) and the passage vectors of ``ppr``'s dense
list (:mod:`.passage_vectors`) are both copies of documents, each a
:class:`~gear_agent.store.changes.Derived`: read whole by one walk, then brought up to date
from the change feed (what was removed dropped, what was added read by id). This is what
they share, with the exact search over the kept vectors (:meth:`KeptCopy.search`,
:meth:`KeptCopy.lowest`: a scan of the rows as they lie, no copy of them); each keeps its own
rows (``_clear``, ``_append``, ``apply``, ``_ids``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import numpy as np

from gear_agent.store.bm25 import top_k
from gear_agent.store.changes import Changes, Stamp, bring_up_to_date
from gear_agent.store.threads import matvec
from gear_agent.types import Hit

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

    def _ids(self) -> Sequence[str]:
        """The id of every row filled (removed ones included), in row order."""
        raise NotImplementedError

    def _scores(self, vector: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The live rows and their cosine with the normalised ``vector``: one product over the
        rows filled, read where they lie (a copy of the live rows first would move as many
        bytes again: 30 MB a question at 20,000 passages)."""
        filled = len(self._ids())
        rows = np.flatnonzero(self._alive[:filled])
        if filled == 0:
            return rows, np.zeros(0, np.float32)
        return rows, matvec(self._vectors[:filled], vector)[rows]

    def search(self, vector: np.ndarray, k: int) -> list[Hit]:
        """The ``k`` rows most cosine-similar to the normalised ``vector``, best first, by an
        exact scan (ties by the order read)."""
        with self.lock:
            rows, scores = self._scores(vector)
            chosen, values = top_k(scores, k)
            ids = self._ids()
            return [Hit(ids[r], float(v)) for r, v in zip(rows[chosen].tolist(), values.tolist(), strict=True)]

    def lowest(self, vector: np.ndarray) -> float | None:
        """The lowest cosine of ``vector`` with any row (None when there are none)."""
        with self.lock:
            _, scores = self._scores(vector)
            return float(scores.min()) if len(scores) else None

    def vector_bytes(self) -> int:
        """Bytes an exact scan of the live rows reads."""
        return len(self) * self.dimension * 4

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
