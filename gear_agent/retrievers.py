"""Every retriever by name, in one table: how it is built, whether it needs an LLM, what it is.

``gear search --retriever``, ``gear eval --retrievers``, ``gear retrievers``,
:meth:`gear_agent.Gear.retrieve` and the server all read :data:`RETRIEVERS`. A name always
means the same algorithm, whatever the environment: ``syncge`` and ``gear`` expand by
the paper's diverse triple beam search; ``-ppr`` names expand by Personalized PageRank
instead, ``-fused`` names by both (RRF). Nothing registers names elsewhere.

Example:
    >>> RETRIEVERS["hybrid+naive_ge"].needs_llm
    False
    >>> [name for name, spec in RETRIEVERS.items() if spec.needs_llm][:3]
    ['hipporag+ner', 'ppr+filter', 'syncge']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from gear_agent.errors import UnknownNameError

if TYPE_CHECKING:  # the table itself imports nothing heavy: `gear --help` lists its names
    from gear_agent.llm.client import LLMClient
    from gear_agent.retrieval.base import Retriever
    from gear_agent.runtime import Runtime

BASE_MODES = ("bm25", "dense", "hybrid")
"""The base retrievers' modes (:data:`gear_agent.retrieval.search.BASE_MODES`)."""

ScoreKind = Literal["bm25", "cosine", "rrf", "ppr"]
"""What a retriever's scores are: a BM25 score, a cosine similarity, a Reciprocal Rank
Fusion score (sum of ``1 / (rrf_k + rank)`` over the fused lists) or a PPR probability."""

Builder = Callable[["Runtime", "LLMClient | None"], "Retriever"]
"""Builds a retriever over a runtime; LLM retrievers use the client given (or one from the
runtime's settings when None)."""

DEFAULT_RETRIEVER = "hybrid+naive_ge"
"""The retriever ``gear search`` and :meth:`gear_agent.Gear.retrieve` use by default."""


@dataclass(frozen=True)
class RetrieverSpec:
    """One row of the table.

    Attributes:
        name: The retriever's name.
        description: One line for ``gear retrievers``.
        needs_llm: It calls a chat model (checked before any work starts).
        needs_triples: It walks extracted triples (a text-only index gives the base list).
        build: How it is built.
        score: The kind of score its ranked list carries (:data:`ScoreKind`).
    """

    name: str
    description: str
    needs_llm: bool
    needs_triples: bool
    build: Builder
    score: ScoreKind = "rrf"


def _client(runtime: Runtime, llm: LLMClient | None) -> LLMClient:
    from gear_agent.llm.client import LLMClient
    from gear_agent.llm.settings import LLMSettings

    return llm if llm is not None else LLMClient.from_settings(LLMSettings.from_gear(runtime.settings))


def _base(mode: str) -> Builder:
    def build(runtime: Runtime, llm: LLMClient | None) -> Retriever:
        from gear_agent.retrieval.search import BaseRetriever

        return BaseRetriever(runtime.store, runtime.encode, mode, runtime.settings.rrf_k)

    return build


def _naive_ge(mode: str) -> Builder:
    def build(runtime: Runtime, llm: LLMClient | None) -> Retriever:
        from gear_agent.expansion.beam import TripleBeamSearch
        from gear_agent.expansion.naive_ge import NaiveGERetriever
        from gear_agent.retrieval.search import BaseRetriever

        s = runtime.settings
        base = BaseRetriever(runtime.store, runtime.encode, mode, s.rrf_k)
        beam = TripleBeamSearch(
            runtime.store, runtime.sequence_encoder(), runtime.beam_settings(with_llm=False)
        )
        return NaiveGERetriever(base, beam, runtime.encode, s.base_k, s.rrf_k)

    return build


def _ppr(runtime: Runtime, llm: LLMClient | None) -> Retriever:
    return runtime.ppr_retriever()


def _hipporag(runtime: Runtime, llm: LLMClient | None) -> Retriever:
    from gear_agent.expansion.hipporag import HippoRAGRetriever

    return HippoRAGRetriever(runtime.ppr_retriever())


def _hipporag_ner(runtime: Runtime, llm: LLMClient | None) -> Retriever:
    from gear_agent.expansion.hipporag_ner import HippoRAGNERRetriever, make_query_ner

    settings = runtime.settings
    ner = make_query_ner(_client(runtime, llm), prompts_dir=settings.prompts_dir,
                         deadline_s=settings.deadline_s or None)
    return HippoRAGNERRetriever(runtime.ppr_retriever(), ner)


def _ppr_filter(runtime: Runtime, llm: LLMClient | None) -> Retriever:
    from gear_agent.expansion.ppr import PPRRetriever
    from gear_agent.expansion.ppr_filter import make_llm_filter

    settings = runtime.settings
    llm_filter = make_llm_filter(_client(runtime, llm), prompts_dir=settings.prompts_dir)
    graph = runtime.ppr_retriever().graph
    ppr_settings = runtime.ppr_retriever().settings
    filtered = PPRRetriever(runtime.store, runtime.encode, ppr_settings, llm_filter, graph=graph)
    filtered.name = "ppr+filter"
    return filtered


def _fused(runtime: Runtime, llm: LLMClient | None) -> Retriever:
    from gear_agent.expansion.fused import FusedExpansionRetriever

    naive = _naive_ge("hybrid")(runtime, llm)
    return FusedExpansionRetriever(naive, runtime.ppr_retriever(), runtime.settings.rrf_k)  # type: ignore[arg-type]


def _syncge(expansion: str, name: str) -> Builder:
    def build(runtime: Runtime, llm: LLMClient | None) -> Retriever:
        from gear_agent.agent.syncge import SyncGERetriever

        return SyncGERetriever(runtime, _client(runtime, llm), expansion, name)  # type: ignore[arg-type]

    return build


def _gear(expansion: str, name: str) -> Builder:
    def build(runtime: Runtime, llm: LLMClient | None) -> Retriever:
        from gear_agent.agent.gear_retriever import GearRetriever

        return GearRetriever(runtime, _client(runtime, llm), expansion, name)  # type: ignore[arg-type]

    return build


def _sirerag(runtime: Runtime, llm: LLMClient | None) -> Retriever:
    from gear_agent.sirerag.retriever import SiReRAGRetriever

    return SiReRAGRetriever(runtime.store, runtime.encode)


def _gear_sirerag(runtime: Runtime, llm: LLMClient | None) -> Retriever:
    from gear_agent.agent.gear_retriever import GearRetriever
    from gear_agent.sirerag.retriever import SiReRAGRetriever

    base = SiReRAGRetriever(runtime.store, runtime.encode)
    return GearRetriever(runtime, _client(runtime, llm), "ppr", "gear-sirerag", base=base)


_DESCRIBED = {
    "bm25": "BM25 over passages (Lucene formula)",
    "dense": "cosine similarity of passage embeddings",
    "hybrid": "RRF of bm25 and dense",
}
_SCORED: dict[str, ScoreKind] = {"bm25": "bm25", "dense": "cosine", "hybrid": "rrf"}

_SPECS: list[RetrieverSpec] = [
    *(RetrieverSpec(m, _DESCRIBED[m], False, False, _base(m), _SCORED[m]) for m in BASE_MODES),
    *(
        RetrieverSpec(
            f"{m}+naive_ge",
            f"NaiveGE: {m}, then diverse triple beam search from its passages' triples (no LLM)",
            False, True, _naive_ge(m),
        )
        for m in BASE_MODES
    ),
    RetrieverSpec(
        "ppr", "HippoRAG 2 Personalized PageRank seeded by the query's nearest triples (no LLM)",
        False, True, _ppr, "ppr",
    ),
    RetrieverSpec(
        "hipporag", "HippoRAG 1 PPR over the phrase graph from the query's nearest phrases, "
        "node specificity (no LLM)", False, True, _hipporag, "ppr",
    ),
    RetrieverSpec(
        "hipporag+ner", "HippoRAG 1 as the paper: the query's LLM-named entities linked to "
        "their nearest phrases are the seeds, then as hipporag", True, True, _hipporag_ner, "ppr",
    ),
    RetrieverSpec(
        "ppr+filter", "ppr with HippoRAG 2's LLM recognition-memory filter on the seed triples",
        True, True, _ppr_filter, "ppr",
    ),
    RetrieverSpec(
        "hybrid+naive_ge+ppr", "RRF of hybrid+naive_ge and ppr (no LLM)", False, True, _fused,
    ),
    RetrieverSpec(
        "sirerag", "SiReRAG: dense ranking over passages + tree nodes (`gear sirerag build`), "
        "a node counting as its passages (no LLM at query time)",
        False, False, _sirerag, "cosine",
    ),
    RetrieverSpec(
        "syncge", "SyncGE: reader triples linked to the index, beam search (the paper), RRF",
        True, True, _syncge("beam", "syncge"),
    ),
    RetrieverSpec(
        "syncge-ppr", "SyncGE expanding by PPR from the linked triples instead of beam search",
        True, True, _syncge("ppr", "syncge-ppr"),
    ),
    RetrieverSpec(
        "syncge-fused", "SyncGE expanding by beam search and PPR, fused by RRF",
        True, True, _syncge("both", "syncge-fused"),
    ),
    RetrieverSpec(
        "gear", "the GEAR agent: read, link, beam search, reason, rewrite; passageLink, RRF",
        True, True, _gear("beam", "gear"),
    ),
    RetrieverSpec(
        "gear-ppr", "the GEAR agent expanding by PPR (the agent's default expansion)",
        True, True, _gear("ppr", "gear-ppr"),
    ),
    RetrieverSpec(
        "gear-fused", "the GEAR agent expanding by beam search and PPR, fused by RRF",
        True, True, _gear("both", "gear-fused"),
    ),
    RetrieverSpec(
        "gear-sirerag", "the GEAR agent (PPR expansion) with SiReRAG's pool as its base retriever",
        True, True, _gear_sirerag,
    ),
]

RETRIEVERS: dict[str, RetrieverSpec] = {spec.name: spec for spec in _SPECS}
"""Every retriever, by name, in the order ``gear retrievers`` lists them."""


def check_name(name: str) -> RetrieverSpec:
    """The row of ``name``; :class:`UnknownNameError` listing every name when there is none.

    Example:
        >>> check_name("hybrid").needs_llm
        False
    """
    spec = RETRIEVERS.get(name)
    if spec is None:
        raise UnknownNameError(f"unknown retriever {name!r}; known: {', '.join(RETRIEVERS)}")
    return spec


def make_retriever(name: str, runtime: Runtime, llm: LLMClient | None = None) -> Retriever:
    """Build the retriever called ``name`` over the runtime's index.

    Args:
        name: A name of :data:`RETRIEVERS`.
        runtime: The opened index.
        llm: The chat client for LLM retrievers; built from the runtime's settings when
            None (which fails at once, in one line, when no model is configured).

    Raises:
        UnknownNameError: The name is unknown; the message lists the known ones.
    """
    return check_name(name).build(runtime, llm)
