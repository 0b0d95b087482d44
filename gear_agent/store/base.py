"""The one small interface every index backend implements.

Retrieval, expansion and the agent talk only to :class:`Store`, so a backend
(the embedded default in :mod:`gear_agent.store.embedded.store`, Elasticsearch in
:mod:`gear_agent.store.elasticsearch.store`) can be swapped without touching them.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Container, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from gear_agent.errors import GearError
from gear_agent.store.changes import Changes, Listeners, Stamp
from gear_agent.types import AddResult, Collection, Hit, Passage, Triple

WhereSpec = Any
"""A filter in any form :func:`gear_agent.filters.parse_where` reads (a ``Where``, a dict
in the Mongo style, a list of ``KEY OP VALUE`` strings), or None for no filter."""


class StoreError(GearError, RuntimeError):
    """A store cannot do what was asked; the message says why and what to do."""


class ModelMismatchError(StoreError):
    """The index was built with another embedding model than the one configured."""


class IndexCorruptError(StoreError):
    """An index cannot be read as it is; the message names what is wrong and what to do
    (``gear check``, ``gear check --repair``)."""


def split_new(records: Sequence[Any], stored: Container[str]) -> tuple[list[Any], list[str]]:
    """Records to write (the first of each id that is not stored) and the ids that are
    no-ops, in order: a repeat of an id within the same call counts as existing.

    Example:
        >>> from gear_agent.types import Passage
        >>> a, b = Passage("p-1", "A", "a"), Passage("p-2", "B", "b")
        >>> new, existing = split_new([a, b, a], {"p-2"})
        >>> [p.id for p in new], existing
        (['p-1'], ['p-2', 'p-1'])
    """
    new: list[Any] = []
    existing: list[str] = []
    seen: set[str] = set()
    for record in records:
        if record.id in stored or record.id in seen:
            existing.append(record.id)
        else:
            seen.add(record.id)
            new.append(record)
    return new, existing


class Store(ABC):
    """Passages and triples, with BM25 and vector search over each and an entity graph.

    Every triple belongs to exactly one passage; deleting a passage deletes its
    triples and their graph edges. Ids are content hashes, so adding something
    already stored is a no-op. Vectors are L2-normalised float32 rows. Every commit has
    a generation, and :meth:`changes_since` says what changed after one.

    Optional capabilities are protocols a backend may implement: SiReRAG nodes
    (:class:`gear_agent.store.nodes.HasNodes`).
    """

    #: The backend's name in :data:`gear_agent.store.backends.BACKENDS`.
    backend: ClassVar[str] = ""
    #: Name of the embedding model the index was built with.
    embedding_model: str
    #: Dimension of its vectors.
    dimension: int

    @property
    def derived_dir(self) -> Path | None:
        """The folder where caches derived from this index live (the PPR graph), or None
        when the backend keeps no local folder (they are then kept in memory only)."""
        return None

    # ---- writes -----------------------------------------------------------
    @abstractmethod
    def add_passages(self, passages: Sequence[Passage]) -> AddResult:
        """Store and embed the passages not yet stored; the rest are no-ops."""

    @abstractmethod
    def add_triples(self, triples: Sequence[Triple]) -> AddResult:
        """Store and embed triples; each ``passage_id`` must name a stored passage."""

    @abstractmethod
    def mark_extracted(self, passage_ids: Sequence[str]) -> None:
        """Record that triple extraction ran on these passages (even if it found none)."""

    @abstractmethod
    def delete_passages(self, passage_ids: Sequence[str]) -> list[str]:
        """Delete passages with their triples and graph edges; returns the ids deleted."""

    @abstractmethod
    def delete_source(self, source: str) -> list[str]:
        """Delete every passage whose source is exactly ``source``; returns the ids deleted
        (``a/corpus.json`` never matches ``b/corpus.json``)."""

    @abstractmethod
    def passage_ids_of_source(self, source: str) -> list[str]:
        """Ids of the passages :meth:`delete_source` would delete, in stored order."""

    def stored_sources(self, under: str | None = None, *, relative: bool = False) -> list[str]:
        """Distinct stored sources, sorted; with ``under``, only ``under`` itself and the
        sources below the folder it names (``under/...``); with ``relative``, only those not
        starting with ``/`` (paths stored before sources were canonical, callers' own names).
        This default reads every passage; backends answer from an index."""
        found = {p.source for p in self.iter_passages()}
        if relative:
            found = {s for s in found if not s.startswith("/")}
        if under is not None:
            folder = under.rstrip("/")
            found = {s for s in found if s in (under, folder) or s.startswith(folder + "/")}
        return sorted(found)

    def replace_passages(self, remove: Sequence[str], add: Sequence[Passage]) -> AddResult:
        """Delete the passages ``remove`` (with their triples and graph edges) and add
        ``add`` (embedded; already stored ones are no-ops) as one commit where the backend
        has commits, so a reader sees either the old passages or the new, never both and
        never neither (sync by source). This default adds first, then deletes: a reader
        may see both for a moment, never neither."""
        result = self.add_passages(add)
        if remove:
            self.delete_passages(remove)
        return result

    def sources_like(self, source: str) -> list[str]:
        """A few stored sources with the same file name as ``source`` (to suggest one when
        ``source`` matches nothing); backends that cannot list them cheaply give none."""
        return []

    # ---- reads ------------------------------------------------------------
    @abstractmethod
    def count(self, collection: Collection, where: WhereSpec = None) -> int:
        """How many passages or triples are stored; with ``where``, how many pass the filter
        (for triples: how many belong to a passage that passes). Cheap enough to ask before
        a filtered search whether the filter matches anything.

        Raises:
            FilterError: ``where`` cannot be read.
        """

    @abstractmethod
    def bm25_search(
        self, collection: Collection, query: str, k: int, where: WhereSpec = None
    ) -> list[Hit]:
        """Top ``k`` by Lucene BM25 (k1=1.2, b=0.75) over the standard-analyzer tokens.

        With ``where`` only passages passing the filter (for triples: triples of such
        passages) are ranked; the filter is applied before ranking, so ``k`` hits come
        back whenever ``k`` such documents match the query. Example::

            store.bm25_search("passage", "annual revenue", 10, where={"year": {"$gte": 2020}})
        """

    @abstractmethod
    def vector_search(
        self, collection: Collection, vector: np.ndarray, k: int, where: WhereSpec = None
    ) -> list[Hit]:
        """Top ``k`` by cosine similarity with a normalised query vector (``where`` as in
        :meth:`bm25_search`)."""

    def lowest_similarity(self, collection: Collection, vector: np.ndarray) -> float | None:
        """The lowest cosine of the normalised query ``vector`` with any stored record of
        ``collection`` (None when there are none), for a min-max normalisation.

        It is the negated query's best hit (the record most similar to ``-q`` is the least
        similar to ``q``), so no search returns every record. Where that search is
        approximate (Elasticsearch's HNSW, the embedded ANN) it may miss the true lowest and
        answer a little above it; callers take the minimum with the scores they hold.
        """
        worst = self.vector_search(collection, -np.asarray(vector), 1)
        return -worst[0].score if worst else None

    def filter_passage_ids(self, ids: Sequence[str], where: WhereSpec) -> list[str]:
        """The ``ids`` of stored passages that pass ``where``, in the order given (unknown ids
        are left out; with no filter, ``ids`` come back unchanged). Backends answer from
        their indexes; this default reads the passages.

        Example::

            kept = store.filter_passage_ids([p.id for p in expanded], ["source=reports/2024"])
        """
        from gear_agent.filters import parse_where

        parsed = parse_where(where)
        if parsed is None:
            return list(ids)
        passing = {p.id for p in self.get_passages(list(dict.fromkeys(ids))) if parsed.matches(p)}
        return [i for i in ids if i in passing]

    @abstractmethod
    def get_passages(self, ids: Sequence[str]) -> list[Passage]:
        """Passages by id, in the order asked; unknown ids are left out."""

    @abstractmethod
    def get_triples(self, ids: Sequence[str]) -> list[Triple]:
        """Triples by id, in the order asked; unknown ids are left out."""

    @abstractmethod
    def triple_vectors(self, ids: Sequence[str]) -> np.ndarray:
        """Stored embeddings of the triples, one row per id, in the order asked."""

    @abstractmethod
    def triples_of_passage(self, passage_id: str) -> list[str]:
        """Ids of the triples extracted from a passage, in extraction order."""

    def triples_of_passages(self, passage_ids: Sequence[str]) -> list[list[str]]:
        """:meth:`triples_of_passage` of each of ``passage_ids``, in order, in one call:
        graph expansion asks for all its base passages at once, which a remote backend
        answers in one request. This default asks :meth:`triples_of_passage` for each.

        Example:
            >>> store.triples_of_passages(["p-1", "p-2"])  # doctest: +SKIP
            [['t-1', 't-2'], []]
        """
        return [self.triples_of_passage(p) for p in passage_ids]

    @abstractmethod
    def neighbours(
        self, triple_id: str, query_vector: np.ndarray | None = None, limit: int = 100
    ) -> list[str]:
        """Triples sharing the head or tail entity of ``triple_id`` (itself excluded).

        Entities match after lower-casing and collapsing whitespace. With a
        ``query_vector`` the ``limit`` most similar to it come back, best first;
        without, the first ``limit`` in a stable order.
        """

    def neighbours_many(
        self, triple_ids: Sequence[str], query_vector: np.ndarray | None = None, limit: int = 100
    ) -> list[list[str]]:
        """:meth:`neighbours` of each of ``triple_ids``, in order, in one call: a beam
        search step asks for all its beams at once, which a remote backend answers in one
        request. This default asks :meth:`neighbours` for each."""
        return [self.neighbours(t, query_vector, limit) for t in triple_ids]

    @abstractmethod
    def unextracted_passages(self) -> list[Passage]:
        """Passages on which triple extraction has not run yet."""

    @abstractmethod
    def iter_passages(self) -> Iterator[Passage]:
        """Every stored passage."""

    @abstractmethod
    def iter_triples(self) -> Iterator[Triple]:
        """Every stored triple."""

    def passage_ids(self) -> list[str]:
        """Ids of every stored passage (backends answer without reading the texts)."""
        return [p.id for p in self.iter_passages()]

    def triple_batches(self, size: int = 65_536) -> Iterator[list[tuple[str, str, str, str]]]:
        """Every triple as ``(id, subject, object, passage id)``, ``size`` at a time (what a
        graph over the store reads; backends stream it without holding every triple)."""
        batch: list[tuple[str, str, str, str]] = []
        for t in self.iter_triples():
            batch.append((t.id, t.subject, t.object, t.passage_id))
            if len(batch) >= size:
                yield batch
                batch = []
        if batch:
            yield batch

    # ---- commits ------------------------------------------------------------
    @abstractmethod
    def generation(self) -> int:
        """The generation of the last commit this store sees: every commit gets the next
        number, 0 is a store nothing was ever written to (:mod:`gear_agent.store.changes`).
        Cheap enough to ask once per query."""

    @abstractmethod
    def changes_since(self, generation: int) -> Changes:
        """What the commits after ``generation`` added and removed (up to :meth:`generation`).

        Example:
            >>> changes = store.changes_since(graph.generation)  # doctest: +SKIP
            >>> changes.passages_added, changes.passages_removed  # doctest: +SKIP
        """

    def index_id(self) -> str:
        """The index's own random id, made when it was created: a new index in the same
        place (or under the same names) gets another one. "" where a backend has none."""
        return ""

    def stamp(self) -> Stamp:
        """The exact state this store reads (:class:`~gear_agent.store.changes.Stamp`):
        what a derived file records and is compared with. Backends with a commit log add
        a digest of the last commit; this default has none."""
        return Stamp(self.index_id(), self.generation())

    def knows(self, stamp: Stamp) -> bool:
        """Whether ``stamp`` names a commit of this index's history up to now, so that
        :meth:`changes_since` of its generation leads from that state to this one. This
        default, without a commit log, knows only its own current stamp."""
        return stamp == self.stamp()

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads inside see one commit, however many land meanwhile (a query's reads
        never mix two commits). Backends that cannot pin a commit read the latest."""
        yield

    def subscribe(self, listener: Callable[[int], None]) -> Callable[[], None]:
        """Call ``listener(generation)`` after each commit this store object makes (the
        write path of derived state kept in this process); returns the unsubscribe call."""
        listeners = self.__dict__.setdefault("_commit_listeners", Listeners())
        return listeners.add(listener)

    def _committed(self, generation: int | Callable[[], int]) -> None:
        """Tell the listeners about a commit (backends call it after each one); a callable
        ``generation`` is asked only when someone listens."""
        listeners = self.__dict__.get("_commit_listeners")
        if listeners is not None and listeners:
            listeners.notify(generation() if callable(generation) else generation)

    def bulk_load(self) -> contextlib.AbstractContextManager[None]:
        """A block of many writes (a whole build): a backend that writes faster with other
        settings while it runs uses them (Elasticsearch: no refresh until the end, see
        :meth:`ElasticsearchStore.bulk_load`). Here: nothing changes."""
        return contextlib.nullcontext()

    def maintain(self) -> None:  # noqa: B027 - optional hook
        """Bring derived caches up to date (the embedded store's ANN); called at the end of
        an indexing run. A no-op where there is nothing to do."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources (connections, locks)."""

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
