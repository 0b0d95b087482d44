"""What graph expansion reads of an Elasticsearch index, kept in this process.

Graph expansion (NaiveGE's beam search, the agent's) asks, per question, for the triples of
its base passages, the neighbours of each beam's last triple (the triples sharing its head
or tail entity, the most query-similar first), their vectors and their passages. Asked of
the cluster, that is a round trip per step carrying up to a thousand vectors as JSON, most
of a question's time (docs/elasticsearch.md, "Graph expansion at interactive speed"). Here
it is kept client-side instead, as state derived from the index
(:class:`~gear_agent.store.changes.Derived`): every triple's id, parts, passage, entity ends,
extraction order and vector; the entity adjacency (entity -> triples); the passage -> triples
map. It is built by one walk over the triple index at first use and brought up to date by the
change feed (:meth:`Store.changes_since`) when the store's generation moved: the triples
removed are dropped, the triples added read by id. So a question's expansion costs no
request, and answers as the embedded store does: neighbours by an exact cosine over the
adjacent triples, ties by insertion order (the embedded store's ``top_k`` over its rows). On an
index whose triple vectors are few enough (``TRIPLE_SCAN_BYTES`` of :mod:`.store`), ``ppr``'s seed
triples and their lowest cosine are an exact scan of these rows too (:meth:`KeptCopy.search`,
:meth:`KeptCopy.lowest`), and ``ppr`` makes the cache for it.

Memory: a float32 row per triple (1.5 kB at 384 dimensions: about 270 MB at 180,000 triples,
1.4 GB at 900,000) plus the parts' strings; it is made only when expansion first runs.

Example:
    >>> cache = ExpansionCache(2, lambda ids: iter([[_doc("t1", "A", "b", "B", "p1", 0)]]))
    >>> cache.rebuild(None, 0); cache.triples_of_passages(["p1", "p2"])
    [['t1'], []]
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from gear_agent.store.bm25 import top_k
from gear_agent.store.changes import Changes, Stamp
from gear_agent.store.derived_files import verify, write_atomically
from gear_agent.store.elasticsearch.kept import KeptCopy
from gear_agent.store.elasticsearch.mappings import VECTOR_FIELD
from gear_agent.store.threads import matvec
from gear_agent.types import Triple

__all__ = ["CACHE_FILE", "DOCUMENT_FIELDS", "ExpansionCache", "RecordReader"]

logger = logging.getLogger(__name__)

CACHE_FILE = "expansion-triples.json"
"""The saved cache's manifest in the store's derived folder (its vectors: the same name, ``.npy``)."""
_FORMAT = 2

DOCUMENT_FIELDS = ("id", "subject", "predicate", "object", "passage_id", "head", "tail", "added_ns",
                   "position", VECTOR_FIELD)
"""The fields of a triple document the cache reads."""

RecordReader = Callable[[Sequence[str] | None], Iterator[list[dict[str, Any]]]]
"""Reads triple documents (``_source`` with the vector, ``head``, ``tail``, ``added_ns`` and
``position``) in batches: every triple in extraction order for None, else those ids (unknown
ids left out)."""


def _doc(tid: str, s: str, p: str, o: str, pid: str, n: int, vector: Sequence[float] = (1.0, 0.0)) -> dict[str, Any]:
    """A triple document as the index stores it (for the examples and tests)."""
    return {"id": tid, "subject": s, "predicate": p, "object": o, "passage_id": pid, "head": s.lower(),
            "tail": o.lower(), "added_ns": n, "position": 0, VECTOR_FIELD: list(vector)}


_COLUMNS = ("id", "subject", "predicate", "object", "passage_id", "head", "tail", "added_ns", "position")
"""The columns kept per triple (row), each one tuple: a few objects for the garbage collector,
not one per triple (a full collection over per-triple objects took a second at 180,000 triples
on the loaded test machine), and tuples rather than lists, since the collector stops tracking a
tuple of strings and numbers once it has seen it while it walks every item of a list at every
full collection (nine lists of 190,000 items: 55 ms a collection, the tail of a ``ppr``
question; tuples: 5 to 10 ms, as a process without the cache)."""

_NO_ROWS = np.zeros(0, np.int64)


class ExpansionCache(KeptCopy):
    """The triples of an index as graph expansion reads them, at one commit (see the module).

    ``stamp`` is the commit it reflects (:func:`bring_up_to_date` sets it); :meth:`current`
    brings it up to date first. Reads and updates hold :attr:`lock`. Rows are kept in the
    order read (extraction order), a removed one marked dead; the adjacency and the passage
    map are arrays of rows.

    Args:
        dimension: The vectors' dimension.
        read: Where the triple documents come from (:data:`RecordReader`).
        folder: Where it is saved after a full read (:data:`CACHE_FILE`) and loaded from by the
            next process, which then takes in the changes since (None: kept in memory only).
    """

    def __init__(self, dimension: int, read: RecordReader, folder: Path | None = None) -> None:
        self.folder = None if folder is None else Path(folder)
        super().__init__(dimension, read)
        if self.folder is not None:
            self._load()

    def _clear(self) -> None:
        super()._clear()
        self._columns: dict[str, list[Any] | tuple[Any, ...]] = {name: () for name in _COLUMNS}
        self._by_entity: dict[str, np.ndarray] = {}
        self._by_passage: dict[str, np.ndarray] = {}

    # ---- Derived ------------------------------------------------------------------------
    def rebuild(self, store: Any, generation: int) -> None:
        """Read every triple again (one walk over the index, in extraction order). They are
        saved by :meth:`current` once the stamp is set, when there is a folder: the next
        process loads them and takes in the changes since."""
        super().rebuild(store, generation)
        self._rebuilt = True

    def _settle(self) -> None:
        """The columns as tuples again after they were filled (see :data:`_COLUMNS`)."""
        self._columns = {name: tuple(column) for name, column in self._columns.items()}

    def current(self, store: Any) -> ExpansionCache:
        super().current(store)
        if self.__dict__.pop("_rebuilt", False) and self.folder is not None:
            self._save()
        return self

    def apply(self, store: Any, changes: Changes) -> None:
        """Removals first (an id deleted and added again is in both lists), then the added
        triples read by id, in the feed's order (extraction order)."""
        passage_of = self._columns["passage_id"]
        gone = [self._row.pop(tid) for tid in changes.triples_removed if tid in self._row]
        removed_passages = set(changes.passages_removed)
        for pid in removed_passages:  # a passage's triples go with it, listed or not
            for row in self._by_passage.pop(pid, _NO_ROWS).tolist():
                if self._row.get(self._columns["id"][row]) == row:
                    del self._row[self._columns["id"][row]]
                    gone.append(row)
        if gone:
            self._alive[gone] = False
            for pid in {passage_of[row] for row in gone} - removed_passages:
                rows = self._by_passage.get(pid)
                if rows is not None:
                    self._by_passage[pid] = rows[self._alive[rows]]
        added = [tid for tid in dict.fromkeys(changes.triples_added) if tid not in self._row]
        if added:
            for batch in self._read(added):
                self._append(batch, resort=True)
            self._settle()

    # ---- the saved copy -----------------------------------------------------------------
    def _paths(self) -> tuple[Path, Path]:
        assert self.folder is not None
        manifest = self.folder / CACHE_FILE
        return manifest, manifest.with_suffix(".npy")

    def _save(self) -> None:
        """Write the vectors, then the manifest naming their checksum (a reader trusts the
        pair only when they agree); a failure is logged, the cache stays in memory."""
        manifest, vectors = self._paths()
        live = np.flatnonzero(self._alive[: len(self._columns["id"])])
        try:
            self.folder.mkdir(parents=True, exist_ok=True)  # type: ignore[union-attr]
            matrix = self._vectors[live]

            def write_vectors(path: Path) -> None:
                with path.open("wb") as handle:
                    np.save(handle, matrix)

            digest = write_atomically(vectors, write_vectors)
            rows = live.tolist()
            body = {
                "format": _FORMAT, "stamp": self.stamp.as_dict() if self.stamp else None,
                "dimension": self.dimension, "vectors": digest, "rows": len(rows),
                "columns": {name: [column[r] for r in rows] for name, column in self._columns.items()},
            }
            write_atomically(manifest, lambda p: p.write_text(json.dumps(body), encoding="utf-8"))
        except OSError as err:
            logger.warning("could not save the expansion cache in %s: %s", self.folder, err)

    def _load(self) -> None:
        """Take the saved copy when it is whole (its stamp is then compared as any other)."""
        manifest, vectors = self._paths()
        try:
            body = json.loads(manifest.read_text(encoding="utf-8"))
            if body.get("format") != _FORMAT or body.get("dimension") != self.dimension:
                return
            if not verify(vectors, body["vectors"]):
                return
            matrix = np.load(vectors)
            columns = {name: list(body["columns"][name]) for name in _COLUMNS}
        except (OSError, ValueError, KeyError, TypeError):
            return
        if matrix.shape != (body["rows"], self.dimension) or any(len(c) != body["rows"] for c in columns.values()):
            return
        self._extend(columns, matrix)
        self._settle()
        self.stamp = Stamp.from_dict(body.get("stamp"))

    # ---- filling ------------------------------------------------------------------------
    def _append(self, docs: Iterable[dict[str, Any]], resort: bool = False) -> None:
        docs = [d for d in dict((d["id"], d) for d in docs).values() if d["id"] not in self._row]
        if docs:
            columns = {name: [d.get(name, 0) for d in docs] for name in _COLUMNS}
            self._extend(columns, np.asarray([d[VECTOR_FIELD] for d in docs], dtype=np.float32), resort)

    def _extend(self, columns: dict[str, list[Any]], vectors: np.ndarray, resort: bool = False) -> None:
        """Add rows (none of them kept yet) with their vectors."""
        start = len(self._columns["id"])
        need = start + len(columns["id"])
        self._put_vectors(start, vectors)
        for name, values in columns.items():  # lists while filling, tuples after (_settle)
            column = self._columns[name]
            if isinstance(column, tuple):
                column = self._columns[name] = list(column)
            column.extend(values)
        self._row.update(zip(columns["id"], range(start, need), strict=True))
        by_entity: dict[str, list[int]] = {}
        by_passage: dict[str, list[int]] = {}
        for row, head, tail, pid in zip(range(start, need), columns["head"], columns["tail"],
                                        columns["passage_id"], strict=True):
            by_entity.setdefault(head, []).append(row)
            if tail != head:
                by_entity.setdefault(tail, []).append(row)
            by_passage.setdefault(pid, []).append(row)
        for target, fresh in ((self._by_entity, by_entity), (self._by_passage, by_passage)):
            for key, rows in fresh.items():
                kept = target.get(key)
                target[key] = np.asarray(rows, np.int64) if kept is None else np.concatenate([kept, rows])
        if resort:  # triples added later by another process may sort before kept ones
            c = self._columns
            for pid in by_passage:
                rows = self._by_passage[pid].tolist()
                rows.sort(key=lambda r: (c["added_ns"][r], c["position"][r], c["id"][r]))
                self._by_passage[pid] = np.asarray(rows, np.int64)

    # ---- reads --------------------------------------------------------------------------
    def _ids(self) -> Sequence[str]:
        return self._columns["id"]

    def has(self, triple_id: str) -> bool:
        return triple_id in self._row

    def triples_of_passages(self, passage_ids: Sequence[str]) -> list[list[str]]:
        """Each passage's triple ids in extraction order (``[]`` for an unknown passage)."""
        with self.lock:
            ids = self._columns["id"]
            return [[ids[r] for r in self._by_passage.get(pid, _NO_ROWS).tolist()] for pid in passage_ids]

    def get_triples(self, ids: Sequence[str]) -> list[Triple]:
        """The triples of ``ids`` in the order asked, unknown ids left out."""
        with self.lock:
            c = self._columns
            rows = [r for r in (self._row.get(i) for i in ids) if r is not None]
            return [Triple(c["id"][r], c["subject"][r], c["predicate"][r], c["object"][r], c["passage_id"][r])
                    for r in rows]

    def triple_vectors(self, ids: Sequence[str]) -> np.ndarray:
        """One row per id.

        Raises:
            KeyError: some ids are not stored triples.
        """
        with self.lock:
            missing = [i for i in ids if i not in self._row]
            if missing:
                raise KeyError(f"not stored triples: {', '.join(missing[:5])}")
            return self._vectors[[self._row[i] for i in ids]] if ids else np.zeros((0, self.dimension), np.float32)

    def neighbours(self, triple_id: str, query_vector: np.ndarray | None, limit: int) -> list[str]:
        """The triples sharing ``triple_id``'s head or tail, itself excluded: the ``limit`` most
        cosine-similar to ``query_vector`` (ties by insertion order), or the first ``limit``
        by id without one. An unknown triple has none."""
        with self.lock:
            return self._neighbours(triple_id, query_vector, limit)

    def _neighbours(self, triple_id: str, query_vector: np.ndarray | None, limit: int) -> list[str]:
        row = self._row.get(triple_id)
        if row is None or limit <= 0:
            return []
        head, tail = self._columns["head"][row], self._columns["tail"][row]
        rows = self._by_entity.get(head, _NO_ROWS)
        if tail != head:
            rows = np.union1d(rows, self._by_entity.get(tail, _NO_ROWS))
        rows = rows[self._alive[rows] & (rows != row)]
        ids = self._columns["id"]
        if query_vector is None:
            return sorted(ids[r] for r in rows.tolist())[:limit]
        if len(rows):
            chosen, _ = top_k(matvec(self._vectors[rows], query_vector), limit)
            rows = rows[chosen]
        return [ids[r] for r in rows.tolist()]
