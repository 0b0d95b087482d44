"""Every passage vector of an Elasticsearch index, kept in this process for ``ppr``'s large searches.

``ppr`` asks, per question, for the query's 1,000 nearest passages (its dense list) and the
lowest cosine of any passage (a min-max normalisation). Asked of the cluster, the first is an
HNSW search of 2,000 candidates returning a thousand hits and the second one more search: most
of a ``ppr`` question's time on the test cluster (docs/elasticsearch.md). An exact scan of the
kept vectors answers both in a few milliseconds at 20,000 passages (a float32 row each: 1.5 kB
at 384 dimensions, 30 MB at 20,000 passages, 150 MB at 100,000), exactly, as an exact search
would (ties by the order read). It is state derived from the index
(:class:`~gear_agent.store.changes.Derived`): read by one walk at first use, brought up to date
by the change feed when the store's generation moved (removed passages dropped, added ones read
by id), never saved (a walk of the passage vectors is seconds, not minutes).

Example:
    >>> kept = PassageVectors(2, lambda ids: iter([[{"id": "p1", "vector": [1.0, 0.0]},
    ...                                              {"id": "p2", "vector": [0.0, 1.0]}]]))
    >>> kept.rebuild(None, 1); [h.id for h in kept.search(np.array([1.0, 0.0], np.float32), 1)]
    ['p1']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from gear_agent.store.changes import Changes
from gear_agent.store.elasticsearch.kept import KeptCopy
from gear_agent.store.elasticsearch.mappings import VECTOR_FIELD

__all__ = ["LARGE_SEARCH", "PassageVectors"]

LARGE_SEARCH = 200
"""A passage kNN search of at least this many hits, without a filter, is answered from the kept
vectors (a question's dense list for ``ppr``); smaller ones still go to the cluster."""



class PassageVectors(KeptCopy):
    """The passage vectors of an index at one commit (see the module); reads hold :attr:`lock`."""

    def _clear(self) -> None:
        super()._clear()
        self._row_ids: list[str] | tuple[str, ...] = ()  # a list while rows are added, a tuple after (_settle)

    def apply(self, store: Any, changes: Changes) -> None:
        gone = [self._row.pop(pid) for pid in changes.passages_removed if pid in self._row]
        self._alive[gone] = False
        added = [pid for pid in dict.fromkeys(changes.passages_added) if pid not in self._row]
        if added:
            for batch in self._read(added):
                self._append(batch)
            self._settle()

    def _settle(self) -> None:
        self._row_ids = tuple(self._row_ids)

    def _append(self, docs: list[dict[str, Any]]) -> None:
        docs = [d for d in dict((d["id"], d) for d in docs).values() if d["id"] not in self._row]
        if not docs:
            return
        start = len(self._row_ids)
        self._put_vectors(start, np.asarray([d[VECTOR_FIELD] for d in docs], dtype=np.float32))
        ids = list(self._row_ids) if isinstance(self._row_ids, tuple) else self._row_ids
        for row, doc in enumerate(docs, start):
            ids.append(doc["id"])
            self._row[doc["id"]] = row
        self._row_ids = ids

    def _ids(self) -> Sequence[str]:
        return self._row_ids
