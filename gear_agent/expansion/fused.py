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


class FusedExpansionRetriever(Retriever):
    """RRF of a NaiveGE retriever's list and a PPR retriever's list.

    Example:
        >>> fused = FusedExpansionRetriever(naive_ge, ppr)  # doctest: +SKIP
        >>> fused.retrieve("Who founded ...?", k=15)  # doctest: +SKIP
    """

    def __init__(self, naive_ge: NaiveGERetriever, ppr: PPRRetriever, rrf_k: int = 60) -> None:
        self.naive_ge, self.ppr, self.rrf_k = naive_ge, ppr, rrf_k
        self.name = f"{naive_ge.name}+ppr"
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="gear-expand")

    def parts(
        self, query: str, k: int, where: Where | None = None
    ) -> tuple[list[RankedPassage], list[RankedPassage]]:
        """The two lists that are fused: NaiveGE's and PPR's, computed concurrently."""
        self.ppr.graph  # noqa: B018 - build/load the graph once, outside the worker threads
        beam = self._pool.submit(self.naive_ge.retrieve, query, k, where)
        ppr = self._pool.submit(self.ppr.retrieve, query, k, where)
        return beam.result(), ppr.result()

    def retrieve(self, query: str, k: int, where: Where | None = None) -> list[RankedPassage]:
        check_request(query, k)
        naive, ppr = self.parts(query, k, where)
        return fuse_passages([ppr, naive], k=k, rrf_k=self.rrf_k)
