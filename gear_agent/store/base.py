"""The one small interface every index backend implements.

Retrieval, expansion and the agent talk only to :class:`Store`, so a backend
(the embedded default in :mod:`gear_agent.store.embedded`, Elasticsearch in
:mod:`gear_agent.store.elasticsearch`) can be swapped without touching them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from gear_agent.errors import GearError
from gear_agent.types import AddResult, Collection, Hit, Passage, Triple

if TYPE_CHECKING:
    from gear_agent.store.nodes import NodeStore

WhereSpec = Any
"""A filter in any form :func:`gear_agent.filters.parse_where` reads (a ``Where``, a dict
in the Mongo style, a list of ``KEY OP VALUE`` strings), or None for no filter."""


class StoreError(GearError, RuntimeError):
    """A store cannot do what was asked; the message says why and what to do."""


class ModelMismatchError(StoreError):
    """The index was built with another embedding model than the one configured."""


class Store(ABC):
    """Passages and triples, with BM25 and vector search over each and an entity graph.

    Every triple belongs to exactly one passage; deleting a passage deletes its
    triples and their graph edges. Ids are content hashes, so adding something
    already stored is a no-op. Vectors are L2-normalised float32 rows.
    """

    #: Name of the embedding model the index was built with.
    embedding_model: str
    #: Dimension of its vectors.
    dimension: int

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
        """Delete every passage ingested from ``source``; returns the ids deleted."""

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

    @abstractmethod
    def neighbours(
        self, triple_id: str, query_vector: np.ndarray | None = None, limit: int = 100
    ) -> list[str]:
        """Triples sharing the head or tail entity of ``triple_id`` (itself excluded).

        Entities match after lower-casing and collapsing whitespace. With a
        ``query_vector`` the ``limit`` most similar to it come back, best first;
        without, the first ``limit`` in a stable order.
        """

    @abstractmethod
    def unextracted_passages(self) -> list[Passage]:
        """Passages on which triple extraction has not run yet."""

    @abstractmethod
    def iter_passages(self) -> Iterator[Passage]:
        """Every stored passage."""

    @abstractmethod
    def iter_triples(self) -> Iterator[Triple]:
        """Every stored triple."""

    def node_store(self) -> NodeStore:
        """The SiReRAG node collection of this index (:mod:`gear_agent.store.nodes`).

        Raises:
            NodesNotSupportedError: this backend keeps no SiReRAG nodes.
        """
        from gear_agent.store.nodes import NodesNotSupportedError

        raise NodesNotSupportedError(
            f"the {type(self).__name__} backend does not store SiReRAG nodes; build SiReRAG "
            "indexes in the embedded backend (GEAR_BACKEND=embedded)"
        )

    @property
    def derived_dir(self) -> Path | None:
        """The local folder where caches derived from this store live (the PPR graph),
        or None where none are kept."""
        return None

    def maintain(self) -> None:  # noqa: B027 - optional hook
        """Bring derived caches up to date (the embedded store's ANN); called at the end of
        an indexing run. A no-op where there is nothing to do."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources (connections, locks)."""

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
