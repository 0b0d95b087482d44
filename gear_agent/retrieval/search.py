"""Base retrievers over a store: BM25, dense, and hybrid (RRF of the two), for either collection."""

from __future__ import annotations

from gear_agent._deprecated import NEXT_REMOVAL, moved_names
from gear_agent.embedding.base import QueryEncoder
from gear_agent.filters import Where
from gear_agent.retrieval.base import RankedPassage, Retriever, check_request
from gear_agent.retrieval.fusion import rrf, rrf_constant
from gear_agent.store.base import Store
from gear_agent.store.multi_search import Search, search_all
from gear_agent.types import BASE_MODES, Collection, Hit


def search(
    store: Store,
    encode: QueryEncoder,
    collection: Collection,
    query: str,
    k: int,
    mode: str = "hybrid",
    rrf_k: int | None = None,
    where: Where | None = None,
) -> list[Hit]:
    """Top ``k`` ids of a collection by BM25, by cosine, or by RRF of both (each asked for ``k``;
    ``rrf_k``: the setting's default when None); with ``where``, among the passages that pass it (for triples: triples of such passages).

    Raises:
        ValueError: ``mode`` is not one of ``bm25``, ``dense``, ``hybrid``.
    """
    if mode == "bm25":
        return store.collection(collection).bm25_search(query, k, where=where)
    if mode == "dense":
        return store.collection(collection).vector_search(encode(query), k, where=where)
    if mode == "hybrid":
        lexical, dense = search_all(store, [Search.bm25(collection, query, k, where),  # one request
                                            Search.dense(collection, encode(query), k, where)])
        fused = rrf([[h.id for h in lexical], [h.id for h in dense]], k=rrf_k)
        return [Hit(i, s) for i, s in fused[:k]]
    raise ValueError(f"unknown retrieval mode {mode!r}; choose one of {', '.join(BASE_MODES)}")


class SearchRetriever(Retriever):
    """Passages by BM25, dense or hybrid search (``retriever.mode``): the ``bm25``, ``dense``
    and ``hybrid`` rows of the retriever table. Formerly ``BaseRetriever``, which
    collided with LangChain's ``BaseRetriever``; that name still imports, with a warning.

    Example:
        >>> retriever = SearchRetriever(store, QueryEncoder(embedder), "hybrid")  # doctest: +SKIP
        >>> [p.id for p in retriever.retrieve("Who founded Rome?", k=5)]  # doctest: +SKIP
    """

    def __init__(self, store: Store, encode: QueryEncoder, mode: str = "hybrid", rrf_k: int | None = None):
        if mode not in BASE_MODES:
            raise ValueError(f"unknown retrieval mode {mode!r}; choose one of {', '.join(BASE_MODES)}")
        self.store, self.encode, self.mode, self.rrf_k = store, encode, mode, rrf_constant(rrf_k)
        self.name = mode

    def retrieve(self, query: str, k: int, where: Where | None = None) -> list[RankedPassage]:
        check_request(query, k)
        with self.store.snapshot():  # BM25 and dense read the same commit
            hits = search(self.store, self.encode, "passage", query, k, self.mode, self.rrf_k, where)
        return [RankedPassage(h.id, h.score) for h in hits]


__all__ = ["QueryEncoder", "SearchRetriever", "search"]

__getattr__ = moved_names(__name__, {"BaseRetriever": (__name__, "SearchRetriever")},
                          "the old name collided with LangChain's BaseRetriever",
                          removed_in=NEXT_REMOVAL)
