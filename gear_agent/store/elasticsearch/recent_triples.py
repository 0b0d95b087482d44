"""Triple documents of recent neighbours searches, kept for the reads that follow them.

A beam search asks for the neighbours of its beams, then for the :meth:`get` and the
:meth:`vectors` of the candidates those searches returned. The searches bring the documents
back whole, so they are kept here (the latest :data:`KEPT`) and the reads after them cost
no request. An id is the hash of the triple's content and the model is fixed per index, so a
kept document cannot differ from the stored one, but it may have been deleted since.

So the kept documents are derived state (:class:`~gear_agent.store.changes.Derived`) under
the one freshness rule: their stamp is the commit they were kept at, and
:func:`~gear_agent.store.changes.bring_up_to_date`, run before each search that keeps more,
drops what the change feed says was removed since (a triple removed, or any triple of a
removed passage), or forgets them all where the feed cannot say. A write through the store
that keeps them forgets them all at once (:meth:`RecentTriples.clear`).

Example:
    >>> recent = RecentTriples()
    >>> recent.remember([{"_id": "t1", "_source": {"passage_id": "p1"}}])
    >>> recent.found(["t1", "t2"]), "t2" in recent
    ({'t1': {'passage_id': 'p1'}}, False)
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from gear_agent.store.changes import Changes, Feed, Stamp, bring_up_to_date

__all__ = ["KEPT", "RecentTriples"]

KEPT = 4_096
"""Triple documents of recent neighbours searches kept for the reads that follow."""


class RecentTriples:
    """The kept triple documents, by id, oldest first (see the module).

    Args:
        limit: How many are kept (the latest).
    """

    def __init__(self, limit: int = KEPT) -> None:
        self.limit = limit
        self.stamp: Stamp | None = None
        self._docs: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._docs)

    def __contains__(self, triple_id: object) -> bool:
        return triple_id in self._docs

    # ---- Derived ------------------------------------------------------------------------
    def current(self, store: Feed) -> None:
        """Bring the kept documents to ``store``'s commit (:func:`bring_up_to_date`); none kept
        are at every commit (the stamp is read, the feed is not)."""
        with self._lock:
            if not self._docs:
                self.stamp = store.stamp()
                return
            bring_up_to_date(self, store)

    def can_apply(self, changes: Changes) -> bool:
        return changes.complete

    def apply(self, store: object, changes: Changes) -> None:
        """Drop the removed triples and every triple of a removed passage (listed or not)."""
        gone_passages = set(changes.passages_removed)
        for tid in changes.triples_removed:
            self._docs.pop(tid, None)
        if gone_passages:
            for tid in [t for t, doc in self._docs.items() if doc.get("passage_id") in gone_passages]:
                del self._docs[tid]

    def rebuild(self, store: object, generation: int) -> None:
        """Forget them all (they are read again by the searches that follow)."""
        self._docs.clear()

    # ---- use ----------------------------------------------------------------------------
    def clear(self) -> None:
        """Forget every kept document (a write through the store that keeps them): nothing is
        kept, at no commit, until the next :meth:`current`."""
        with self._lock:
            self._docs.clear()
            self.stamp = None

    def remember(self, hits: Sequence[dict[str, Any]]) -> None:
        """Keep the documents of search ``hits`` (``_id``, ``_source``), the latest :attr:`limit`."""
        with self._lock:
            docs = self._docs
            for hit in hits:
                docs.pop(hit["_id"], None)
                docs[hit["_id"]] = hit["_source"]
            for stale in list(docs)[: max(0, len(docs) - self.limit)]:
                del docs[stale]

    def found(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The kept documents among ``ids``."""
        with self._lock:
            docs = self._docs
            return {i: docs[i] for i in ids if i in docs}
