"""The ``sirerag`` retriever: dense ranking over one pool of passages and SiReRAG nodes.

As in the paper, the pool (passages, proposition aggregates, and both trees' summaries) is
ranked by cosine similarity with the query. Recall is over passages, so every node counts
as the passages under it: walking the pool best first, a passage counts as itself and a
node as its passages, taken in the order of the query's dense passage ranking (passages
outside that ranking after them, in provenance order), each passage once.

The pool is brought up to date with the store on each query (:mod:`gear_agent.sirerag.freshness`,
in memory: the retriever never writes): a passage added since the last build counts under
the nodes it was placed in, a deleted one under none.
"""

from __future__ import annotations

from dataclasses import dataclass

from gear_agent.embedding.base import QueryEncoder
from gear_agent.filters import Where
from gear_agent.retrieval.base import RankedPassage, Retriever, check_request
from gear_agent.sirerag.freshness import SiReRAGPool
from gear_agent.store.backends import node_store_of
from gear_agent.store.base import Store

POOL_DEPTH = 100
"""Passages and nodes each taken from the top of their ranking before they are merged."""


@dataclass(frozen=True)
class PoolItem:
    """One entry of the ranked pool: a passage or a node, its cosine, and its passages."""

    id: str
    score: float
    passages: tuple[str, ...]
    is_node: bool


class SiReRAGRetriever(Retriever):
    """Passages from the SiReRAG pool, best first.

    An index with no nodes gives the dense passage ranking (``gear sirerag build`` adds
    the nodes).

    Args:
        store: The index; its backend must keep nodes (the embedded one does).
        encode: The query encoder.
        name: The name shown in tables.
        depth: :data:`POOL_DEPTH`.

    Example:
        >>> retriever = SiReRAGRetriever(index.store, index.encode)  # doctest: +SKIP
        >>> [p.id for p in retriever.retrieve("Who founded the Kestrel Observatory?", 5)]  # doctest: +SKIP
    """

    def __init__(self, store: Store, encode: QueryEncoder, name: str = "sirerag", depth: int = POOL_DEPTH):
        self.store, self.encode, self.name, self.depth = store, encode, name, depth
        self.nodes = node_store_of(store)
        self.freshness = SiReRAGPool(store, persist=False)

    def pool(self, query: str, k: int, where: Where | None = None) -> list[PoolItem]:
        """The merged pool for ``query`` with each node's passages in query order (only
        passages that pass ``where``; a node with none left is left out), the pool brought
        up to date with the store first."""
        self.freshness.update(self.store)
        vector = self.encode(query)
        depth = max(self.depth, k)
        passages = self.store.passages.vector_search(vector, depth, where=where)
        nodes = self.nodes.search(vector, depth)
        rank = {h.id: i for i, h in enumerate(passages)}
        provenance = self.nodes.passages_of([h.id for h in nodes])
        for node, placed in self.freshness.placed_under([h.id for h in nodes]).items():
            under = provenance.setdefault(node, [])
            under.extend(p for p in placed if p not in under)
        if where is not None:
            under_all = list(dict.fromkeys(p for ps in provenance.values() for p in ps))
            passing = set(self.store.passages.filter_ids(under_all, where))
            provenance = {n: [p for p in ps if p in passing] for n, ps in provenance.items()}
        items = [PoolItem(h.id, h.score, (h.id,), False) for h in passages]
        for hit in nodes:
            under = provenance.get(hit.id, [])
            order = sorted(range(len(under)), key=lambda i: (rank.get(under[i], depth), i))
            if under:
                items.append(PoolItem(hit.id, hit.score, tuple(under[i] for i in order), True))
        items.sort(key=lambda item: -item.score)  # stable: passages before nodes on ties
        return items

    def retrieve(self, query: str, k: int, where: Where | None = None) -> list[RankedPassage]:
        check_request(query, k)
        ranked: dict[str, RankedPassage] = {}
        with self.store.snapshot():
            pool = self.pool(query, k, where)
        for item in pool:
            for pid in item.passages:
                if pid not in ranked:
                    ranked[pid] = RankedPassage(pid, item.score)
                    if len(ranked) == k:
                        return list(ranked.values())
        return list(ranked.values())
