"""NaiveGE: graph expansion without an LLM (GEAR, section 4.2).

The base retriever's passages give the start triples (all their triples); the
diverse triple beam search grows them; its passages are fused with the base
list by RRF. Every returned passage carries the triple chain that reached it.
"""

from __future__ import annotations

from gear_agent.config import RetrievalSettings
from gear_agent.embedding.base import QueryEncoder
from gear_agent.expansion.beam import TripleBeamSearch, beams_to_passages
from gear_agent.filters import Where
from gear_agent.retrieval.base import RankedPassage, Retriever, check_request, fuse_passages
from gear_agent.retrieval.filtering import keep_passing
from gear_agent.retrieval.fusion import rrf_constant


class NaiveGERetriever(Retriever):
    """``{base}+naive_ge``: base retrieval, beam search from the base passages' triples, RRF.

    ``base_k`` and ``rrf_k`` are the settings' defaults when None.

    Example:
        >>> naive = NaiveGERetriever(SearchRetriever(store, encode, "hybrid"), beam, encode)  # doctest: +SKIP
        >>> naive.retrieve("Who is the spouse of the Green performer?", k=15)  # doctest: +SKIP
    """

    def __init__(
        self, base: Retriever, beam: TripleBeamSearch, encode: QueryEncoder,
        base_k: int | None = None, rrf_k: int | None = None,
    ) -> None:
        self.base, self.beam, self.encode = base, beam, encode
        self.base_k = RetrievalSettings.default_of("base_k") if base_k is None else base_k
        self.rrf_k = rrf_constant(rrf_k)
        self.name = f"{base.name}+naive_ge"

    def expand(self, query: str, base_list: list[RankedPassage]) -> list[RankedPassage]:
        """The beam search's passage list, started from every triple of ``base_list``."""
        store = self.beam.store
        start = [tid for ids in store.triples.of_passages([p.id for p in base_list]) for tid in ids]
        beams = self.beam.run(self.encode(query), start)
        return beams_to_passages(store, beams)

    def retrieve(self, query: str, k: int, where: Where | None = None) -> list[RankedPassage]:
        check_request(query, k)
        with self.beam.store.snapshot():  # the base list and the walk read one commit
            base_list = self.base.retrieve(query, self.base_k, where)
            expanded = keep_passing(self.beam.store, self.expand(query, base_list), where)
        return fuse_passages([base_list, expanded], k=k, rrf_k=self.rrf_k)
