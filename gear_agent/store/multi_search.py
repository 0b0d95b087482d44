"""Several searches of one question asked together: a hybrid ranking's BM25 and kNN, PPR's
four kNN searches (seed triples, passages, and the lowest similarity of each).

:func:`search_all` runs a list of :class:`Search` against any store. A store that can answer
them in one round trip offers ``search_many(searches)`` (Elasticsearch: one ``_msearch``);
every other store answers them one by one through its own methods, so results are the same
either way: each search is the request the collection's ``bm25_search``, ``vector_search`` or
``lowest_similarity`` would send.

Example:
    >>> from gear_agent.store.multi_search import Search
    >>> Search.lowest("passage", [1.0, 0.0]).kind
    'lowest'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from gear_agent.types import Collection, Hit

__all__ = ["Search", "answer_one", "search_all"]

SearchKind = Literal["bm25", "vector", "lowest"]


@dataclass(frozen=True)
class Search:
    """One search of a question.

    Attributes:
        collection: ``passage`` or ``triple``.
        kind: ``bm25`` (of ``query``), ``vector`` (the top ``k`` by cosine with ``vector``) or
            ``lowest`` (one hit whose score is the collection's ``lowest_similarity``; none when the
            collection is empty).
        query: The text of a ``bm25`` search.
        vector: The normalised query vector of a ``vector`` or ``lowest`` search.
        k: Hits wanted.
        where: A filter, as the store's search methods take it.
    """

    collection: Collection
    kind: SearchKind
    query: str = ""
    vector: Any = None
    k: int = 1
    where: Any = None

    @classmethod
    def bm25(cls, collection: Collection, query: str, k: int, where: Any = None) -> Search:
        return cls(collection, "bm25", query=query, k=k, where=where)

    @classmethod
    def dense(cls, collection: Collection, vector: Any, k: int, where: Any = None) -> Search:
        return cls(collection, "vector", vector=vector, k=k, where=where)

    @classmethod
    def lowest(cls, collection: Collection, vector: Any) -> Search:
        return cls(collection, "lowest", vector=vector)


def answer_one(store: Any, search: Search) -> list[Hit]:
    """``search`` through the store's own method for it."""
    collection = store.collection(search.collection)
    if search.kind == "bm25":
        return collection.bm25_search(search.query, search.k, where=search.where)
    if search.kind == "vector":
        return collection.vector_search(search.vector, search.k, where=search.where)
    low = collection.lowest_similarity(np.asarray(search.vector))
    return [] if low is None else [Hit("", float(low))]


def search_all(store: Any, searches: Sequence[Search]) -> list[list[Hit]]:
    """The hits of each search, in order: in one request where the store offers
    ``search_many``, else one by one."""
    many = getattr(store, "search_many", None)
    if many is not None:
        return many(searches)
    return [answer_one(store, s) for s in searches]
