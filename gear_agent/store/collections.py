"""The collections of a store: passages and triples, each an object behind one small protocol.

Every backend's :class:`~gear_agent.store.base.Store` composes a :class:`Passages` and a
:class:`Triples` (``store.passages``, ``store.triples``); the store itself owns only what
is store-wide (commits, generation, change feed, snapshot, close). What the two have in
common is :class:`Collection`: add, get, count, search (BM25 and vectors), iterate.

Example:
    >>> store.passages.add([Passage("p-1", "Paris", "Paris is in France.", "a.txt")])  # doctest: +SKIP
    >>> store.passages.bm25_search("France", k=5, where={"year": {"$gte": 2020}})  # doctest: +SKIP
    >>> store.triples.of_passages(["p-1"])  # doctest: +SKIP
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar, Generic, TypeVar

import numpy as np

from gear_agent.types import AddResult, Hit, Passage, Triple

WhereSpec = Any
"""A filter in any form :func:`gear_agent.filters.parse_where` reads (a ``Where``, a dict
in the Mongo style, a list of ``KEY OP VALUE`` strings), or None for no filter."""

R = TypeVar("R", Passage, Triple)


class Collection(ABC, Generic[R]):
    """Records of one kind with their vectors, BM25 over their text and vector search.

    Ids are content hashes, so adding something already stored is a no-op. Vectors are
    L2-normalised float32 rows.
    """

    #: ``"passage"`` or ``"triple"``.
    name: ClassVar[str]

    @abstractmethod
    def add(self, records: Sequence[R]) -> AddResult:
        """Store and embed the records not yet stored; the rest are no-ops."""

    @abstractmethod
    def get(self, ids: Sequence[str]) -> list[R]:
        """Records by id, in the order asked; unknown ids are left out."""

    @abstractmethod
    def count(self, where: WhereSpec = None) -> int:
        """How many are stored; with ``where``, how many pass the filter (for triples: how
        many belong to a passage that passes). Cheap enough to ask before a filtered search
        whether the filter matches anything.

        Raises:
            FilterError: ``where`` cannot be read.
        """

    @abstractmethod
    def bm25_search(self, query: str, k: int, where: WhereSpec = None) -> list[Hit]:
        """Top ``k`` by Lucene BM25 (k1=1.2, b=0.75) over the standard-analyzer tokens.

        With ``where`` only passages passing the filter (for triples: triples of such
        passages) are ranked; the filter is applied before ranking, so ``k`` hits come
        back whenever ``k`` such documents match the query. Example::

            store.passages.bm25_search("annual revenue", 10, where={"year": {"$gte": 2020}})
        """

    @abstractmethod
    def vector_search(self, vector: np.ndarray, k: int, where: WhereSpec = None) -> list[Hit]:
        """Top ``k`` by cosine similarity with a normalised query vector (``where`` as in
        :meth:`bm25_search`)."""

    def lowest_similarity(self, vector: np.ndarray) -> float | None:
        """The lowest cosine of the normalised query ``vector`` with any stored record (None
        when there are none), for a min-max normalisation.

        It is the negated query's best hit (the record most similar to ``-q`` is the least
        similar to ``q``), so no search returns every record. Where that search is
        approximate (Elasticsearch's HNSW, the embedded ANN) it may miss the true lowest and
        answer a little above it; callers take the minimum with the scores they hold.
        """
        worst = self.vector_search(-np.asarray(vector), 1)
        return -worst[0].score if worst else None

    @abstractmethod
    def vectors(self, ids: Sequence[str]) -> np.ndarray:
        """Stored embeddings, one row per id, in the order asked."""

    @abstractmethod
    def iterate(self) -> Iterator[R]:
        """Every stored record."""


class Passages(Collection[Passage]):
    """The passages: records with a source, metadata and an extraction mark.

    Deleting a passage deletes its triples and their graph edges.
    """

    name: ClassVar[str] = "passage"

    @abstractmethod
    def remove(self, ids: Sequence[str]) -> list[str]:
        """Delete passages with their triples and graph edges; returns the ids deleted."""

    def remove_source(self, source: str) -> list[str]:
        """Delete every passage whose source is exactly ``source``; returns the ids deleted
        (``a/corpus.json`` never matches ``b/corpus.json``)."""
        return self.remove(self.ids_of_source(source))

    @abstractmethod
    def ids_of_source(self, source: str) -> list[str]:
        """Ids of the passages :meth:`remove_source` would delete, in stored order."""

    def ids_of_sources(self, sources: Sequence[str]) -> dict[str, list[str]]:
        """:meth:`ids_of_source` of each of ``sources``; remote backends answer many sources
        per request (this default asks one by one)."""
        return {source: self.ids_of_source(source) for source in dict.fromkeys(sources)}

    def replace(self, remove: Sequence[str], add: Sequence[Passage]) -> AddResult:
        """Delete the passages ``remove`` (with their triples and graph edges) and add
        ``add`` (embedded; already stored ones are no-ops) as one commit where the backend
        has commits, so a reader sees either the old passages or the new, never both and
        never neither (sync by source). This default adds first, then deletes: a reader
        may see both for a moment, never neither."""
        result = self.add(add)
        if remove:
            self.remove(remove)
        return result

    def sources(self, under: str | None = None, *, relative: bool = False) -> list[str]:
        """Distinct stored sources, sorted; with ``under``, only ``under`` itself and the
        sources below the folder it names (``under/...``); with ``relative``, only those not
        starting with ``/`` (paths stored before sources were canonical, callers' own names).
        This default reads every passage; backends answer from an index."""
        found = {p.source for p in self.iterate()}
        if relative:
            found = {s for s in found if not s.startswith("/")}
        if under is not None:
            folder = under.rstrip("/")
            found = {s for s in found if s in (under, folder) or s.startswith(folder + "/")}
        return sorted(found)

    def sources_like(self, source: str) -> list[str]:
        """A few stored sources with the same file name as ``source`` (to suggest one when
        ``source`` matches nothing); backends that cannot list them cheaply give none."""
        return []

    def filter_ids(self, ids: Sequence[str], where: WhereSpec) -> list[str]:
        """The ``ids`` of stored passages that pass ``where``, in the order given (unknown ids
        are left out; with no filter, ``ids`` come back unchanged). Backends answer from
        their indexes; this default reads the passages.

        Example::

            kept = store.passages.filter_ids([p.id for p in expanded], ["source=reports/2024"])
        """
        from gear_agent.filters import parse_where

        parsed = parse_where(where)
        if parsed is None:
            return list(ids)
        passing = {p.id for p in self.get(list(dict.fromkeys(ids))) if parsed.matches(p)}
        return [i for i in ids if i in passing]

    @abstractmethod
    def mark_extracted(self, ids: Sequence[str]) -> None:
        """Record that triple extraction ran on these passages (even if it found none)."""

    @abstractmethod
    def unextracted(self) -> list[Passage]:
        """Passages on which triple extraction has not run yet."""

    def ids(self) -> list[str]:
        """Ids of every stored passage (backends answer without reading the texts)."""
        return [p.id for p in self.iterate()]


class Triples(Collection[Triple]):
    """The triples: every triple belongs to exactly one passage (adding one whose passage is
    not stored is refused), and they form an entity graph (:meth:`neighbours`)."""

    name: ClassVar[str] = "triple"

    @abstractmethod
    def of_passage(self, passage_id: str) -> list[str]:
        """Ids of the triples extracted from a passage, in extraction order."""

    def of_passages(self, passage_ids: Sequence[str]) -> list[list[str]]:
        """:meth:`of_passage` of each of ``passage_ids``, in order, in one call: graph
        expansion asks for all its base passages at once, which a remote backend answers in
        one request. This default asks :meth:`of_passage` for each.

        Example:
            >>> store.triples.of_passages(["p-1", "p-2"])  # doctest: +SKIP
            [['t-1', 't-2'], []]
        """
        return [self.of_passage(p) for p in passage_ids]

    @abstractmethod
    def neighbours(self, triple_id: str, query_vector: np.ndarray | None = None, limit: int = 100) -> list[str]:
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

    def batches(self, size: int = 65_536) -> Iterator[list[tuple[str, str, str, str]]]:
        """Every triple as ``(id, subject, object, passage id)``, ``size`` at a time (what a
        graph over the store reads; backends stream it without holding every triple)."""
        batch: list[tuple[str, str, str, str]] = []
        for t in self.iterate():
            batch.append((t.id, t.subject, t.object, t.passage_id))
            if len(batch) >= size:
                yield batch
                batch = []
        if batch:
            yield batch
