"""SiReRAG nodes in the embedded store: two SQLite tables and ``node.vec``.

``nodes`` holds each node's record (kind, tree, level, entity, text, children, CRC-32);
``node_passages`` its provenance as (node row, position, passage row), so deleting a
passage drops it from every node's provenance by the join; ``node.vec`` the vectors, the
same append-only float32 file as passages and triples (:mod:`gear_agent.store.embedded.vectors`),
written before the transaction that counts them commits, its chunks verified before
they are used. Node search is exact (a matrix-vector product over the live rows): the pool
is a fraction of the passages' size. The tables are created by the first write, so
indexes without nodes are unchanged. The node collection works through the store's public
methods (its database, transactions, checked embeddings, passage rows and vectors).
"""

from __future__ import annotations

import json
import threading
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from gear_agent.store.base import IndexCorruptError, StoreError, split_new
from gear_agent.store.bm25 import top_k
from gear_agent.store.changes import Changes, Stamp, bring_up_to_date
from gear_agent.store.collections import Passages
from gear_agent.store.embedded.db import Database, chunked, marks
from gear_agent.store.embedded.vectors import REBUILD_ROWS, CheckedVectors, Progress
from gear_agent.store.nodes import NodeStore
from gear_agent.store.threads import matvec
from gear_agent.types import AddResult, Hit, Node


class NodeHost(Protocol):
    """What the node collection uses of its store
    (:class:`~gear_agent.store.embedded.store.EmbeddedStore`): its database and folder, its
    transactions and snapshots, its checked embeddings and the passages' rows and vectors."""

    db: Database
    root: Path
    dimension: int
    passages: Passages

    def stamp(self) -> Stamp: ...

    def knows(self, stamp: Stamp) -> bool: ...

    def changes_since(self, generation: int) -> Changes: ...

    def transaction(self) -> AbstractContextManager[None]: ...

    def snapshot(self) -> AbstractContextManager[None]: ...

    def passage_rows(self, ids: Sequence[str]) -> dict[str, int]: ...

    def embed_checked(self, texts: list[str], what: list[str]) -> np.ndarray: ...

    def query_vector(self, vector: np.ndarray) -> np.ndarray: ...

NODE_SCHEMA = """
CREATE TABLE IF NOT EXISTS nodes(
  row INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, kind TEXT NOT NULL, tree TEXT NOT NULL,
  level INTEGER NOT NULL, entity TEXT NOT NULL, text TEXT NOT NULL, children TEXT NOT NULL,
  crc INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS node_passages(node_row INTEGER NOT NULL, position INTEGER NOT NULL,
  passage_row INTEGER NOT NULL, PRIMARY KEY(node_row, position)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS node_passages_passage ON node_passages(passage_row);
"""
META_PREFIX = "sirerag:"
"""Node meta (what the SiReRAG builder records beside its nodes) lives in the meta table under this prefix."""
_SEP = "\x1f"
_COLUMNS = "row, id, kind, tree, level, entity, text, children, crc"


def _crc(node: Node, children_json: str) -> int:
    parts = (node.id, node.kind, node.tree, str(node.level), node.entity, node.text, children_json)
    return zlib.crc32(_SEP.join(parts).encode("utf-8"))


class LiveNodes:
    """The rows and ids of the live nodes at one commit: a node search's cache, kept as derived
    state (:class:`~gear_agent.store.changes.Derived`) under the one freshness rule.

    Its stamp is the commit it was read at; :func:`~gear_agent.store.changes.bring_up_to_date`
    reads them again when the store's stamp moved (a node write of this process or another
    is a commit, a rollback another stamp). The change feed lists passages and triples, not
    nodes (a node write, a ``clear``, a passage deletion's pruning), so every change is a
    rebuild: one ``SELECT row, id`` over the node table.

    Example:
        >>> live = LiveNodes(lambda: [(0, "n-1"), (2, "n-2")])
        >>> live.rebuild(None, 1); live.rows.tolist(), live.ids
        ([0, 2], ['n-1', 'n-2'])
    """

    reads_feed = False
    """The feed lists passages and triples, not nodes: any new stamp is a rebuild."""

    def __init__(self, read: Callable[[], list[tuple[int, str]]]) -> None:
        self._read = read
        self.stamp: Stamp | None = None
        self.rows = np.zeros(0, dtype=np.int64)
        self.ids: list[str] = []

    def can_apply(self, changes: Changes) -> bool:
        return False

    def apply(self, store: object, changes: Changes) -> None:  # pragma: no cover - reads_feed is False
        self.rebuild(store, changes.generation)

    def rebuild(self, store: object, generation: int) -> None:
        pairs = self._read()
        self.rows = np.fromiter((r for r, _ in pairs), dtype=np.int64, count=len(pairs))
        self.ids = [i for _, i in pairs]


class EmbeddedNodeStore(NodeStore):
    """The node collection of one :class:`~gear_agent.store.embedded.store.EmbeddedStore`.

    Example:
        >>> nodes = store.nodes  # doctest: +SKIP
        >>> nodes.passages_of([nodes.search(vector, 1)[0].id])  # doctest: +SKIP
    """

    def __init__(self, store: NodeHost) -> None:
        self.store = store
        self.db = store.db
        self.node_vectors = CheckedVectors(store.db, store.root, "node", store.dimension)
        self._live = LiveNodes(self._read_live)
        self._lock = threading.Lock()

    # ---- helpers --------------------------------------------------------------
    def _has_tables(self) -> bool:
        return self.db.has_table("nodes")

    def _rows(self) -> int:
        return self.node_vectors.committed_rows()

    def _read_live(self) -> list[tuple[int, str]]:
        return self.db.rows("SELECT row, id FROM nodes ORDER BY row") if self._has_tables() else []

    def _live_rows(self) -> tuple[np.ndarray, list[str]]:
        """(Inside a snapshot.) Rows and ids of the live nodes at the pinned commit: the
        :class:`LiveNodes` brought up to date by the one rule (a writer reads its own
        uncommitted rows instead)."""
        if self.db.writing_here():
            uncommitted = LiveNodes(self._read_live)
            uncommitted.rebuild(self.store, 0)
            return uncommitted.rows, uncommitted.ids
        with self._lock:
            bring_up_to_date(self._live, self.store)
            return self._live.rows, self._live.ids

    def _matrix(self, rows: np.ndarray) -> np.ndarray:
        """The node vectors, verified before they are used (as the store's own)."""
        committed = self._rows()
        self.node_vectors.ensure_verified(committed)
        return self.node_vectors.view(committed)

    def _from_row(self, row: tuple[Any, ...], passages: list[str]) -> Node:
        _, nid, kind, tree, level, entity, text, children_json, crc = row
        try:
            node = Node(nid, kind, tree, int(level), text, tuple(passages), tuple(json.loads(children_json)), entity)
            valid = _crc(node, children_json) == crc
        except (TypeError, ValueError) as exc:
            raise IndexCorruptError(f"node {nid!r} in {self.store.root} cannot be decoded ({exc}); "
                                    "rebuild the SiReRAG nodes") from exc
        if not valid:
            raise IndexCorruptError(f"node {nid} in {self.store.root} fails its checksum; rebuild the SiReRAG nodes")
        return node

    def _provenance(self, node_rows: Sequence[int]) -> dict[int, list[str]]:
        found: dict[int, list[str]] = {int(r): [] for r in node_rows}
        for chunk in chunked([int(r) for r in node_rows]):
            for node_row, pid in self.db.rows(
                f"SELECT np.node_row, p.id FROM node_passages np JOIN passages p ON p.row = np.passage_row "
                f"WHERE np.node_row IN ({marks(chunk)}) ORDER BY np.node_row, np.position", list(chunk),
            ):
                found[node_row].append(pid)
        return found

    def _stored_ids(self, ids: Sequence[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        for chunk in chunked(list(dict.fromkeys(ids))):
            found.update(self.db.rows(f"SELECT id, row FROM nodes WHERE id IN ({marks(chunk)})", list(chunk)))
        return found

    # ---- writes ---------------------------------------------------------------
    def add(self, nodes: Sequence[Node]) -> AddResult:
        with self.store.transaction():
            if not self._has_tables():
                for statement in NODE_SCHEMA.split(";"):  # executescript would commit first
                    if statement.strip():
                        self.db.run(statement)
            new, existing = split_new(nodes, self._stored_ids([n.id for n in nodes]))
            if not new:
                return AddResult(existing=existing)
            passage_rows = self.store.passage_rows([p for n in new for p in n.passage_ids])
            for node in new:
                missing = [p for p in node.passage_ids if p not in passage_rows]
                if missing or not node.passage_ids:
                    raise StoreError(f"node {node.id} names passage {missing[0] if missing else '(none)'}, "
                                     "which is not stored; every node needs stored passages")
            vectors = self.store.embed_checked([n.text for n in new], [f"node {n.id}" for n in new])
            rows = self.node_vectors.append(vectors)
            records, links = [], []
            for row, node in zip(rows, new):
                children_json = json.dumps(list(node.children), ensure_ascii=False)
                records.append((row, node.id, node.kind, node.tree, node.level, node.entity, node.text,
                                children_json, _crc(node, children_json)))
                links.extend((row, position, passage_rows[pid]) for position, pid in enumerate(node.passage_ids))
            self.db.run_many(f"INSERT INTO nodes({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", records)
            self.db.run_many("INSERT INTO node_passages(node_row, position, passage_row) VALUES (?, ?, ?)", links)
            return AddResult(added=[n.id for n in new], existing=existing)

    def remove(self, ids: Sequence[str]) -> list[str]:
        with self.store.transaction():
            if not self._has_tables():
                return []
            stored = self._stored_ids(ids)
            rows = list(stored.values())
            for chunk in chunked(rows):
                self.db.run(f"DELETE FROM node_passages WHERE node_row IN ({marks(chunk)})", list(chunk))
                self.db.run(f"DELETE FROM nodes WHERE row IN ({marks(chunk)})", list(chunk))
            return [i for i in dict.fromkeys(ids) if i in stored]

    def forget_passages(self, passage_rows: Sequence[int]) -> int:
        """(In the store's transaction deleting them.) Drop deleted passages from every
        provenance, and the nodes left with none; returns how many nodes went. A summary
        keeps its text until the next ``gear sirerag build`` rebuilds it."""
        if not self._has_tables() or not passage_rows:
            return 0
        for chunk in chunked([int(r) for r in passage_rows]):
            self.db.run(f"DELETE FROM node_passages WHERE passage_row IN ({marks(chunk)})", list(chunk))
        gone = self.db.run("DELETE FROM nodes WHERE row NOT IN (SELECT DISTINCT node_row FROM node_passages)")
        return int(gone)

    def clear(self) -> int:
        with self.store.transaction():
            if not self._has_tables():
                return 0
            count = int(self.db.one("SELECT COUNT(*) FROM nodes")[0])  # type: ignore[index]
            self.db.run("DELETE FROM node_passages")
            self.db.run("DELETE FROM nodes")
            return count

    def set_meta(self, values: Mapping[str, str]) -> None:
        with self.store.transaction():
            for key, value in values.items():
                self.db.set_meta(f"{META_PREFIX}{key}", value)

    def meta_items(self, prefix: str) -> dict[str, str]:
        pattern = META_PREFIX + prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        return {key[len(META_PREFIX):]: str(value) for key, value in self.db.rows(
            "SELECT key, value FROM meta WHERE key LIKE ? ESCAPE '\\'", (pattern,))}

    def repair_vectors(self, progress: Progress | None = None) -> list[str]:
        """Re-embed the node vectors that fail (all of them when ``node.vec`` is missing or
        truncated) from the node texts; in the store's transaction."""
        rows = self._rows()
        if rows == 0:
            return []
        whole = self.node_vectors.file.stored_rows() < rows
        ranges = [(0, rows)] if whole else self.node_vectors.bad_chunks(rows)
        if not ranges:
            return []
        if whole:
            self.node_vectors.rebuild_file(rows, (self._block(lo, min(rows, lo + REBUILD_ROWS))
                                             for lo in range(0, rows, REBUILD_ROWS)), progress)
            return [f"re-embedded all {rows:,} node vectors (node.vec was missing or truncated)"]
        for start, stop in ranges:
            self.node_vectors.rewrite_chunk(start, stop, self._block(start, stop))
        return [f"re-embedded node rows {a}..{b}" for a, b in ranges]

    def _block(self, start: int, stop: int) -> np.ndarray:
        texts = dict(self.db.rows("SELECT row, text FROM nodes WHERE row >= ? AND row < ? ORDER BY row",
                                  (start, stop))) if self._has_tables() else {}
        block = np.zeros((stop - start, self.store.dimension), dtype=np.float32)
        if texts:
            block[np.asarray(list(texts), dtype=np.int64) - start] = self.store.embed_checked(
                list(texts.values()), [f"node row {r}" for r in texts])
        return block

    # ---- reads ----------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        value = self.db.meta(f"{META_PREFIX}{key}")
        return None if value is None else str(value)

    def count(self) -> int:
        with self.store.snapshot():  # the live rows cached under the commit they were read at
            return len(self._live_rows()[1])

    def levels(self) -> dict[tuple[str, str, int], int]:
        if not self._has_tables():
            return {}
        return {(tree, kind, int(level)): int(n) for tree, kind, level, n in self.db.rows(
            "SELECT tree, kind, level, COUNT(*) FROM nodes GROUP BY tree, kind, level ORDER BY tree, level, kind")}

    def search(self, vector: np.ndarray, k: int) -> list[Hit]:
        q = self.store.query_vector(vector)
        with self.store.snapshot():  # the live rows and the vector rows of one commit
            rows, ids = self._live_rows()
            if len(rows) == 0 or k <= 0:
                return []
            matrix = self._matrix(rows)
        scores = matvec(matrix[rows], q)
        finite = np.isfinite(scores)
        chosen, values = top_k(np.where(finite, scores, -np.inf), k)
        return [Hit(ids[int(i)], float(v)) for i, v in zip(chosen, values) if np.isfinite(v)]

    def get(self, ids: Sequence[str]) -> list[Node]:
        if not self._has_tables():
            return []
        rows: dict[str, tuple[Any, ...]] = {}
        for chunk in chunked(list(dict.fromkeys(ids))):
            for row in self.db.rows(f"SELECT {_COLUMNS} FROM nodes WHERE id IN ({marks(chunk)})", list(chunk)):
                rows[row[1]] = row
        provenance = self._provenance([r[0] for r in rows.values()])
        return [self._from_row(rows[i], provenance[rows[i][0]]) for i in ids if i in rows]

    def passages_of(self, ids: Sequence[str]) -> dict[str, list[str]]:
        if not self._has_tables():
            return {}
        row_of = self._stored_ids(ids)
        provenance = self._provenance(list(row_of.values()))
        return {i: provenance[row_of[i]] for i in dict.fromkeys(ids) if i in row_of}

    def vectors(self, ids: Sequence[str]) -> np.ndarray:
        with self.store.snapshot():  # the live rows and the vector rows of one commit
            rows, live_ids = self._live_rows()
            matrix = self._matrix(rows)
        position = {nid: int(r) for r, nid in zip(rows, live_ids)}
        wanted = [position[i] for i in ids]  # KeyError for an unknown id, as triple_vectors
        return np.asarray(matrix[wanted], dtype=np.float32)

    def passage_vectors(self, ids: Sequence[str]) -> np.ndarray:
        return self.store.passages.vectors(ids)

    def iterate(self) -> Iterator[Node]:
        if not self._has_tables():
            return iter([])
        records = self.db.rows(f"SELECT {_COLUMNS} FROM nodes ORDER BY row")
        provenance = self._provenance([r[0] for r in records])
        return iter([self._from_row(r, provenance[r[0]]) for r in records])
