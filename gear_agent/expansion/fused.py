"""Both expansions at once: beam search (NaiveGE) and PPR, merged by RRF (issue: fused expansion).

``hybrid+naive_ge+ppr`` is RRF(PPR's passage list, hybrid+NaiveGE's list). The two
expansions run concurrently in two threads (both spend their time in NumPy/SciPy, which
release the GIL).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from gear_agent.expansion.naive_ge import NaiveGERetriever
from gear_agent.expansion.ppr import PPRRetriever
from gear_agent.filters import Where
from gear_agent.retrieval.base import RankedPassage, Retriever, check_request, fuse_passages
from gear_agent.retrieval.fusion import rrf_constant


class FusedExpansionRetriever(Retriever):
    """RRF of a NaiveGE retriever's list and a PPR retriever's list.

    Example:
        >>> fused = FusedExpansionRetriever(naive_ge, ppr)  # doctest: +SKIP
        >>> fused.retrieve("Who founded ...?", k=15)  # doctest: +SKIP
    """

    def __init__(self, naive_ge: NaiveGERetriever, ppr: PPRRetriever, rrf_k: int | None = None) -> None:
        self.naive_ge, self.ppr, self.rrf_k = naive_ge, ppr, rrf_constant(rrf_k)
        self.name = f"{naive_ge.name}+ppr"
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="gear-expand")

    def parts(
        self, query: str, k: int, where: Where | None = None
    ) -> tuple[list[RankedPassage], list[RankedPassage]]:
        """The two lists that are fused: NaiveGE's and PPR's, computed concurrently, both of
        one commit (each worker pins its own; when a commit landed between the two pins, they
        are computed again, in the end one after the other in one snapshot)."""
        self.ppr.graph  # noqa: B018 - build/load the graph once, outside the worker threads
        store = self.ppr.store

        def at_one_commit(retrieve):  # noqa: ANN001, ANN202
            with store.snapshot():
                return store.generation(), retrieve(query, k, where)

        for _ in range(2):
            beam = self._pool.submit(at_one_commit, self.naive_ge.retrieve)
            ppr = self._pool.submit(at_one_commit, self.ppr.retrieve)
            (g_beam, naive), (g_ppr, walked) = beam.result(), ppr.result()
            if g_beam == g_ppr:
                return naive, walked
        with store.snapshot():
            return self.naive_ge.retrieve(query, k, where), self.ppr.retrieve(query, k, where)

    def retrieve(self, query: str, k: int, where: Where | None = None) -> list[RankedPassage]:
        check_request(query, k)
        naive, ppr = self.parts(query, k, where)
        return fuse_passages([ppr, naive], k=k, rrf_k=self.rrf_k)
