"""The embedded store, gear-agent's default backend: one directory, no server.

Layout (docs/storage.md has the design and the measurements behind it):

* ``index.sqlite`` (:mod:`gear_agent.store.embedded_db`): records, metadata, entity ids,
  BM25 vocabulary and segments (:mod:`gear_agent.store.postings`), vector checksums and
  the manifest, in SQLite's WAL mode: a write is one SQLite transaction, readers are never
  blocked, and a crash leaves the last commit;
* ``passage.vec`` / ``triple.vec`` (:mod:`gear_agent.store.vectors`): append-only float32
  rows, memory-mapped, written and flushed before the transaction that counts them commits;
* ``{collection}-{start}-{stop}.usearch`` (:mod:`gear_agent.store.ann`): the approximate
  nearest-neighbour parts, a derived cache checksummed and rebuilt when bad.

Nothing is rebuilt at open: BM25 postings, entity lookups and vectors are read where they
lie. Writers take SQLite's write lock (``BEGIN IMMEDIATE``), so two writers never interleave.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from gear_agent.embedding.base import Embedder
from gear_agent.filters import Where, parse_where
from gear_agent.store import ann as ann_mod
from gear_agent.store import embedded_db as edb
from gear_agent.store.base import ModelMismatchError, Store, StoreError
from gear_agent.store.bm25 import top_k
from gear_agent.store.embedded_db import IndexCorruptError, get_meta, set_meta
from gear_agent.store.embedded_nodes import EmbeddedNodeStore
from gear_agent.store.manifest import read_manifest
from gear_agent.store.postings import Postings, SegmentCorruptError
from gear_agent.store.threads import matvec
from gear_agent.store.vectors import VectorFile
from gear_agent.store.where_sql import where_sql
from gear_agent.text.tokenizer import get_tokenizer, normalise_entity
from gear_agent.types import AddResult, Collection, Hit, Passage, Triple

logger = logging.getLogger(__name__)

FORMAT_VERSION = edb.FORMAT_VERSION
COLLECTIONS: tuple[Collection, ...] = ("passage", "triple")
SYNC_INTERVAL_S = 0.005
"""How stale a reader may be: it looks for other processes' commits at most this often."""
EXACT_SUBSET_MAX = 50_000
"""A filter matching at most this many rows is searched exactly over just those rows."""
_CHUNK = 900
_TABLE = {"passage": "passages", "triple": "triples"}


def _chunks(items: Sequence[Any], size: int = _CHUNK) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class EmbeddedStore(Store):
    """A :class:`Store` in one local directory.

    Example:
        >>> from gear_agent.embedding.hashing import HashingEmbedder
        >>> import tempfile
        >>> store = EmbeddedStore.open(Path(tempfile.mkdtemp()) / "ix", HashingEmbedder(64))
        >>> store.add_passages([Passage("p-1", "Paris", "Paris is in France.", "a.txt", {"year": 2020})]).added
        ['p-1']
        >>> [h.id for h in store.bm25_search("passage", "France", k=5, where={"year": {"$gte": 2020}})]
        ['p-1']
    """

    def __init__(
        self, root: Path, embedder: Embedder, lock_timeout_s: float = 600.0,
        tokenizer: str = "standard",
    ) -> None:
        self.root = Path(root)
        self.tokenizer = tokenizer
        self.tokenize = get_tokenizer(tokenizer)
        self.embedder = embedder
        self.embedding_model = embedder.name
        self.dimension = int(embedder.dimension)
        self._db = edb.connect(self.root / edb.DB_FILE, timeout_s=lock_timeout_s)
        self._lock_timeout_s = lock_timeout_s
        self._mutex = threading.RLock()
        self._tx_depth = 0
        self._version: int | None = None
        self._rows = {c: 0 for c in COLLECTIONS}
        self._counts = {c: 0 for c in COLLECTIONS}
        self._dead = {c: np.zeros(0, dtype=bool) for c in COLLECTIONS}
        self._dead_rows = {c: np.empty(0, dtype=np.int64) for c in COLLECTIONS}
        self._ann_text: dict[str, str | None] = {c: "" for c in COLLECTIONS}
        self._vectors = {c: VectorFile(self.root / f"{c}.vec", self.dimension) for c in COLLECTIONS}
        self._ann = {c: ann_mod.AnnIndex(self.root, c) for c in COLLECTIONS}
        self._postings: dict[tuple[str, str], Postings] = {}
        self._where_cache: dict[tuple[str, str], np.ndarray] = {}
        # id <-> row of live records; rows are never reused, so entries stay true until the
        # record is deleted (the caches are dropped whenever the dead rows change)
        self._id_of: dict[str, dict[int, str]] = {c: {} for c in COLLECTIONS}
        self._row_of: dict[str, dict[str, int]] = {c: {} for c in COLLECTIONS}
        self._ends: dict[int, tuple[int, int]] = {}
        self._entity_rows: dict[int, np.ndarray] = {}
        self._passage_triples: dict[str, list[str]] = {}
        self._checked_at = 0.0
        self._nodes: EmbeddedNodeStore | None = None
        if not self._has_schema():
            self._db.executescript(f"BEGIN IMMEDIATE;{edb.SCHEMA}COMMIT;")

    @classmethod
    def open(
        cls, path: Path, embedder: Embedder, *, create: bool = True, lock_timeout_s: float = 600.0,
        tokenizer: str = "standard", verify: bool = True,
    ) -> EmbeddedStore:
        """Open the index at ``path`` (created empty when missing and ``create`` is true).

        ``verify`` checks the newest vector chunk of each collection (``gear check`` checks
        them all); only repairs open without it.

        An index in the previous format (``CURRENT`` + ``gen-*`` folders) is migrated into
        this one on first open; its folders are left in place. ``tokenizer`` names the
        BM25 tokenizer; postings are kept per tokenizer, built once when first asked for.

        Raises:
            ModelMismatchError: the index was built with another embedding model.
            StoreError: no index at ``path`` and ``create`` is false.
            IndexCorruptError: the index is damaged (the message says what; see ``gear check``).
        """
        from gear_agent.store import legacy

        path = Path(path)
        if path.exists() and not path.is_dir():
            raise StoreError(f"{path} is a file, not an index directory")
        has_legacy = legacy.has_legacy_index(path)
        if not create and not has_legacy and read_manifest(path) is None:
            raise StoreError(f"no index at {path}: build one first with `gear index`")
        path.mkdir(parents=True, exist_ok=True)
        store = cls(path, embedder, lock_timeout_s=lock_timeout_s, tokenizer=tokenizer)
        try:
            store._check_model()
            if has_legacy and store._meta("migrated_from") is None:
                legacy.migrate(store)
            store._sync(force=True)
            if verify:
                store._verify_newest_chunks()
            store._ensure_tokenizer()
        except BaseException:
            store.close()
            raise
        return store

    # ---- state --------------------------------------------------------------------
    def _has_schema(self) -> bool:
        try:
            return self._db.execute("SELECT 1 FROM sqlite_master WHERE name='segments'").fetchone() is not None
        except sqlite3.DatabaseError as exc:
            raise IndexCorruptError(f"{self.root / edb.DB_FILE} is not a readable index ({exc}); run `gear check`") from exc

    def _meta(self, key: str, default: Any = None) -> Any:
        return get_meta(self._db, key, default)

    def _check_model(self) -> None:
        model, dimension = self._meta("embedding_model"), self._meta("dimension")
        if model is None:
            return
        if model != self.embedding_model or int(dimension) != self.dimension:
            raise ModelMismatchError(
                f"index at {self.root} was built with embedding model {model!r} "
                f"(dimension {dimension}); the configured model is {self.embedding_model!r} "
                f"(dimension {self.dimension}). Set GEAR_EMBEDDING_MODEL={model} to use this "
                "index, or build a new index in another directory."
            )

    def _postings_of(self, collection: str, tokenizer: str | None = None) -> Postings:
        name = tokenizer or self.tokenizer
        key = (collection, name)
        if key not in self._postings:
            tokenize = self.tokenize if name == self.tokenizer else get_tokenizer(name)
            self._postings[key] = Postings(self._db, collection, name, tokenize)
        return self._postings[key]

    def _tokenizers(self) -> list[str]:
        return json.loads(self._meta("tokenizers", "[]"))

    def _sync(self, force: bool = False) -> None:
        """Reload the small shared state if another connection committed since.

        Checked at most every :data:`SYNC_INTERVAL_S` (one query makes dozens of store
        calls); a writer's transaction always syncs.
        """
        now = time.monotonic()
        if not force and now - self._checked_at < SYNC_INTERVAL_S:
            return
        self._checked_at = now
        version = self._db.execute("PRAGMA data_version").fetchone()[0]
        if version == self._version and not force:
            return
        self._version = version
        self._entity_rows.clear()
        self._passage_triples.clear()
        meta = dict(self._db.execute("SELECT key, value FROM meta WHERE key LIKE 'rows:%' OR key LIKE "
                                     "'count:%' OR key LIKE 'ann:%'").fetchall())
        for c in COLLECTIONS:
            self._rows[c] = int(meta.get(f"rows:{c}", 0))
            self._counts[c] = int(meta.get(f"count:{c}", 0))
            dead_rows = np.fromiter((r for (r,) in self._db.execute(
                "SELECT row FROM dead WHERE collection=? ORDER BY row", (c,))), dtype=np.int64)
            mask = np.zeros(self._rows[c], dtype=bool)
            mask[dead_rows[dead_rows < self._rows[c]]] = True
            if len(dead_rows) != len(self._dead_rows[c]):
                self._id_of[c].clear()
                self._row_of[c].clear()
                self._ends.clear()
            self._dead[c], self._dead_rows[c] = mask, dead_rows
            text = meta.get(f"ann:{c}")
            if text != self._ann_text[c] or self._ann[c].problems:
                self._ann[c].load(ann_mod.parse_parts(text))
                self._ann_text[c] = text
        self._where_cache.clear()

    def _verify_newest_chunks(self) -> None:
        for c in COLLECTIONS:
            rows = self._rows[c]
            if self._vectors[c].stored_rows() < rows:
                raise IndexCorruptError(
                    f"{self._vectors[c].path} holds fewer rows than the {rows} committed "
                    "(truncated or deleted); run `gear check`"
                )
            newest = self._db.execute(
                "SELECT start, stop, checksum FROM chunks WHERE collection=? ORDER BY start DESC LIMIT 1", (c,)
            ).fetchone()
            if newest and self._vectors[c].checksum(newest[0], newest[1]) != newest[2]:
                raise IndexCorruptError(
                    f"{self._vectors[c].path} rows {newest[0]}..{newest[1]} fail their checksum; "
                    "run `gear check` (`gear check --repair` re-embeds them)"
                )

    def _ensure_tokenizer(self) -> None:
        if self.tokenizer in self._tokenizers() or self._meta("embedding_model") is None:
            return
        with self.transaction():
            if self.tokenizer not in self._tokenizers():
                self._rebuild_postings(self.tokenizer)

    def _rebuild_postings(self, tokenizer: str) -> None:
        """(In a transaction.) Index every live row's text under ``tokenizer`` again."""
        for c in COLLECTIONS:
            sql = ("SELECT row, title, text FROM passages ORDER BY row" if c == "passage" else
                   "SELECT row, subject, predicate, object FROM triples ORDER BY row")
            rows = self._db.execute(sql).fetchall()
            if not all(isinstance(r[0], int) and all(isinstance(v, str) for v in r[1:]) for r in rows):
                raise edb.IndexCorruptError(  # a damaged page can hand back values of another column
                    f"{self.root}: the {c} table cannot be read to rebuild BM25 (damaged records); "
                    "run `gear check`")
            texts = ((r[0], (f"{r[1]}\n{r[2]}" if r[1] else r[2]) if c == "passage" else f"{r[1]} {r[2]} {r[3]}")
                     for r in rows)
            self._postings_of(c, tokenizer).rebuild(texts)
        names = self._tokenizers()
        if tokenizer not in names:
            set_meta(self._db, "tokenizers", json.dumps([*names, tokenizer]))

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group writes into one atomic commit under SQLite's write lock.

        On an exception nothing of the transaction is kept.

        Raises:
            StoreError: another writer held the lock for longer than the lock timeout.
        """
        with self._mutex:
            if self._tx_depth:
                self._tx_depth += 1
                try:
                    yield
                finally:
                    self._tx_depth -= 1
                return
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise StoreError(f"index at {self.root} is locked by another writer ({exc})") from exc
            self._tx_depth = 1
            try:
                self._initialise()
                self._sync(force=True)
                yield
                set_meta(self._db, "committed_at", _now())
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise
            finally:
                self._tx_depth = 0
                self._sync(force=True)

    def _initialise(self) -> None:
        if self._meta("embedding_model") is None:
            set_meta(self._db, "format_version", FORMAT_VERSION)
            set_meta(self._db, "embedding_model", self.embedding_model)
            set_meta(self._db, "dimension", self.dimension)
            set_meta(self._db, "tokenizers", json.dumps([self.tokenizer]))
        else:
            self._check_model()

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads inside see one committed state, however many commits land meanwhile.

        Example:
            >>> with store.snapshot():  # doctest: +SKIP
            ...     passages, triples = list(store.iter_passages()), list(store.iter_triples())
        """
        with self._mutex:
            if self._tx_depth or self._db.in_transaction:
                yield
                return
            self._db.execute("BEGIN")
            try:
                # Pin the read snapshot with a real read, then reload the cached counts and
                # rows from it: a plain _sync() may skip (checked < SYNC_INTERVAL_S ago) and
                # leave them from an older commit than the one the reads inside will see.
                self._db.execute("SELECT 1 FROM meta LIMIT 1").fetchall()
                self._sync(force=True)
                yield
            finally:
                self._db.execute("COMMIT")

    def refresh(self) -> bool:
        """Pick up another process's commits now; returns whether there were any."""
        with self._mutex:
            before = self._version
            self._sync()
            return before != self._version

    # ---- writes ---------------------------------------------------------------------
    def _embed(self, texts: list[str], what: list[str]) -> np.ndarray:
        vectors = np.asarray(self.embedder.embed(texts), dtype=np.float32)
        if vectors.shape != (len(texts), self.dimension):
            raise StoreError(f"embedder {self.embedding_model!r} returned shape {vectors.shape} for "
                             f"{len(texts)} texts; expected ({len(texts)}, {self.dimension})")
        bad = np.flatnonzero(~np.isfinite(vectors).all(axis=1))
        if len(bad):
            raise StoreError(f"embedder {self.embedding_model!r} returned a vector that is not finite "
                             f"for {what[int(bad[0])]}; nothing of this batch was stored")
        return vectors

    def _remember(self, collection: str, pairs: Any) -> None:
        id_of, row_of = self._id_of[collection], self._row_of[collection]
        if len(id_of) > 400_000:
            id_of.clear()
            row_of.clear()
        for rid, row in pairs:
            id_of[row] = rid
            row_of[rid] = row

    def _existing(self, table: str, ids: Sequence[str]) -> dict[str, int]:
        collection = "passage" if table == "passages" else "triple"
        known = self._row_of[collection] if not self._db.in_transaction else {}
        found: dict[str, int] = {}
        missing = []
        for i in dict.fromkeys(ids):
            row = known.get(i)
            if row is None:
                missing.append(i)
            else:
                found[i] = row
        for chunk in _chunks(missing):
            marks = ",".join("?" * len(chunk))
            pairs = self._db.execute(f"SELECT id, row FROM {table} WHERE id IN ({marks})", list(chunk)).fetchall()
            found.update(pairs)
            if not self._db.in_transaction:
                self._remember(collection, pairs)
        return found

    def _append_vectors(self, collection: Collection, vectors: np.ndarray) -> list[int]:
        start = self._rows[collection]
        checksum = self._vectors[collection].append(start, vectors)
        stop = start + len(vectors)
        self._db.execute("INSERT INTO chunks(collection, start, stop, checksum) VALUES (?, ?, ?, ?)",
                         (collection, start, stop, checksum))
        set_meta(self._db, f"rows:{collection}", stop)
        self._rows[collection] = stop
        return list(range(start, stop))

    def _bump_count(self, collection: Collection, delta: int) -> None:
        self._db.execute("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET "
                         "value = value + excluded.value", (f"count:{collection}", delta))

    def _index_text(self, collection: Collection, rows: list[int], texts: list[str]) -> None:
        for name in self._tokenizers():
            self._postings_of(collection, name).add(rows, texts, lambda: self._dead_rows[collection])

    def _insert_passages(self, new: list[Passage], vectors: np.ndarray, extracted: Sequence[bool] | None = None) -> None:
        rows = self._append_vectors("passage", vectors)
        records, meta = [], []
        for i, (row, p) in enumerate(zip(rows, new)):
            meta_json = edb.metadata_json(p.metadata)
            done = int(bool(extracted[i])) if extracted is not None else 0
            records.append((row, p.id, p.title, p.text, p.source, meta_json, done, edb.passage_crc(p, meta_json)))
            meta.extend(edb.meta_rows(row, p.metadata))
        self._db.executemany("INSERT INTO passages(row, id, title, text, source, metadata, extracted, crc) "
                             "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", records)
        self._db.executemany("INSERT INTO passage_meta(key, value, row) VALUES (?, ?, ?)",
                             [(k, int(v) if isinstance(v, bool) else v, r) for k, v, r in meta])
        self._bump_count("passage", len(new))
        if extracted is not None:
            self._bump_extracted(sum(map(bool, extracted)))
        self._index_text("passage", rows, [p.content for p in new])

    def _bump_extracted(self, delta: int) -> None:
        self._db.execute("INSERT INTO meta(key, value) VALUES ('extracted', ?) ON CONFLICT(key) DO UPDATE "
                         "SET value = value + excluded.value", (delta,))

    def _entity_ids(self, names: Sequence[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        unique = list(dict.fromkeys(names))
        for chunk in _chunks(unique):
            marks = ",".join("?" * len(chunk))
            found.update(self._db.execute(f"SELECT name, id FROM entities WHERE name IN ({marks})", list(chunk)))
        new = [name for name in unique if name not in found]
        if new:  # one statement for the batch, then their ids (assigned in this order)
            self._db.executemany("INSERT INTO entities(name) VALUES (?)", [(name,) for name in new])
            for chunk in _chunks(new):
                marks = ",".join("?" * len(chunk))
                found.update(self._db.execute(f"SELECT name, id FROM entities WHERE name IN ({marks})", list(chunk)))
        return found

    def _insert_triples(self, new: list[Triple], vectors: np.ndarray, passage_rows: dict[str, int]) -> None:
        heads = [normalise_entity(t.subject) for t in new]
        tails = [normalise_entity(t.object) for t in new]
        entity = self._entity_ids([*heads, *tails])
        rows = self._append_vectors("triple", vectors)
        self._db.executemany(
            "INSERT INTO triples(row, id, subject, predicate, object, passage_row, head, tail, crc) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(row, t.id, t.subject, t.predicate, t.object, passage_rows[t.passage_id], entity[h], entity[tl],
              edb.triple_crc(t)) for row, t, h, tl in zip(rows, new, heads, tails)],
        )
        self._bump_count("triple", len(new))
        self._index_text("triple", rows, [t.text for t in new])

    def add_passages(self, passages: Sequence[Passage]) -> AddResult:
        with self.transaction():
            stored = self._existing("passages", [p.id for p in passages])
            new, existing, seen = [], [], set()
            for passage in passages:
                if passage.id in stored or passage.id in seen:
                    existing.append(passage.id)
                else:
                    seen.add(passage.id)
                    new.append(passage)
            if new:
                vectors = self._embed([p.content for p in new], [f"passage {p.id}" for p in new])
                self._insert_passages(new, vectors)
            return AddResult(added=[p.id for p in new], existing=existing)

    def add_triples(self, triples: Sequence[Triple]) -> AddResult:
        with self.transaction():
            parents = self._existing("passages", [t.passage_id for t in triples])
            for triple in triples:
                if triple.passage_id not in parents:
                    raise StoreError(f"triple {triple.id} names passage {triple.passage_id}, which is not stored")
            stored = self._existing("triples", [t.id for t in triples])
            new, existing, seen = [], [], set()
            for triple in triples:
                if triple.id in stored or triple.id in seen:
                    existing.append(triple.id)
                else:
                    seen.add(triple.id)
                    new.append(triple)
            if new:
                vectors = self._embed([t.text for t in new], [f"triple {t.id}" for t in new])
                self._insert_triples(new, vectors, parents)
            return AddResult(added=[t.id for t in new], existing=existing)

    def mark_extracted(self, passage_ids: Sequence[str]) -> None:
        with self.transaction():
            changed = 0
            for chunk in _chunks(list(dict.fromkeys(passage_ids))):
                marks = ",".join("?" * len(chunk))
                changed += self._db.execute(
                    f"UPDATE passages SET extracted = 1 WHERE extracted = 0 AND id IN ({marks})", list(chunk)
                ).rowcount
            if changed:
                self._bump_extracted(changed)

    def delete_passages(self, passage_ids: Sequence[str]) -> list[str]:
        with self.transaction():
            doomed: dict[str, tuple[int, str, int]] = {}
            for chunk in _chunks(list(dict.fromkeys(passage_ids))):
                marks = ",".join("?" * len(chunk))
                for row, pid, title, text, extracted in self._db.execute(
                    f"SELECT row, id, title, text, extracted FROM passages WHERE id IN ({marks})", list(chunk)
                ):
                    doomed[pid] = (row, f"{title}\n{text}" if title else text, extracted)
            if not doomed:
                return []
            prow = [v[0] for v in doomed.values()]
            trows, ttexts = [], []
            for chunk in _chunks(prow):
                marks = ",".join("?" * len(chunk))
                for row, s, p, o in self._db.execute(
                    f"SELECT row, subject, predicate, object FROM triples WHERE passage_row IN ({marks})", list(chunk)
                ):
                    trows.append(row)
                    ttexts.append(f"{s} {p} {o}")
            for name in self._tokenizers():
                self._postings_of("passage", name).remove([v[1] for v in doomed.values()])
                self._postings_of("triple", name).remove(ttexts)
            for collection, rows in (("triple", trows), ("passage", prow)):
                table = _TABLE[collection]
                for chunk in _chunks(rows):
                    marks = ",".join("?" * len(chunk))
                    self._db.execute(f"DELETE FROM {table} WHERE row IN ({marks})", list(chunk))
                    if collection == "passage":
                        self._db.execute(f"DELETE FROM passage_meta WHERE row IN ({marks})", list(chunk))
                self._db.executemany("INSERT INTO dead(collection, row) VALUES (?, ?)", [(collection, r) for r in rows])
                self._bump_count(collection, -len(rows))
            self._bump_extracted(-sum(v[2] for v in doomed.values()))
            self.node_store().forget_passages(prow)
            return [pid for pid in passage_ids if pid in doomed]

    def delete_source(self, source: str) -> list[str]:
        with self.transaction():
            ids = [pid for (pid,) in self._db.execute("SELECT id FROM passages WHERE source = ? ORDER BY row", (source,))]
            return self.delete_passages(ids)

    @property
    def derived_dir(self) -> Path:
        """Caches derived from the index (the PPR graph) live in its own folder."""
        return self.root

    def maintain(self) -> None:
        """Bring the ANN parts up to date (called at the end of an indexing run)."""
        from gear_agent.store.maintenance import remove_superseded, update_ann

        with self.transaction():
            update_ann(self)
        with self.transaction():
            remove_superseded(self)
        with self._mutex:  # fold the WAL into the database file; skipped while readers hold it
            self._db.execute("PRAGMA busy_timeout=200")
            try:
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            finally:
                self._db.execute(f"PRAGMA busy_timeout={int(self._lock_timeout_s * 1000)}")

    # ---- filters --------------------------------------------------------------------
    def _where_rows(self, collection: Collection, where: Where) -> np.ndarray:
        """Rows of ``collection`` passing ``where`` (for triples: whose passage passes)."""
        key = (collection, repr(where))
        rows = self._where_cache.get(key)
        if rows is None:
            sql, params = where_sql(where)
            if collection == "triple":
                sql = f"SELECT row FROM triples WHERE passage_row IN ({sql.replace(' ORDER BY row', '')}) ORDER BY row"
            rows = np.fromiter((r for (r,) in self._db.execute(sql, params)), dtype=np.int64)
            if len(self._where_cache) > 64:
                self._where_cache.clear()
            self._where_cache[key] = rows
        return rows

    def _allowed(self, collection: Collection, where: Where | None) -> np.ndarray | None:
        if where is None:
            return None
        mask = np.zeros(self._rows[collection], dtype=bool)
        rows = self._where_rows(collection, where)
        mask[rows[rows < len(mask)]] = True
        return mask

    def count(self, collection: Collection, where: Any = None) -> int:
        self._table(collection)
        with self._mutex:
            self._sync()
            parsed = parse_where(where)
            return self._counts[collection] if parsed is None else len(self._where_rows(collection, parsed))

    def filter_passage_ids(self, ids: Sequence[str], where: Any) -> list[str]:
        parsed = parse_where(where)
        if parsed is None:
            return list(ids)
        with self._mutex:
            self._sync()
            allowed = set(self._where_rows("passage", parsed).tolist())
            rows = self._existing("passages", ids)
            return [i for i in ids if rows.get(i) in allowed]

    # ---- reads ------------------------------------------------------------------------
    def _table(self, collection: Collection) -> str:
        try:
            return _TABLE[collection]
        except KeyError:
            raise ValueError(f"unknown collection {collection!r}; expected 'passage' or 'triple'") from None

    def _ids_of_rows(self, collection: Collection, rows: Sequence[int]) -> list[str]:
        table = self._table(collection)
        known = self._id_of[collection]
        wanted = [int(r) for r in rows]
        missing = [r for r in wanted if r not in known]
        for chunk in _chunks(missing):
            marks = ",".join("?" * len(chunk))
            pairs = self._db.execute(f"SELECT id, row FROM {table} WHERE row IN ({marks})", list(chunk)).fetchall()
            self._remember(collection, pairs)
        return [known[r] for r in wanted if r in known]

    def _hits(self, collection: Collection, rows: np.ndarray, scores: np.ndarray) -> list[Hit]:
        ids = self._ids_of_rows(collection, rows)
        return [Hit(i, float(s)) for i, s in zip(ids, scores)]

    def bm25_search(self, collection: Collection, query: str, k: int, where: Any = None) -> list[Hit]:
        self._table(collection)
        parsed = parse_where(where)
        with self._mutex:
            self._sync()
            postings = self._postings_of(collection)
            n = self._rows[collection]
            try:
                scores = postings.scores(query, n, self._dead[collection], self._allowed(collection, parsed))
            except SegmentCorruptError as exc:
                logger.warning("%s; rebuilding the BM25 postings from the stored text", exc)
                with self.transaction():
                    self._rebuild_postings(self.tokenizer)
                scores = postings.scores(query, n, self._dead[collection], self._allowed(collection, parsed))
            rows, values = top_k(scores, k, positive_only=True)
            return self._hits(collection, rows, values)

    def _query(self, vector: np.ndarray) -> np.ndarray:
        q = np.asarray(vector, dtype=np.float32).reshape(-1)
        if q.shape != (self.dimension,):
            raise ValueError(f"query vector has shape {q.shape}; this store's vectors have dimension "
                             f"{self.dimension} ({self.embedding_model})")
        return q

    def _exact(self, matrix: np.ndarray, rows: np.ndarray, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        if len(rows) == 0 or k <= 0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        chosen, values = top_k(matvec(matrix[rows], q), k)
        return rows[chosen], values

    def vector_search(self, collection: Collection, vector: np.ndarray, k: int, where: Any = None) -> list[Hit]:
        self._table(collection)
        q = self._query(vector)
        parsed = parse_where(where)
        with self._mutex:
            self._sync()
            n, dead = self._rows[collection], self._dead[collection]
            matrix = self._vectors[collection].view(n)
            live = self._counts[collection]
            if n == 0 or k <= 0:
                return []
            ann = self._ann[collection]
            subset = self._where_rows(collection, parsed) if parsed is not None else None
            use_ann = ann.covered > 0 and live >= ann_mod.ANN_MIN_ROWS and k * ann_mod.OVERSAMPLE * 2 < live
            if subset is not None and (len(subset) <= EXACT_SUBSET_MAX or not use_ann):
                rows, values = self._exact(matrix, subset, q, k)
                return self._hits(collection, rows, values)
            if not use_ann:
                if dead.any():
                    rows, values = self._exact(matrix, np.flatnonzero(~dead), q, k)
                else:
                    rows, values = top_k(matvec(matrix, q), k)
                return self._hits(collection, rows, values)
            share = live / max(len(subset), 1) if subset is not None else 1.0
            count = ann_mod.candidate_count(k, share)
            candidates = np.unique(np.concatenate([ann.candidates(q, count), np.arange(ann.covered, n)]))
            candidates = candidates[(candidates >= 0) & (candidates < n)]
            candidates = candidates[~dead[candidates]]
            if subset is not None:
                candidates = candidates[np.isin(candidates, subset)]
            rows, values = self._exact(matrix, candidates, q, k)
            if subset is not None and len(rows) < min(k, len(subset)):
                rows, values = self._exact(matrix, subset, q, k)
            return self._hits(collection, rows, values)

    def exact_vector_search(self, collection: Collection, vector: np.ndarray, k: int) -> list[Hit]:
        """Exact top ``k`` by cosine over every live row (the reference the ANN is measured by)."""
        q = self._query(vector)
        with self._mutex:
            self._sync()
            n, dead = self._rows[collection], self._dead[collection]
            rows, values = self._exact(self._vectors[collection].view(n), np.flatnonzero(~dead), q, k)
            return self._hits(collection, rows, values)

    def get_passages(self, ids: Sequence[str]) -> list[Passage]:
        with self._mutex:
            found: dict[str, Passage] = {}
            for chunk in _chunks(list(dict.fromkeys(ids))):
                marks = ",".join("?" * len(chunk))
                for row in self._db.execute(f"SELECT {edb.PASSAGE_COLUMNS} FROM passages WHERE id IN ({marks})", list(chunk)):
                    found[row[1]] = edb.passage_from_row(row, self.root)
            return [found[i] for i in ids if i in found]

    def get_triples(self, ids: Sequence[str]) -> list[Triple]:
        with self._mutex:
            found: dict[str, Triple] = {}
            for chunk in _chunks(list(dict.fromkeys(ids))):
                marks = ",".join("?" * len(chunk))
                for row in self._db.execute(
                    f"SELECT {edb.TRIPLE_COLUMNS} FROM {edb.TRIPLE_FROM} WHERE t.id IN ({marks})", list(chunk)
                ):
                    found[row[1]] = edb.triple_from_row(row, self.root)
            return [found[i] for i in ids if i in found]

    def triple_vectors(self, ids: Sequence[str]) -> np.ndarray:
        with self._mutex:
            self._sync()
            rows = self._existing("triples", ids)
            positions = [rows[i] for i in ids]  # KeyError for an unknown id, as documented
            return np.asarray(self._vectors["triple"].view(self._rows["triple"])[positions], dtype=np.float32)

    def triples_of_passage(self, passage_id: str) -> list[str]:
        with self._mutex:
            self._sync()
            cached = self._passage_triples.get(passage_id)
            if cached is not None and not self._db.in_transaction:
                return list(cached)
            found = self._db.execute(
                "SELECT t.row, t.id, t.head, t.tail FROM triples t JOIN passages p ON p.row = t.passage_row "
                "WHERE p.id = ? ORDER BY t.row", (passage_id,),
            ).fetchall()
            ids = [tid for _, tid, _, _ in found]
            if not self._db.in_transaction:  # what a walk from these triples asks next: rows, ends
                self._remember("triple", [(tid, row) for row, tid, _, _ in found])
                self._remember_ends((row, head, tail) for row, _, head, tail in found)
                if len(self._passage_triples) > 100_000:
                    self._passage_triples.clear()
                self._passage_triples[passage_id] = ids
            return list(ids)

    def _remember_ends(self, rows: Iterable[tuple[int, int, int]]) -> None:
        if len(self._ends) > 400_000:
            self._ends.clear()
        for row, head, tail in rows:
            self._ends[row] = (head, tail)

    def neighbours(self, triple_id: str, query_vector: np.ndarray | None = None, limit: int = 100) -> list[str]:
        with self._mutex:
            self._sync()
            row = self._row_of["triple"].get(triple_id)
            ends = self._ends.get(row) if row is not None else None
            if ends is None:
                found = self._db.execute("SELECT row, head, tail FROM triples WHERE id = ?", (triple_id,)).fetchone()
                if found is None:
                    return []
                row, ends = found[0], (found[1], found[2])
                self._remember_ends([(row, *ends)])
                self._remember("triple", [(triple_id, row)])
            if limit <= 0:
                return []
            rows = self._triples_of_entities(sorted(set(ends)))
            rows = rows[rows != row]
            if query_vector is not None and len(rows):
                matrix = self._vectors["triple"].view(self._rows["triple"])
                chosen, _ = top_k(matvec(matrix[rows], self._query(query_vector)), limit)
                rows = rows[chosen]
            else:
                rows = rows[:limit]
            return self._ids_of_rows("triple", rows)

    def _triples_of_entities(self, entities: Sequence[int]) -> np.ndarray:
        """Rows of the triples with any of ``entities`` as head or tail (one query for the
        entities not cached yet; cached per entity until the next commit)."""
        missing = [e for e in entities if e not in self._entity_rows]
        if missing:
            marks = ",".join("?" * len(missing))
            pairs = np.array(self._db.execute(
                f"SELECT head, row FROM triples WHERE head IN ({marks}) "
                f"UNION ALL SELECT tail, row FROM triples WHERE tail IN ({marks})", [*missing, *missing],
            ).fetchall(), dtype=np.int64).reshape(-1, 2)
            if len(self._entity_rows) > 100_000:
                self._entity_rows.clear()
            for entity in missing:
                self._entity_rows[entity] = np.unique(pairs[pairs[:, 0] == entity, 1])
        found = [self._entity_rows[e] for e in entities]
        return found[0] if len(found) == 1 else np.unique(np.concatenate(found))

    def unextracted_passages(self) -> list[Passage]:
        with self._mutex:
            return [edb.passage_from_row(r, self.root) for r in self._db.execute(
                f"SELECT {edb.PASSAGE_COLUMNS} FROM passages WHERE extracted = 0 ORDER BY row")]

    def iter_passages(self) -> Iterator[Passage]:
        with self._mutex:
            return iter([edb.passage_from_row(r, self.root) for r in self._db.execute(
                f"SELECT {edb.PASSAGE_COLUMNS} FROM passages ORDER BY row")])

    def iter_triples(self) -> Iterator[Triple]:
        with self._mutex:
            return iter([edb.triple_from_row(r, self.root) for r in self._db.execute(
                f"SELECT {edb.TRIPLE_COLUMNS} FROM {edb.TRIPLE_FROM} ORDER BY t.row")])

    def close(self) -> None:
        with self._mutex:
            self._db.close()

    # ---- extras of this backend ---------------------------------------------------------
    def node_store(self) -> EmbeddedNodeStore:
        """The SiReRAG nodes of this index (:mod:`gear_agent.store.embedded_nodes`)."""
        with self._mutex:
            if self._nodes is None:
                self._nodes = EmbeddedNodeStore(self)
            return self._nodes

    def passage_position(self, passage_id: str) -> int | None:
        """Row of a passage in the passage vector file, or None."""
        with self._mutex:
            return self._existing("passages", [passage_id]).get(passage_id)

    def size_on_disk(self) -> int:
        """Bytes of the index's files."""
        return size_on_disk(self.root)


def size_on_disk(root: Path) -> int:
    """Bytes of the files of the index at ``root`` (SQLite with its WAL, vectors, ANN parts)."""
    names = (edb.DB_FILE, f"{edb.DB_FILE}-wal", "passage.vec", "triple.vec", "node.vec")
    total = 0
    for path in Path(root).iterdir():
        if path.is_file() and (path.name in names or path.name.endswith(ann_mod.SUFFIX)):
            total += path.stat().st_size
    return total


def _translate_database_errors(cls: type) -> type:
    """Make SQLite's errors on a damaged or locked file the project's one-line errors."""
    import functools

    def wrap(function: Any) -> Any:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return function(*args, **kwargs)
            except sqlite3.OperationalError as exc:
                if "locked" in str(exc) or "busy" in str(exc):
                    raise StoreError(f"index is locked by another writer ({exc})") from exc
                raise IndexCorruptError(f"the index cannot be read ({exc}); run `gear check`") from exc
            except sqlite3.DatabaseError as exc:
                raise IndexCorruptError(f"the index cannot be read ({exc}); run `gear check`") from exc
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise IndexCorruptError(f"a stored record cannot be decoded ({exc}); run `gear check`") from exc

        return wrapper

    for name in ("add_passages", "add_triples", "mark_extracted", "delete_passages", "delete_source",
                 "maintain", "count", "filter_passage_ids", "bm25_search", "vector_search",
                 "exact_vector_search", "get_passages", "get_triples", "triple_vectors",
                 "triples_of_passage", "neighbours", "unextracted_passages", "iter_passages",
                 "iter_triples", "passage_position", "refresh"):
        setattr(cls, name, wrap(getattr(cls, name)))
    original_open = cls.__dict__["open"].__func__
    cls.open = classmethod(wrap(original_open))  # type: ignore[attr-defined]
    return cls


_translate_database_errors(EmbeddedStore)


def _now() -> str:
    import time

    return time.strftime("%Y-%m-%dT%H:%M:%S%z")
