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
adjacent triples, ties by insertion order (the embedded store's ``top_k`` over its rows).

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
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from gear_agent.store.bm25 import top_k
from gear_agent.store.changes import Changes, Stamp, bring_up_to_date
from gear_agent.store.derived_files import verify, write_atomically
from gear_agent.store.es_mappings import VECTOR_FIELD, triple_from_source
from gear_agent.store.threads import matvec
from gear_agent.types import Triple

__all__ = ["CACHE_FILE", "DOCUMENT_FIELDS", "ExpansionCache", "RecordReader"]

logger = logging.getLogger(__name__)

CACHE_FILE = "expansion-triples.json"
"""The saved cache's manifest in the store's derived folder (its vectors: the same name, ``.npy``)."""
_FORMAT = 1

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


class ExpansionCache:
    """The triples of an index as graph expansion reads them, at one commit (see the module).

    ``stamp`` is the commit it reflects (:func:`bring_up_to_date` sets it); :meth:`current`
    brings it up to date first. Reads and updates hold :attr:`lock`.

    Args:
        dimension: The vectors' dimension.
        read: Where the triple documents come from (:data:`RecordReader`).
        folder: Where it is saved after a full read (:data:`CACHE_FILE`) and loaded from by the
            next process, which then takes in the changes since (None: kept in memory only).
    """

    def __init__(self, dimension: int, read: RecordReader, folder: Path | None = None) -> None:
        self.dimension, self._read = dimension, read
        self.folder = None if folder is None else Path(folder)
        self.stamp: Stamp | None = None
        self.lock = threading.RLock()
        self._clear()
        if self.folder is not None:
            self._load()

    def _clear(self) -> None:
        self._ids: list[str] = []
        self._row: dict[str, int] = {}
        self._triples: list[Triple | None] = []
        self._ends: list[tuple[str, str]] = []
        self._order: list[tuple[int, int, str]] = []
        self._passage_of_row: list[str] = []
        self._vectors = np.zeros((0, self.dimension), dtype=np.float32)
        self._n = 0
        self._alive = np.zeros(0, dtype=bool)
        self._by_entity: dict[str, list[int]] = {}
        self._by_passage: dict[str, list[int]] = {}
        self._entity_rows: dict[str, np.ndarray] = {}  # arrays of _by_entity, made on use

    def __len__(self) -> int:
        return len(self._row)

    # ---- Derived ------------------------------------------------------------------------
    def current(self, store: Any) -> ExpansionCache:
        """This cache at ``store``'s commit (:func:`bring_up_to_date`); a cache already at a
        later commit of the same index is used as it is (Elasticsearch reads by id see the
        latest documents anyway, and another thread's question may have moved it on)."""
        now = store.stamp()
        held = self.stamp
        if held is not None and held.index_id == now.index_id and held.generation >= now.generation:
            return self
        bring_up_to_date(self, store)
        if self.__dict__.pop("_rebuilt", False) and self.folder is not None:
            self._save()  # the next process loads it and takes in the changes since
        return self

    def can_apply(self, changes: Changes) -> bool:
        return changes.complete

    def rebuild(self, store: Any, generation: int) -> None:
        """Read every triple again (one walk over the index, in extraction order)."""
        self._clear()
        for batch in self._read(None):
            self._append(batch)
        self._rebuilt = True

    # ---- the saved copy -----------------------------------------------------------------
    def _paths(self) -> tuple[Path, Path]:
        assert self.folder is not None
        manifest = self.folder / CACHE_FILE
        return manifest, manifest.with_suffix(".npy")

    def _save(self) -> None:
        """Write the vectors, then the manifest naming their checksum (a reader trusts the
        pair only when they agree); a failure is logged, the cache stays in memory."""
        manifest, vectors = self._paths()
        live = [r for r in range(self._n) if self._alive[r]]
        try:
            self.folder.mkdir(parents=True, exist_ok=True)  # type: ignore[union-attr]
            matrix = self._vectors[live]

            def write_vectors(path: Path) -> None:
                with path.open("wb") as handle:
                    np.save(handle, matrix)

            digest = write_atomically(vectors, write_vectors)
            triples = [self._triples[r] for r in live]
            body = {
                "format": _FORMAT, "stamp": self.stamp.as_dict() if self.stamp else None,
                "dimension": self.dimension, "vectors": digest, "rows": len(live),
                "triples": [[t.id, t.subject, t.predicate, t.object, t.passage_id] for t in triples if t],
                "ends": [self._ends[r] for r in live], "order": [self._order[r][:2] for r in live],
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
        except (OSError, ValueError, KeyError):
            return
        if matrix.shape != (body["rows"], self.dimension) or len(body["triples"]) != body["rows"]:
            return
        docs = ({"id": t[0], "subject": t[1], "predicate": t[2], "object": t[3], "passage_id": t[4],
                 "head": e[0], "tail": e[1], "added_ns": o[0], "position": o[1], VECTOR_FIELD: None}
                for t, e, o in zip(body["triples"], body["ends"], body["order"], strict=True))
        self._append(list(docs), vectors=matrix)
        self.stamp = Stamp.from_dict(body.get("stamp"))

    def apply(self, store: Any, changes: Changes) -> None:
        """Removals first (an id deleted and added again is in both lists), then the added
        triples read by id, in the feed's order (extraction order)."""
        gone = [self._row.pop(tid) for tid in changes.triples_removed if tid in self._row]
        removed_passages = set(changes.passages_removed)
        for pid in removed_passages:  # a passage's triples go with it, listed or not
            for row in self._by_passage.pop(pid, []):
                if self._alive[row]:
                    self._row.pop(self._ids[row], None)
                    gone.append(row)
        if gone:
            self._alive[gone] = False
            for row in gone:
                self._triples[row] = None
            touched = {self._passage_of_row[row] for row in gone} - removed_passages
            for pid in touched:
                self._by_passage[pid] = [r for r in self._by_passage.get(pid, []) if self._alive[r]]
            self._entity_rows.clear()
        added = [tid for tid in dict.fromkeys(changes.triples_added) if tid not in self._row]
        if added:
            for batch in self._read(added):
                self._append(batch, resort=True)

    # ---- filling ------------------------------------------------------------------------
    def _append(self, docs: Iterable[dict[str, Any]], resort: bool = False, vectors: np.ndarray | None = None) -> None:
        docs = list(docs)
        keep = [n for n, d in enumerate(docs) if d["id"] not in self._row]
        if len(keep) < len(docs):
            docs = [docs[n] for n in keep]
            vectors = None if vectors is None else vectors[keep]
        if not docs:
            return
        start = self._n
        need = start + len(docs)
        if need > len(self._vectors):
            grown = np.zeros((max(need, int(len(self._vectors) * 1.5) + 1024), self.dimension), dtype=np.float32)
            grown[:start] = self._vectors[:start]
            self._vectors = grown
            alive = np.zeros(len(grown), dtype=bool)
            alive[:start] = self._alive[:start]
            self._alive = alive
        self._vectors[start:need] = vectors if vectors is not None else np.asarray(
            [d[VECTOR_FIELD] for d in docs], dtype=np.float32)
        self._alive[start:need] = True
        touched: set[str] = set()
        for row, doc in enumerate(docs, start):
            triple = triple_from_source(doc)
            self._ids.append(triple.id)
            self._row[triple.id] = row
            self._triples.append(triple)
            head, tail = doc["head"], doc["tail"]
            self._ends.append((head, tail))
            self._order.append((int(doc.get("added_ns", 0)), int(doc.get("position", 0)), triple.id))
            self._passage_of_row.append(triple.passage_id)
            self._by_entity.setdefault(head, []).append(row)
            if tail != head:
                self._by_entity.setdefault(tail, []).append(row)
            self._by_passage.setdefault(triple.passage_id, []).append(row)
            touched.add(triple.passage_id)
        self._n = need
        self._entity_rows.clear()
        if resort:  # triples added later by another process may sort before kept ones
            for pid in touched:
                self._by_passage[pid].sort(key=self._order.__getitem__)

    # ---- reads --------------------------------------------------------------------------
    def has(self, triple_id: str) -> bool:
        return triple_id in self._row

    def triples_of_passages(self, passage_ids: Sequence[str]) -> list[list[str]]:
        """Each passage's triple ids in extraction order (``[]`` for an unknown passage)."""
        with self.lock:
            ids = self._ids
            return [[ids[r] for r in self._by_passage.get(pid, ())] for pid in passage_ids]

    def get_triples(self, ids: Sequence[str]) -> list[Triple]:
        """The triples of ``ids`` in the order asked, unknown ids left out."""
        with self.lock:
            found = [self._row.get(i) for i in ids]
            return [t for t in (self._triples[r] for r in found if r is not None) if t is not None]

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

    def _rows_of(self, entity: str) -> np.ndarray:
        rows = self._entity_rows.get(entity)
        if rows is None:
            rows = self._entity_rows[entity] = np.asarray(self._by_entity.get(entity, ()), dtype=np.int64)
        return rows

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
        head, tail = self._ends[row]
        rows = self._rows_of(head) if head == tail else np.union1d(self._rows_of(head), self._rows_of(tail))
        rows = rows[self._alive[rows] & (rows != row)]
        if query_vector is None:
            return sorted(self._ids[r] for r in rows)[:limit]
        if len(rows):
            chosen, _ = top_k(matvec(self._vectors[rows], query_vector), limit)
            rows = rows[chosen]
        return [self._ids[r] for r in rows]
