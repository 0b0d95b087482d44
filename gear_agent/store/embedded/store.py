"""The embedded store, gear-agent's default backend: one directory, no server.

Layout (docs/storage.md has the design and the measurements behind it):

* ``index.sqlite`` (:mod:`gear_agent.store.embedded.db`): records, metadata, entity ids,
  BM25 vocabulary and segments (:mod:`gear_agent.store.embedded.postings`), vector checksums, the
  commit log and the manifest, in SQLite's WAL mode: a write is one SQLite transaction,
  readers are never blocked, and a crash leaves the last commit;
* ``index.generation``: the generation of the last commit, outside the WAL (a WAL that
  lost committed frames is detected at open);
* ``passage.vec`` / ``triple.vec`` / ``node.vec`` (:mod:`gear_agent.store.embedded.vectors`):
  append-only float32 rows, memory-mapped, checksummed per append;
* ``{collection}-{start}-{stop}.usearch`` (:mod:`gear_agent.store.ann`): the approximate
  nearest-neighbour parts, a derived cache checksummed and rebuilt when bad.

The store composes three collections that each own their parts
(:class:`~gear_agent.store.embedded.collection.PassageCollection`,
:class:`~gear_agent.store.embedded.collection.TripleCollection`,
:class:`~gear_agent.store.embedded.nodes.EmbeddedNodeStore`); it keeps what the
collections look like at each commit (:mod:`gear_agent.store.embedded.state`), pins a commit for a
query's reads (:meth:`snapshot`; a read that mixes what a state holds with SQLite reads
pins one for itself outside a snapshot, so that it answers from one commit while another
connection commits), and runs writes as transactions. Nothing is rebuilt at
open. Writers take SQLite's write lock (``BEGIN IMMEDIATE``), so two writers never
interleave.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from gear_agent.embedding.base import Embedder
from gear_agent.filters import Where, parse_where
from gear_agent.store import ann as ann_mod
from gear_agent.store.base import (
    IndexCorruptError,
    ModelMismatchError,
    Store,
    StoreError,
    split_new,
)
from gear_agent.store.bm25 import top_k
from gear_agent.store.changes import Changes, Stamp
from gear_agent.store.collections import Passages, Triples
from gear_agent.store.derived_files import remove_abandoned_temporaries
from gear_agent.store.embedded.ann_parts import AnnParts
from gear_agent.store.embedded.collection import (
    PassageCollection,
    RecordCollection,
    TripleCollection,
    View,
)
from gear_agent.store.embedded.db import FORMAT_VERSION, INDEX_ID_KEY, Database, chunked, marks
from gear_agent.store.embedded.manifest import has_previous_format, read_manifest, size_on_disk
from gear_agent.store.embedded.nodes import EmbeddedNodeStore
from gear_agent.store.embedded.postings import SegmentCorruptError
from gear_agent.store.embedded.records import (
    PASSAGE_COLUMNS,
    TRIPLE_COLUMNS,
    TRIPLE_FROM,
    passage_from_row,
    triple_from_row,
)
from gear_agent.store.embedded.state import States
from gear_agent.store.threads import matvec
from gear_agent.text.tokenizer import get_tokenizer
from gear_agent.types import AddResult, Collection, Hit, Passage, Triple

logger = logging.getLogger(__name__)

__all__ = ["EmbeddedStore", "read_manifest", "size_on_disk"]

class EmbeddedStore(Store):
    """A :class:`Store` in one local directory.

    Example:
        >>> from gear_agent.embedding.hashing import HashingEmbedder
        >>> import tempfile
        >>> store = EmbeddedStore.open(Path(tempfile.mkdtemp()) / "ix", HashingEmbedder(64))
        >>> store.passages.add([Passage("p-1", "Paris", "Paris is in France.", "a.txt", {"year": 2020})]).added
        ['p-1']
        >>> [h.id for h in store.passages.bm25_search("France", k=5, where={"year": {"$gte": 2020}})]
        ['p-1']
    """

    backend: ClassVar[str] = "embedded"

    def __init__(
        self, root: Path, embedder: Embedder, lock_timeout_s: float = 600.0,
        tokenizer: str = "standard", verify: bool = True, ann: ann_mod.AnnPolicy = ann_mod.DEFAULT_POLICY,
    ) -> None:
        self.root = Path(root)
        self.tokenizer = tokenizer
        self.embedder = embedder
        self.embedding_model = embedder.name
        self.dimension = int(embedder.dimension)
        self.verify = verify
        self.db = Database(self.root, lock_timeout_s)
        try:
            self.db.ensure_schema()
        except BaseException:
            self.db.close()
            raise
        self.passage_parts = PassageCollection(self.db, self.root, self.dimension, self._tokenizer_of, ann)
        self.triple_parts = TripleCollection(self.db, self.root, self.dimension, self._tokenizer_of, ann)
        self.nodes = EmbeddedNodeStore(self)
        self.passages = EmbeddedPassages(self)
        self.triples = EmbeddedTriples(self)
        self._collections: dict[str, RecordCollection] = {"passage": self.passage_parts, "triple": self.triple_parts}
        self.states = States(self.db, self._collections, verify)
        self.ann_parts = AnnParts(self, (self.passage_parts, self.triple_parts))
        self.db.after_commit.append(self._after_commit)

    @classmethod
    def open(
        cls, path: Path, embedder: Embedder, *, create: bool = True, lock_timeout_s: float = 600.0,
        tokenizer: str = "standard", verify: bool = True, ann: ann_mod.AnnPolicy = ann_mod.DEFAULT_POLICY,
    ) -> EmbeddedStore:
        """Open the index at ``path`` (created empty when missing and ``create`` is true).

        Every vector chunk is verified before its rows are used (only repairs open with
        ``verify=False``). ``tokenizer`` names the BM25 tokenizer; postings are kept per
        tokenizer, built once when first asked for. ``ann`` says when a collection gets ANN
        parts (:class:`~gear_agent.store.ann.AnnPolicy`; its defaults suit real corpora).

        Raises:
            ModelMismatchError: the index was built with another embedding model.
            StoreError: no index at ``path`` and ``create`` is false; ``path`` is a file;
                the index is in the previous format (``gear migrate`` converts it).
            IndexCorruptError: the index is damaged, or lost its last commit (the message
                says what; see ``gear check``).
        """
        path = Path(path)
        if path.exists() and not path.is_dir():
            raise StoreError(f"{path} is a file, not an index folder")
        if has_previous_format(path):
            raise StoreError(
                f"the index at {path} is in the previous format (CURRENT + gen-* folders); convert "
                f"it once with `gear migrate --index {path}` (its files are left in place)")
        if not create and read_manifest(path) is None:
            raise StoreError(f"no index at {path}: build one first with `gear index`")
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the index folder {path} ({exc.strerror})") from exc
        store = cls(path, embedder, lock_timeout_s=lock_timeout_s, tokenizer=tokenizer, verify=verify, ann=ann)
        try:
            store._check_model()
            if verify:
                lost = store.db.lost_commits()
                if lost is not None:
                    raise IndexCorruptError(
                        f"the index at {path} lost its last commit(s): {lost[0]} were made, "
                        f"index.sqlite holds {lost[1]} (its WAL was damaged or removed before a "
                        "checkpoint); run `gear check --repair` to go on from the commits it holds, "
                        "then index what the lost commits added again")
            store._ensure_index_id()
            store.states.sync(force=True)
            store._record_verified()
            store._ensure_tokenizer()
        except BaseException:
            store.close()
            raise
        return store

    # ---- state --------------------------------------------------------------------
    def _tokenizer_of(self, name: str) -> Any:
        return self.tokenize if name == self.tokenizer else get_tokenizer(name)

    @property
    def tokenize(self) -> Any:
        return get_tokenizer(self.tokenizer)

    def _check_model(self) -> None:
        model, dimension = self.db.meta("embedding_model"), self.db.meta("dimension")
        if model is None:
            return
        if model != self.embedding_model or int(dimension) != self.dimension:
            raise ModelMismatchError(
                f"index at {self.root} was built with embedding model {model!r} "
                f"(dimension {dimension}); the configured model is {self.embedding_model!r} "
                f"(dimension {self.dimension}). Set GEAR_EMBEDDING_MODEL={model} to use this "
                "index, or build a new index in another directory."
            )

    def view(self, collection: Collection) -> View:
        """What ``collection`` looks like at the commit this thread reads: rows, live count,
        dead rows, the opened ANN parts."""
        return self.states.current().views[self._coll(collection).name]

    def _coll(self, collection: Collection) -> RecordCollection:
        try:
            return self._collections[collection]
        except (KeyError, TypeError):
            raise ValueError(f"unknown collection {collection!r}; expected 'passage' or 'triple'") from None

    def _record_verified(self) -> None:
        """Record the vector files as verified where this process verified them all (so the
        next open reads only their newest chunks); skipped on a read-only index."""
        if not any(c.vectors.full_reads for c in self._collections.values()):
            return
        try:
            with self.db.writing(count=False):
                for c in self._collections.values():
                    if c.vectors.full_reads:
                        c.vectors.record_verified()
        except StoreError as exc:
            logger.info("could not record the verified vector files (%s)", exc)

    def _ensure_index_id(self) -> None:
        """Give an index made before index ids existed its id now (an open for writing); a
        read-only one is read without (its derived files are then trusted only when their
        whole stamp matches)."""
        if self.db.meta(INDEX_ID_KEY) is not None or self.db.meta("embedding_model") is None:
            return
        try:
            with self.db.writing(count=False):
                if self.db.meta(INDEX_ID_KEY) is None:
                    self.db.set_meta(INDEX_ID_KEY, uuid.uuid4().hex)
        except StoreError as exc:
            logger.info("could not give the index at %s its id (%s)", self.root, exc)

    def _ensure_tokenizer(self) -> None:
        if self.tokenizer in self.states.current().tokenizers or self.db.meta("embedding_model") is None:
            return
        with self.transaction():
            if self.tokenizer not in self._tokenizers():
                self._rebuild_postings(self.tokenizer)

    def _tokenizers(self) -> list[str]:
        return json.loads(self.db.meta("tokenizers", "[]"))

    def _rebuild_postings(self, tokenizer: str) -> None:
        """(In a transaction.) Index every live row's text under ``tokenizer`` again."""
        for coll in self._collections.values():
            coll.rebuild_postings(tokenizer)
        names = self._tokenizers()
        if tokenizer not in names:
            self.db.set_meta("tokenizers", json.dumps([*names, tokenizer]))

    # ---- transactions and snapshots -------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group writes into one atomic commit under SQLite's write lock.

        On an exception nothing of the transaction is kept.

        Raises:
            StoreError: another writer held the lock for longer than the lock timeout.
        """
        if self.db.writing_here():
            with self.db.writing():
                yield
            return
        try:
            with self.db.writing():
                self.states.forget_writer()
                self._initialise()
                yield
        finally:
            self.states.forget_writer()

    def _initialise(self) -> None:
        if self.db.meta(INDEX_ID_KEY) is None:  # made with the index (or by its first write since ids)
            self.db.set_meta(INDEX_ID_KEY, uuid.uuid4().hex)
        if self.db.meta("embedding_model") is None:
            self.db.set_meta("format_version", FORMAT_VERSION)
            self.db.set_meta("embedding_model", self.embedding_model)
            self.db.set_meta("dimension", self.dimension)
            self.db.set_meta("tokenizers", json.dumps([self.tokenizer]))
        else:
            self._check_model()

    def _after_commit(self, generation: int) -> None:
        self.states.sync(force=True)
        self._committed(generation)

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads inside see one committed state, however many commits land meanwhile.

        Re-entrant; per thread (other threads keep reading their own commits).

        Example:
            >>> with store.snapshot():  # doctest: +SKIP
            ...     passages, triples = list(store.passages.iterate()), list(store.triples.iterate())
        """
        with self.states.pinned():
            yield

    def refresh(self) -> bool:
        """Pick up another process's commits now; returns whether there were any."""
        before = self.states.current().generation
        return self.states.sync(force=True).generation != before

    def generation(self) -> int:
        # looked up now: whoever asks is checking for other processes' commits
        return self.states.current(fresh=True).generation

    def changes_since(self, generation: int) -> Changes:
        with self.snapshot():
            return self.states.changes_since(generation)

    def index_id(self) -> str:
        return self.states.current(fresh=True).stamp.index_id

    def stamp(self) -> Stamp:
        """The stamp of the commit this thread reads (looked up now outside a snapshot)."""
        return self.states.current(fresh=True).stamp

    def knows(self, stamp: Stamp) -> bool:
        with self.snapshot():
            return self.states.knows(stamp)

    # ---- writes ---------------------------------------------------------------------
    def embed_checked(self, texts: list[str], what: list[str]) -> np.ndarray:
        """The embedder's vectors for ``texts``, refused unless they are finite rows of the
        store's dimension (``what`` names each text in the error)."""
        vectors = _as_matrix(self.embedder.embed(texts), len(texts), self.dimension, self.embedding_model)
        bad = np.flatnonzero(~np.isfinite(vectors).all(axis=1))
        if len(bad):
            raise StoreError(f"embedder {self.embedding_model!r} returned a vector that is not finite "
                             f"for {what[int(bad[0])]}; nothing of this batch was stored")
        return vectors

    def _dead_rows(self, collection: str) -> Any:
        return lambda: np.flatnonzero(self.states.writer().views[collection].dead)

    def import_with_vectors(self, passages: Sequence[Passage], passage_vectors: np.ndarray,
                            extracted: Sequence[bool], triples: Sequence[Triple],
                            triple_vectors: np.ndarray) -> None:
        """Store records with vectors given, not embedded (``gear migrate``), in one commit."""
        with self.transaction():
            tokenizers = self._tokenizers()
            if passages:
                self.passage_parts.add(passages, passage_vectors, tokenizers, self._dead_rows("passage"), extracted)
            if triples:
                rows = self.passage_parts.rows_of_ids(None, [t.passage_id for t in triples])
                self.triple_parts.add(triples, triple_vectors, rows, tokenizers, self._dead_rows("triple"))

    @property
    def derived_dir(self) -> Path:
        """Caches derived from the index (the PPR graph) live in its own folder."""
        return self.root

    def maintain(self, progress: Any = None) -> None:
        """The write path of the derived state this store keeps itself (what every write run
        ends with): its ANN parts brought up to date by the one rule
        (:class:`~gear_agent.store.embedded.ann_parts.AnnParts`, ``progress(stage, done, total)``
        as pieces are built), part files no commit lists removed, the WAL folded into the
        database file."""
        self.ann_parts.update(self, progress)
        self.remove_superseded()
        self.db.checkpoint()

    def remove_superseded(self) -> list[str]:
        """Delete ANN part files that no committed state refers to, and temporaries whose
        writer is gone (another live process's are its own)."""
        with self.transaction():
            listed = set().union(*(c.listed_ann_files() for c in self._collections.values()))
            gone = sorted(p.name for p in self.root.glob(f"*{ann_mod.SUFFIX}") if p.name not in listed)
            for name in gone:
                (self.root / name).unlink(missing_ok=True)
            remove_abandoned_temporaries(self.root)
        return gone

    # ---- repair (gear check --repair) -------------------------------------------------
    def repair(self, *, vectors: bool, postings: bool, ann: bool, progress: Any = None) -> list[str]:
        """Rebuild what can be rebuilt from the texts in SQLite: damaged, missing or truncated
        vector files (re-embedded, with ``progress(stage, done, total)``), the BM25
        postings, the ANN parts. Returns what was done."""
        done: list[str] = []
        with self.transaction():
            if vectors:
                for coll in self._collections.values():
                    done.extend(coll.repair_vectors(self.embed_checked, progress))
                done.extend(self.nodes.repair_vectors(progress))
            if postings:
                for name in self._tokenizers():
                    self._rebuild_postings(name)
                done.append("rebuilt the BM25 postings")
        if ann:  # as at a first use: the parts that do not load dropped, the rest built
            self.ann_parts.stamp = None
            done.extend(f"rebuilt ANN part {f}" for f in self.ann_parts.update(self, progress))
        self.remove_superseded()
        return done

    # ---- filters --------------------------------------------------------------------
    # ---- reads ----------------------------------------------------------------------
    def _hits(self, coll: RecordCollection, rows: np.ndarray, scores: np.ndarray) -> list[Hit]:
        ids = coll.ids_of_rows(rows)
        return [Hit(i, float(s)) for i, s in zip(ids, scores)]

    def query_vector(self, vector: np.ndarray) -> np.ndarray:
        """``vector`` as a float32 row of this store's dimension (ValueError otherwise)."""
        q = np.asarray(vector, dtype=np.float32).reshape(-1)
        if q.shape != (self.dimension,):
            raise ValueError(f"query vector has shape {q.shape}; this store's vectors have dimension "
                             f"{self.dimension} ({self.embedding_model})")
        if not np.isfinite(q).all():
            raise ValueError("query vector is not finite (NaN or infinity); cosine similarity needs a direction")
        return q

    def _vectors_of(self, coll: RecordCollection, ids: Sequence[str]) -> np.ndarray:
        with self.snapshot():
            view = self.states.current().views[coll.name]
            rows = coll.rows_of_ids(view, ids)
            positions = [rows[i] for i in ids]  # KeyError for an unknown id, as documented
            if any(p >= view.rows for p in positions):  # inside a write: rows it added since its view
                view = self.states.sync(force=True).views[coll.name]
            return np.asarray(coll.matrix(view)[positions], dtype=np.float32)

    def passage_rows(self, ids: Sequence[str]) -> dict[str, int]:
        """Rows of the stored passages among ``ids`` (as the calling transaction sees them)."""
        with self.snapshot():
            view = None if self.db.writing_here() else self.view("passage")
            return self.passage_parts.rows_of_ids(view, ids)

    def serving(self) -> None:
        self.db.serving()

    def close(self) -> None:
        self.db.close()

    # ---- extras of this backend -------------------------------------------------------
    def size_on_disk(self) -> int:
        """Bytes of the index's files."""
        return size_on_disk(self.root)


class _Searchable:
    """Count and search of one collection of an :class:`EmbeddedStore` at the commit the
    calling thread reads (what passages and triples share): the caller's snapshot, or one
    pinned for the call, so that the state (rows, dead rows) and the SQLite reads (filter
    rows, postings, ids) are of the same commit."""

    name: ClassVar[str]

    def __init__(self, store: EmbeddedStore) -> None:
        self.store = store

    def count(self, where: Any = None) -> int:
        parsed = parse_where(where)
        if parsed is None:
            return self.store.states.current().views[self.name].count
        with self.store.snapshot():
            return len(self.store.states.where_rows(self.name, parsed, self.store.states.current()))

    def bm25_search(self, query: str, k: int, where: Any = None) -> list[Hit]:
        parsed = parse_where(where)
        pinned = self.store.states.is_pinned()
        try:
            with self.store.snapshot():
                return self._bm25(query, k, parsed)
        except SegmentCorruptError as exc:
            logger.warning("%s; rebuilding the BM25 postings from the stored text", exc)
            with self.store.transaction():
                self.store._rebuild_postings(self.store.tokenizer)
            if pinned:  # the caller's commit still holds the damaged segment
                raise IndexCorruptError(f"{exc}; the BM25 postings were rebuilt from the stored text: "
                                        "ask again") from exc
            with self.store.snapshot():
                return self._bm25(query, k, parsed)

    def _bm25(self, query: str, k: int, where: Where | None) -> list[Hit]:
        """(Inside a snapshot.) The top ``k`` rows by BM25 at the pinned commit."""
        coll = self.store._coll(self.name)
        state = self.store.states.current()
        allowed = self.store.states.allowed(self.name, where, state)
        scores = coll.bm25_scores(state.views[self.name], query, self.store.tokenizer, allowed)
        rows, values = top_k(scores, k, positive_only=True)
        return self.store._hits(coll, rows, values)

    def vector_search(self, vector: np.ndarray, k: int, where: Any = None) -> list[Hit]:
        coll = self.store._coll(self.name)
        q = self.store.query_vector(vector)
        parsed = parse_where(where)
        with self.store.snapshot():
            state = self.store.states.current()
            subset = self.store.states.where_rows(self.name, parsed, state) if parsed is not None else None
            rows, values = coll.vector_search(state.views[self.name], q, k, subset)
            return self.store._hits(coll, rows, values)

    def lowest_similarity(self, vector: np.ndarray) -> float | None:
        """The negated query's nearest row, found with the ANN parts' narrow beam (a quarter
        of a full search's time: :class:`~gear_agent.store.ann.AnnPolicy`)."""
        coll = self.store._coll(self.name)
        q = self.store.query_vector(vector)
        _, values = coll.vector_search(self.store.states.current().views[self.name], -q, 1, None, shallow=True)
        return -float(values[0]) if len(values) else None

    def exact_vector_search(self, vector: np.ndarray, k: int) -> list[Hit]:
        """Exact top ``k`` by cosine over every live row (the reference the ANN is measured by)."""
        coll = self.store._coll(self.name)
        with self.store.snapshot():
            view = self.store.view(self.name)
            rows, values = coll.exact(view, view.live_rows(), self.store.query_vector(vector), k)
            return self.store._hits(coll, rows, values)


class EmbeddedPassages(_Searchable, Passages):
    """The passages of an :class:`EmbeddedStore` (their rows, vectors, postings and ANN parts:
    :class:`~gear_agent.store.embedded.collection.PassageCollection`)."""

    def add(self, passages: Sequence[Passage]) -> AddResult:
        with self.store.transaction():
            stored = self.store.passage_parts.rows_of_ids(None, [p.id for p in passages])
            new, existing = split_new(passages, stored)
            if new:
                vectors = self.store.embed_checked([p.content for p in new], [f"passage {p.id}" for p in new])
                self.store.passage_parts.add(new, vectors, self.store._tokenizers(), self.store._dead_rows("passage"))
            return AddResult(added=[p.id for p in new], existing=existing)

    def mark_extracted(self, passage_ids: Sequence[str]) -> None:
        with self.store.transaction():
            self.store.passage_parts.mark_extracted(passage_ids)

    def remove(self, passage_ids: Sequence[str]) -> list[str]:
        with self.store.transaction():
            doomed = self.store.passage_parts.doomed(passage_ids)
            if not doomed:
                return []
            generation = self.store.db.generation() + 1
            tokenizers = self.store._tokenizers()
            prows = [v[0] for v in doomed.values()]
            triples = self.store.triple_parts.of_passage_rows(prows)
            self.store.triple_parts.kill([r for r, _, _ in triples], [i for _, i, _ in triples], [t for _, _, t in triples],
                              tokenizers, generation)
            self.store.passage_parts.kill(prows, list(doomed), [v[1] for v in doomed.values()], tokenizers, generation)
            self.store.triple_parts.delete_rows([r for r, _, _ in triples])
            self.store.passage_parts.delete_rows(prows)
            self.store.db.add_meta("extracted", -sum(v[2] for v in doomed.values()))
            self.store.nodes.forget_passages(prows)
            return [pid for pid in dict.fromkeys(passage_ids) if pid in doomed]

    def remove_source(self, source: str) -> list[str]:
        with self.store.transaction():
            return self.remove(self.store.passage_parts.ids_of_source(source))

    def ids_of_source(self, source: str) -> list[str]:
        return self.store.passage_parts.ids_of_source(source)

    def sources(self, under: str | None = None, *, relative: bool = False) -> list[str]:
        if relative:
            found = self.store.db.rows("SELECT DISTINCT source FROM passages WHERE source NOT LIKE '/%' ORDER BY source")
            return [s for (s,) in found if under is None or s in (under, under.rstrip("/"))
                    or s.startswith(under.rstrip("/") + "/")]
        if under is None:
            return [s for (s,) in self.store.db.rows("SELECT DISTINCT source FROM passages ORDER BY source")]
        folder = under.rstrip("/")
        # the folder's files are the range [folder/, folder0): '0' follows '/' (the source index answers)
        return [s for (s,) in self.store.db.rows(
            "SELECT DISTINCT source FROM passages WHERE source IN (?, ?) OR (source >= ? AND source < ?) "
            "ORDER BY source", (under, folder, folder + "/", folder + "0"))]

    def replace(self, remove: Sequence[str], add: Sequence[Passage]) -> AddResult:
        """Delete ``remove`` and add ``add`` in one SQLite transaction: one commit."""
        with self.store.transaction():
            if remove:
                self.remove(remove)
            return self.add(add)

    def sources_like(self, source: str) -> list[str]:
        return self.store.passage_parts.sources_like(source)

    def filter_ids(self, ids: Sequence[str], where: Any) -> list[str]:
        parsed = parse_where(where)
        if parsed is None:
            return list(ids)
        with self.store.snapshot():
            state = self.store.states.current()
            allowed = set(self.store.states.where_rows("passage", parsed, state).tolist())
            rows = self.store.passage_parts.rows_of_ids(state.views["passage"], ids)
        return [i for i in ids if rows.get(i) in allowed]

    def get(self, ids: Sequence[str]) -> list[Passage]:
        found: dict[str, Passage] = {}
        for chunk in chunked(list(dict.fromkeys(ids))):
            for row in self.store.db.rows(f"SELECT {PASSAGE_COLUMNS} FROM passages WHERE id IN ({marks(chunk)})", list(chunk)):
                found[row[1]] = passage_from_row(row, self.store.root)
        return [found[i] for i in ids if i in found]

    def vectors(self, ids: Sequence[str]) -> np.ndarray:
        """Stored embeddings of passages, one row per id (KeyError for an unknown id)."""
        return self.store._vectors_of(self.store.passage_parts, ids)

    def unextracted(self) -> list[Passage]:
        return [passage_from_row(r, self.store.root) for r in self.store.db.rows(
            f"SELECT {PASSAGE_COLUMNS} FROM passages WHERE extracted = 0 ORDER BY row")]

    def iterate(self) -> Iterator[Passage]:
        return iter([passage_from_row(r, self.store.root) for r in self.store.db.rows(
            f"SELECT {PASSAGE_COLUMNS} FROM passages ORDER BY row")])

    def ids(self) -> list[str]:
        """Ids of every stored passage, in stored order."""
        return [i for (i,) in self.store.db.rows("SELECT id FROM passages ORDER BY row")]


class EmbeddedTriples(_Searchable, Triples):
    """The triples of an :class:`EmbeddedStore` (their rows, vectors, postings, ANN parts and
    entity ends: :class:`~gear_agent.store.embedded.collection.TripleCollection`)."""

    def add(self, triples: Sequence[Triple]) -> AddResult:
        with self.store.transaction():
            parents = self.store.passage_parts.rows_of_ids(None, [t.passage_id for t in triples])
            for triple in triples:
                if triple.passage_id not in parents:
                    raise StoreError(f"triple {triple.id} names passage {triple.passage_id}, which is not stored")
            stored = self.store.triple_parts.rows_of_ids(None, [t.id for t in triples])
            new, existing = split_new(triples, stored)
            if new:
                vectors = self.store.embed_checked([t.text for t in new], [f"triple {t.id}" for t in new])
                self.store.triple_parts.add(new, vectors, parents, self.store._tokenizers(), self.store._dead_rows("triple"))
            return AddResult(added=[t.id for t in new], existing=existing)

    def get(self, ids: Sequence[str]) -> list[Triple]:
        found: dict[str, Triple] = {}
        for chunk in chunked(list(dict.fromkeys(ids))):
            for row in self.store.db.rows(
                f"SELECT {TRIPLE_COLUMNS} FROM {TRIPLE_FROM} WHERE t.id IN ({marks(chunk)})", list(chunk)
            ):
                found[row[1]] = triple_from_row(row, self.store.root)
        return [found[i] for i in ids if i in found]

    def vectors(self, ids: Sequence[str]) -> np.ndarray:
        return self.store._vectors_of(self.store.triple_parts, ids)

    def of_passage(self, passage_id: str) -> list[str]:
        with self.store.snapshot():
            return self.store.triple_parts.of_passage(self.store.view("triple"), passage_id)

    def neighbours(self, triple_id: str, query_vector: np.ndarray | None = None, limit: int = 100) -> list[str]:
        with self.store.snapshot():
            return self._neighbours(triple_id, query_vector, limit)

    def _neighbours(self, triple_id: str, query_vector: np.ndarray | None, limit: int) -> list[str]:
        view = self.store.view("triple")
        found = self.store.triple_parts.ends_of(view, triple_id)
        if found is None or limit <= 0:
            return []
        row, ends = found
        rows = self.store.triple_parts.rows_of_entities(view, sorted(set(ends)))
        rows = rows[(rows != row) & (rows < view.rows)]
        if query_vector is not None and len(rows):
            chosen, _ = top_k(matvec(self.store.triple_parts.matrix(view)[rows], self.store.query_vector(query_vector)), limit)
            rows = rows[chosen]
        else:
            rows = rows[:limit]
        return self.store.triple_parts.ids_of_rows(rows)

    def iterate(self) -> Iterator[Triple]:
        return iter([triple_from_row(r, self.store.root) for r in self.store.db.rows(
            f"SELECT {TRIPLE_COLUMNS} FROM {TRIPLE_FROM} ORDER BY t.row")])

    def batches(self, size: int = 65_536) -> Iterator[list[tuple[str, str, str, str]]]:
        """Every triple as (id, subject, object, passage id), ``size`` at a time, checksums
        verified (what the PPR graph reads; never holds all of them)."""
        for block in self.store.db.batches(f"SELECT {TRIPLE_COLUMNS} FROM {TRIPLE_FROM} ORDER BY t.row", size=size):
            triples = [triple_from_row(r, self.store.root) for r in block]
            yield [(t.id, t.subject, t.object, t.passage_id) for t in triples]



def _as_matrix(raw: Any, count: int, dimension: int, model: str) -> np.ndarray:
    """``raw`` as a (count, dimension) float32 matrix, or a one-line StoreError naming the
    embedder (ragged rows, wrong lengths, values that are not numbers)."""
    try:
        vectors = np.asarray(raw, dtype=np.float32)
    except (ValueError, TypeError) as exc:
        lengths = sorted({len(v) for v in raw if hasattr(v, "__len__")}) if hasattr(raw, "__iter__") else []
        shape = f"vectors of lengths {', '.join(map(str, lengths[:5]))}" if len(lengths) > 1 else str(exc)
        raise StoreError(f"embedder {model!r} returned {shape} for {count} texts; expected {count} "
                         f"vectors of length {dimension}; nothing of this batch was stored") from exc
    if vectors.shape != (count, dimension):
        raise StoreError(f"embedder {model!r} returned shape {vectors.shape} for {count} texts; "
                         f"expected ({count}, {dimension}); nothing of this batch was stored")
    return vectors
