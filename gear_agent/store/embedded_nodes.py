"""SiReRAG nodes in the embedded store: two SQLite tables and ``node.vec``.

``nodes`` holds each node's record (kind, tree, level, entity, text, children, CRC-32);
``node_passages`` its provenance as (node row, position, passage row), so deleting a
passage drops it from every node's provenance by the join; ``node.vec`` the vectors, the
same append-only float32 file as passages and triples (:mod:`gear_agent.store.vectors`),
written before the transaction that counts them commits. Node search is exact (a
matrix-vector product over the live rows): the pool is a fraction of the passages'
size. The tables are created by the first write, so indexes without nodes are unchanged.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from gear_agent.store.base import StoreError
from gear_agent.store.bm25 import top_k
from gear_agent.store.embedded_db import IndexCorruptError, get_meta, set_meta
from gear_agent.store.nodes import NodeStore
from gear_agent.store.threads import matvec
from gear_agent.store.vectors import VectorFile
from gear_agent.types import AddResult, Hit, Node

if TYPE_CHECKING:
    from gear_agent.store.embedded import EmbeddedStore

NODE_SCHEMA = """
CREATE TABLE IF NOT EXISTS nodes(
  row INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, kind TEXT NOT NULL, tree TEXT NOT NULL,
  level INTEGER NOT NULL, entity TEXT NOT NULL, text TEXT NOT NULL, children TEXT NOT NULL,
  crc INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS node_passages(node_row INTEGER NOT NULL, position INTEGER NOT NULL,
  passage_row INTEGER NOT NULL, PRIMARY KEY(node_row, position)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS node_passages_passage ON node_passages(passage_row);
"""
_SEP = "\x1f"
_COLUMNS = "row, id, kind, tree, level, entity, text, children, crc"
_CHUNK = 900


def _crc(node: Node, children_json: str) -> int:
    parts = (node.id, node.kind, node.tree, str(node.level), node.entity, node.text, children_json)
    return zlib.crc32(_SEP.join(parts).encode("utf-8"))


class EmbeddedNodeStore(NodeStore):
    """The node collection of one :class:`~gear_agent.store.embedded.EmbeddedStore`.

    Example:
        >>> nodes = store.node_store()  # doctest: +SKIP
        >>> nodes.passages_of([nodes.search(vector, 1)[0].id])  # doctest: +SKIP
    """

    def __init__(self, store: EmbeddedStore) -> None:
        self.store = store
        self._vectors = VectorFile(store.root / "node.vec", store.dimension)
        self._live: tuple[Any, np.ndarray, list[str]] | None = None
        self._writes = 0

    # ---- helpers --------------------------------------------------------------
    @property
    def _db(self) -> Any:
        return self.store._db

    def _has_tables(self) -> bool:
        return self._db.execute("SELECT 1 FROM sqlite_master WHERE name='nodes'").fetchone() is not None

    def _rows(self) -> int:
        return int(get_meta(self._db, "rows:node", 0))

    def _live_rows(self) -> tuple[np.ndarray, list[str]]:
        """Rows and ids of the live nodes, cached until a commit changes them."""
        self.store._sync()
        key = (self.store._version, self._writes)
        if self._live is None or self._live[0] != key:
            pairs = self._db.execute("SELECT row, id FROM nodes ORDER BY row").fetchall() if self._has_tables() else []
            rows = np.fromiter((r for r, _ in pairs), dtype=np.int64, count=len(pairs))
            self._live = (key, rows, [i for _, i in pairs])
        return self._live[1], self._live[2]

    def _from_row(self, row: tuple[Any, ...], passages: list[str]) -> Node:
        _, nid, kind, tree, level, entity, text, children_json, crc = row
        node = Node(nid, kind, tree, int(level), text, tuple(passages), tuple(json.loads(children_json)), entity)
        if _crc(node, children_json) != crc:
            raise IndexCorruptError(f"node {nid} in {self.store.root} fails its checksum; rebuild the SiReRAG nodes")
        return node

    def _provenance(self, node_rows: Sequence[int]) -> dict[int, list[str]]:
        found: dict[int, list[str]] = {int(r): [] for r in node_rows}
        for start in range(0, len(node_rows), _CHUNK):
            chunk = [int(r) for r in node_rows[start : start + _CHUNK]]
            marks = ",".join("?" * len(chunk))
            for node_row, pid in self._db.execute(
                f"SELECT np.node_row, p.id FROM node_passages np JOIN passages p ON p.row = np.passage_row "
                f"WHERE np.node_row IN ({marks}) ORDER BY np.node_row, np.position", chunk,
            ):
                found[node_row].append(pid)
        return found

    # ---- writes ---------------------------------------------------------------
    def add_nodes(self, nodes: Sequence[Node]) -> AddResult:
        store = self.store
        with store.transaction():
            if not self._has_tables():
                for statement in NODE_SCHEMA.split(";"):  # executescript would commit first
                    if statement.strip():
                        self._db.execute(statement)
            wanted = list(dict.fromkeys(n.id for n in nodes))
            stored: set[str] = set()
            for start in range(0, len(wanted), _CHUNK):
                chunk = wanted[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                stored.update(i for (i,) in self._db.execute(f"SELECT id FROM nodes WHERE id IN ({marks})", chunk))
            new, existing, seen = [], [], set()
            for node in nodes:
                if node.id in stored or node.id in seen:
                    existing.append(node.id)
                else:
                    seen.add(node.id)
                    new.append(node)
            if not new:
                return AddResult(existing=existing)
            passage_rows = store._existing("passages", [p for n in new for p in n.passage_ids])
            for node in new:
                missing = [p for p in node.passage_ids if p not in passage_rows]
                if missing or not node.passage_ids:
                    raise StoreError(f"node {node.id} names passage {missing[0] if missing else '(none)'}, "
                                     "which is not stored; every node needs stored passages")
            vectors = store._embed([n.text for n in new], [f"node {n.id}" for n in new])
            start_row = self._rows()
            checksum = self._vectors.append(start_row, vectors)
            stop = start_row + len(new)
            self._db.execute("INSERT INTO chunks(collection, start, stop, checksum) VALUES ('node', ?, ?, ?)",
                             (start_row, stop, checksum))
            set_meta(self._db, "rows:node", stop)
            records, links = [], []
            for row, node in zip(range(start_row, stop), new):
                children_json = json.dumps(list(node.children), ensure_ascii=False)
                records.append((row, node.id, node.kind, node.tree, node.level, node.entity, node.text,
                                children_json, _crc(node, children_json)))
                links.extend((row, position, passage_rows[pid]) for position, pid in enumerate(node.passage_ids))
            self._db.executemany(f"INSERT INTO nodes({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", records)
            self._db.executemany("INSERT INTO node_passages(node_row, position, passage_row) VALUES (?, ?, ?)", links)
            self._writes += 1
            return AddResult(added=[n.id for n in new], existing=existing)

    def delete_nodes(self, ids: Sequence[str]) -> list[str]:
        with self.store.transaction():
            if not self._has_tables():
                return []
            deleted: list[str] = []
            unique = list(dict.fromkeys(ids))
            for start in range(0, len(unique), _CHUNK):
                chunk = unique[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                pairs = self._db.execute(f"SELECT row, id FROM nodes WHERE id IN ({marks})", chunk).fetchall()
                rows = [r for r, _ in pairs]
                if rows:
                    row_marks = ",".join("?" * len(rows))
                    self._db.execute(f"DELETE FROM node_passages WHERE node_row IN ({row_marks})", rows)
                    self._db.execute(f"DELETE FROM nodes WHERE row IN ({row_marks})", rows)
                deleted.extend(i for _, i in pairs)
            self._writes += 1
            return [i for i in unique if i in set(deleted)]

    def forget_passages(self, passage_rows: Sequence[int]) -> int:
        """(In the store's transaction deleting them.) Drop deleted passages from every
        provenance, and the nodes left with none; returns how many nodes went. A summary
        keeps its text until the next ``gear sirerag build`` rebuilds it."""
        if not self._has_tables() or not passage_rows:
            return 0
        for start in range(0, len(passage_rows), _CHUNK):
            chunk = [int(r) for r in passage_rows[start : start + _CHUNK]]
            marks = ",".join("?" * len(chunk))
            self._db.execute(f"DELETE FROM node_passages WHERE passage_row IN ({marks})", chunk)
        gone = self._db.execute(
            "DELETE FROM nodes WHERE row NOT IN (SELECT DISTINCT node_row FROM node_passages)").rowcount
        self._writes += 1
        return int(gone)

    def clear(self) -> int:
        with self.store.transaction():
            if not self._has_tables():
                return 0
            count = int(self._db.execute("SELECT COUNT(*) FROM nodes").fetchone()[0])
            self._db.execute("DELETE FROM node_passages")
            self._db.execute("DELETE FROM nodes")
            self._writes += 1
            return count

    def set_meta(self, values: Mapping[str, str]) -> None:
        with self.store.transaction():
            for key, value in values.items():
                set_meta(self._db, f"sirerag:{key}", value)

    def meta_items(self, prefix: str) -> dict[str, str]:
        with self.store._mutex:
            pattern = "sirerag:" + prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            return {key[len("sirerag:"):]: str(value) for key, value in self._db.execute(
                "SELECT key, value FROM meta WHERE key LIKE ? ESCAPE '\\'", (pattern,))}

    # ---- reads ----------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        with self.store._mutex:
            value = get_meta(self._db, f"sirerag:{key}")
            return None if value is None else str(value)

    def count(self) -> int:
        with self.store._mutex:
            return len(self._live_rows()[1])

    def levels(self) -> dict[tuple[str, str, int], int]:
        with self.store._mutex:
            if not self._has_tables():
                return {}
            return {(tree, kind, int(level)): int(n) for tree, kind, level, n in self._db.execute(
                "SELECT tree, kind, level, COUNT(*) FROM nodes GROUP BY tree, kind, level ORDER BY tree, level, kind")}

    def search(self, vector: np.ndarray, k: int) -> list[Hit]:
        q = self.store._query(vector)
        with self.store._mutex:
            rows, ids = self._live_rows()
            if len(rows) == 0 or k <= 0:
                return []
            matrix = self._vectors.view(self._rows())
            chosen, values = top_k(matvec(matrix[rows], q), k)
            return [Hit(ids[int(i)], float(v)) for i, v in zip(chosen, values)]

    def get_nodes(self, ids: Sequence[str]) -> list[Node]:
        with self.store._mutex:
            if not self._has_tables():
                return []
            rows: dict[str, tuple[Any, ...]] = {}
            unique = list(dict.fromkeys(ids))
            for start in range(0, len(unique), _CHUNK):
                chunk = unique[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                for row in self._db.execute(f"SELECT {_COLUMNS} FROM nodes WHERE id IN ({marks})", chunk):
                    rows[row[1]] = row
            provenance = self._provenance([r[0] for r in rows.values()])
            return [self._from_row(rows[i], provenance[rows[i][0]]) for i in ids if i in rows]

    def passages_of(self, ids: Sequence[str]) -> dict[str, list[str]]:
        with self.store._mutex:
            if not self._has_tables():
                return {}
            row_of: dict[str, int] = {}
            unique = list(dict.fromkeys(ids))
            for start in range(0, len(unique), _CHUNK):
                chunk = unique[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                row_of.update(self._db.execute(f"SELECT id, row FROM nodes WHERE id IN ({marks})", chunk).fetchall())
            provenance = self._provenance(list(row_of.values()))
            return {i: provenance[row_of[i]] for i in unique if i in row_of}

    def vectors(self, ids: Sequence[str]) -> np.ndarray:
        with self.store._mutex:
            rows, live_ids = self._live_rows()
            position = {nid: int(r) for r, nid in zip(rows, live_ids)}
            wanted = [position[i] for i in ids]  # KeyError for an unknown id, as triple_vectors
            return np.asarray(self._vectors.view(self._rows())[wanted], dtype=np.float32)

    def passage_vectors(self, ids: Sequence[str]) -> np.ndarray:
        store = self.store
        with store._mutex:
            store._sync()
            rows = store._existing("passages", ids)
            wanted = [rows[i] for i in ids]  # KeyError for an unknown id
            return np.asarray(store._vectors["passage"].view(store._rows["passage"])[wanted], dtype=np.float32)

    def iter_nodes(self) -> Iterator[Node]:
        with self.store._mutex:
            if not self._has_tables():
                return iter([])
            records = self._db.execute(f"SELECT {_COLUMNS} FROM nodes ORDER BY row").fetchall()
            provenance = self._provenance([r[0] for r in records])
            return iter([self._from_row(r, provenance[r[0]]) for r in records])
