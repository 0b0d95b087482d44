"""The embedded store, gear-agent's default backend: one directory, no server.

Passages and triples live in memory while the store is open, with BM25 and
cosine search over each and the :class:`EntityGraph` over the triples. Every
write goes through :meth:`EmbeddedStore.transaction`: it takes the directory's
file lock (so two writers cannot interleave), reloads the index if another
process committed since this one read it, applies the change, and commits a
new generation atomically (:mod:`gear_agent.store.generations`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from filelock import FileLock, Timeout

from gear_agent.embedding.base import Embedder
from gear_agent.store import generations as gen
from gear_agent.store.base import ModelMismatchError, Store, StoreError
from gear_agent.store.bm25 import BM25Index, top_k
from gear_agent.store.entity_graph import EntityGraph
from gear_agent.text.tokenizer import get_tokenizer
from gear_agent.types import AddResult, Collection, Hit, Passage, Triple

FORMAT_VERSION = 1
MANIFEST = "manifest.json"


def read_manifest(path: Path) -> dict[str, Any] | None:
    """The manifest of the committed index at ``path``, or None if there is none."""
    live = gen.current_generation(Path(path))
    return None if live is None else gen.read_json(live / MANIFEST)


class EmbeddedStore(Store):
    """A :class:`Store` in one local directory.

    Example:
        >>> from gear_agent.embedding import make_embedder  # doctest: +SKIP
        >>> store = EmbeddedStore.open(Path(".gear/index"), make_embedder(settings))  # doctest: +SKIP
        >>> store.bm25_search("passage", "Eiffel tower", k=5)  # doctest: +SKIP
    """

    def __init__(
        self, root: Path, embedder: Embedder, lock_timeout_s: float = 600.0,
        tokenizer: str = "standard",
    ) -> None:
        self.root = Path(root)
        self.tokenize = get_tokenizer(tokenizer)
        self.embedder = embedder
        self.embedding_model = embedder.name
        self.dimension = embedder.dimension
        self._lock = FileLock(str(self.root / gen.LOCK), timeout=lock_timeout_s)
        self._tx_depth = 0
        self._dirty = False
        self._generation: str | None = None
        self._reset()

    @classmethod
    def open(
        cls, path: Path, embedder: Embedder, *, create: bool = True, lock_timeout_s: float = 600.0,
        tokenizer: str = "standard",
    ) -> EmbeddedStore:
        """Open the index at ``path`` (created empty when missing and ``create`` is true).

        ``tokenizer`` names the BM25 tokenizer (:data:`gear_agent.text.tokenizer.TOKENIZERS`);
        BM25 is rebuilt in memory at open, so it is a reading choice, not part of the index.

        Raises:
            ModelMismatchError: the index was built with another embedding model.
            StoreError: no index at ``path`` and ``create`` is false.
        """
        path = Path(path)
        if not create and gen.current_generation(path) is None:
            raise StoreError(f"no index at {path}: build one first with `gear index`")
        if path.exists() and not path.is_dir():
            raise StoreError(f"{path} is a file, not an index directory")
        path.mkdir(parents=True, exist_ok=True)
        store = cls(path, embedder, lock_timeout_s=lock_timeout_s, tokenizer=tokenizer)
        store._load()
        return store

    # ---- state -----------------------------------------------------------
    def _reset(self) -> None:
        self._passages: list[Passage] = []
        self._extracted: list[bool] = []
        self._passage_index: dict[str, int] = {}
        self._passage_vectors = np.zeros((0, self.dimension), dtype=np.float32)
        self._triples: list[Triple] = []
        self._triple_index: dict[str, int] = {}
        self._triple_vectors = np.zeros((0, self.dimension), dtype=np.float32)
        self._triples_by_passage: dict[str, list[int]] = {}
        self._derived: dict[str, Any] = {}

    def _invalidate(self) -> None:
        self._dirty = True
        self._derived.clear()

    def _load(self, attempts: int = 5) -> None:
        for attempt in range(attempts):
            live = gen.current_generation(self.root)
            if live is None:
                self._reset()
                self._generation = None
                return
            try:
                self._load_generation(live)
                return
            except FileNotFoundError:
                # A writer pruned this generation between our reading CURRENT and loading it.
                if attempt == attempts - 1:
                    raise
                time.sleep(0.05)

    def _load_generation(self, live: Path) -> None:
        manifest = gen.read_json(live / MANIFEST)
        model, dimension = manifest.get("embedding_model"), manifest.get("dimension")
        if model != self.embedding_model or dimension != self.dimension:
            raise ModelMismatchError(
                f"index at {self.root} was built with embedding model {model!r} "
                f"(dimension {dimension}); the configured model is {self.embedding_model!r} "
                f"(dimension {self.dimension}). Set GEAR_EMBEDDING_MODEL={model} to use this "
                "index, or build a new index in another directory."
            )
        self._reset()
        for row in gen.read_jsonl(live / "passages.jsonl"):
            self._passage_index[row["id"]] = len(self._passages)
            self._passages.append(Passage(row["id"], row["title"], row["text"], row.get("source", "")))
            self._extracted.append(bool(row.get("extracted", False)))
        for row in gen.read_jsonl(live / "triples.jsonl"):
            triple = Triple(row["id"], row["subject"], row["predicate"], row["object"], row["passage_id"])
            self._triple_index[triple.id] = len(self._triples)
            self._triples_by_passage.setdefault(triple.passage_id, []).append(len(self._triples))
            self._triples.append(triple)
        self._passage_vectors = gen.read_array(live / "passage_vectors.npy", self.dimension)
        self._triple_vectors = gen.read_array(live / "triple_vectors.npy", self.dimension)
        if len(self._passage_vectors) != len(self._passages) or len(self._triple_vectors) != len(
            self._triples
        ):
            raise gen.IndexCorruptError(f"{live}: vector counts do not match record counts")
        self._generation = live.name
        self._dirty = False

    def _write_files(self, folder: Path) -> None:
        gen.write_jsonl(
            folder / "passages.jsonl",
            (
                {"id": p.id, "title": p.title, "text": p.text, "source": p.source, "extracted": e}
                for p, e in zip(self._passages, self._extracted)
            ),
        )
        gen.write_jsonl(
            folder / "triples.jsonl",
            (
                {"id": t.id, "subject": t.subject, "predicate": t.predicate, "object": t.object,
                 "passage_id": t.passage_id}
                for t in self._triples
            ),
        )
        gen.write_array(folder / "passage_vectors.npy", self._passage_vectors)
        gen.write_array(folder / "triple_vectors.npy", self._triple_vectors)
        gen.write_json(
            folder / MANIFEST,
            {
                "format_version": FORMAT_VERSION,
                "embedding_model": self.embedding_model,
                "dimension": self.dimension,
                "passages": len(self._passages),
                "triples": len(self._triples),
                "extracted_passages": sum(self._extracted),
                "committed_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            },
        )

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group writes into one atomic commit under the directory's lock.

        On an exception the staged changes are dropped and the last commit reloaded.

        Raises:
            StoreError: another writer held the lock for longer than the lock timeout.
        """
        if self._tx_depth:
            self._tx_depth += 1
            try:
                yield
            finally:
                self._tx_depth -= 1
            return
        try:
            self._lock.acquire()
        except Timeout as exc:
            raise StoreError(
                f"index at {self.root} is locked by another writer ({self._lock.lock_file})"
            ) from exc
        self._tx_depth = 1
        try:
            live = gen.current_generation(self.root)
            if (live.name if live else None) != self._generation:
                self._load()
            yield
            if self._dirty:
                committed = gen.commit_generation(self.root, self._write_files)
                self._generation = committed.name
                self._dirty = False
        except BaseException:
            self._load()
            raise
        finally:
            self._tx_depth = 0
            self._lock.release()

    def refresh(self) -> bool:
        """Reload if another process committed since; returns whether it did."""
        live = gen.current_generation(self.root)
        if (live.name if live else None) == self._generation:
            return False
        self._load()
        return True

    # ---- writes ----------------------------------------------------------
    def add_passages(self, passages: Sequence[Passage]) -> AddResult:
        with self.transaction():
            new, existing, seen = [], [], set()
            for passage in passages:
                if passage.id in self._passage_index or passage.id in seen:
                    existing.append(passage.id)
                else:
                    seen.add(passage.id)
                    new.append(passage)
            if new:
                vectors = self.embedder.embed([p.content for p in new])
                for passage in new:
                    self._passage_index[passage.id] = len(self._passages)
                    self._passages.append(passage)
                    self._extracted.append(False)
                self._passage_vectors = np.vstack([self._passage_vectors, vectors])
                self._invalidate()
            return AddResult(added=[p.id for p in new], existing=existing)

    def add_triples(self, triples: Sequence[Triple]) -> AddResult:
        with self.transaction():
            new, existing, seen = [], [], set()
            for triple in triples:
                if triple.passage_id not in self._passage_index:
                    raise StoreError(
                        f"triple {triple.id} names passage {triple.passage_id}, which is not stored"
                    )
                if triple.id in self._triple_index or triple.id in seen:
                    existing.append(triple.id)
                else:
                    seen.add(triple.id)
                    new.append(triple)
            if new:
                vectors = self.embedder.embed([t.text for t in new])
                for triple in new:
                    position = len(self._triples)
                    self._triple_index[triple.id] = position
                    self._triples_by_passage.setdefault(triple.passage_id, []).append(position)
                    self._triples.append(triple)
                self._triple_vectors = np.vstack([self._triple_vectors, vectors])
                self._invalidate()
            return AddResult(added=[t.id for t in new], existing=existing)

    def mark_extracted(self, passage_ids: Sequence[str]) -> None:
        with self.transaction():
            for pid in passage_ids:
                position = self._passage_index.get(pid)
                if position is not None and not self._extracted[position]:
                    self._extracted[position] = True
                    self._dirty = True

    def delete_passages(self, passage_ids: Sequence[str]) -> list[str]:
        with self.transaction():
            doomed = {pid for pid in passage_ids if pid in self._passage_index}
            if not doomed:
                return []
            keep_p = np.asarray([p.id not in doomed for p in self._passages], dtype=bool)
            keep_t = np.asarray([t.passage_id not in doomed for t in self._triples], dtype=bool)
            passages = [p for p, k in zip(self._passages, keep_p) if k]
            extracted = [e for e, k in zip(self._extracted, keep_p) if k]
            triples = [t for t, k in zip(self._triples, keep_t) if k]
            passage_vectors = self._passage_vectors[keep_p]
            triple_vectors = self._triple_vectors[keep_t]
            self._reset()
            self._passages, self._extracted = passages, extracted
            self._passage_index = {p.id: i for i, p in enumerate(passages)}
            self._triples = triples
            self._triple_index = {t.id: i for i, t in enumerate(triples)}
            for i, t in enumerate(triples):
                self._triples_by_passage.setdefault(t.passage_id, []).append(i)
            self._passage_vectors, self._triple_vectors = passage_vectors, triple_vectors
            self._invalidate()
            return [pid for pid in passage_ids if pid in doomed]

    def delete_source(self, source: str) -> list[str]:
        return self.delete_passages([p.id for p in self._passages if p.source == source])

    # ---- derived indexes ---------------------------------------------------
    def _bm25(self, collection: Collection) -> BM25Index:
        key = f"bm25-{collection}"
        if key not in self._derived:
            texts = (
                [p.content for p in self._passages]
                if collection == "passage"
                else [t.text for t in self._triples]
            )
            self._derived[key] = BM25Index([self.tokenize(text) for text in texts])
        return self._derived[key]

    @property
    def entity_graph(self) -> EntityGraph:
        """The entity graph over the stored triples (edge ``i`` is triple ``i``)."""
        if "graph" not in self._derived:
            self._derived["graph"] = EntityGraph([(t.subject, t.object) for t in self._triples])
        return self._derived["graph"]

    # ---- reads -----------------------------------------------------------
    def _records(self, collection: Collection) -> list[Any]:
        if collection == "passage":
            return self._passages
        if collection == "triple":
            return self._triples
        raise ValueError(f"unknown collection {collection!r}; expected 'passage' or 'triple'")

    def _vectors(self, collection: Collection) -> np.ndarray:
        self._records(collection)
        return self._passage_vectors if collection == "passage" else self._triple_vectors

    def count(self, collection: Collection) -> int:
        return len(self._records(collection))

    def bm25_search(self, collection: Collection, query: str, k: int) -> list[Hit]:
        records = self._records(collection)
        indices, scores = self._bm25(collection).search(self.tokenize(query), k)
        return [Hit(records[i].id, float(s)) for i, s in zip(indices, scores)]

    def vector_search(self, collection: Collection, vector: np.ndarray, k: int) -> list[Hit]:
        records = self._records(collection)
        matrix = self._vectors(collection)
        if len(records) == 0:
            return []
        indices, scores = top_k(matrix @ np.asarray(vector, dtype=np.float32), k)
        return [Hit(records[i].id, float(s)) for i, s in zip(indices, scores)]

    def get_passages(self, ids: Sequence[str]) -> list[Passage]:
        return [self._passages[self._passage_index[i]] for i in ids if i in self._passage_index]

    def get_triples(self, ids: Sequence[str]) -> list[Triple]:
        return [self._triples[self._triple_index[i]] for i in ids if i in self._triple_index]

    def triple_vectors(self, ids: Sequence[str]) -> np.ndarray:
        positions = [self._triple_index[i] for i in ids]
        return self._triple_vectors[positions]

    def triples_of_passage(self, passage_id: str) -> list[str]:
        return [self._triples[i].id for i in self._triples_by_passage.get(passage_id, [])]

    def neighbours(
        self, triple_id: str, query_vector: np.ndarray | None = None, limit: int = 100
    ) -> list[str]:
        position = self._triple_index.get(triple_id)
        if position is None:
            return []
        found = self.entity_graph.neighbours(position)
        if query_vector is not None and len(found) > 0:
            similarity = self._triple_vectors[found] @ np.asarray(query_vector, dtype=np.float32)
            chosen, _ = top_k(similarity, limit)
            found = found[chosen]
        else:
            found = found[:limit]
        return [self._triples[i].id for i in found]

    def unextracted_passages(self) -> list[Passage]:
        return [p for p, done in zip(self._passages, self._extracted) if not done]

    def iter_passages(self) -> Iterator[Passage]:
        return iter(list(self._passages))

    def iter_triples(self) -> Iterator[Triple]:
        return iter(list(self._triples))

    def close(self) -> None:
        self._derived.clear()

    # ---- extras of this backend ----------------------------------------------
    def passage_position(self, passage_id: str) -> int | None:
        """Row of a passage in the vector matrix (for fast array code), or None."""
        return self._passage_index.get(passage_id)

    def size_on_disk(self) -> int:
        """Bytes of the committed generation."""
        live = gen.current_generation(self.root)
        return gen.folder_size(live) if live else 0
