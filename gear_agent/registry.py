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

from typing import TYPE_CHECKING

from gear_agent.errors import UnknownNameError
from gear_agent.parts import (
    BASE_MODES,
    LLM_FREE,
    Builder,
    IndexParts,
    RetrieverSpec,
    ScoreKind,
    index_parts,
)

if TYPE_CHECKING:  # the table itself imports nothing heavy: `gear --help` lists its names
    from gear_agent.llm.client import LLMClient
    from gear_agent.open_index import OpenIndex
    from gear_agent.retrieval.base import Retriever

__all__ = [
    "BASE_MODES", "DEFAULT_RETRIEVER", "DEFAULT_WHY", "LLM_FREE", "RETRIEVERS", "Builder", "RetrieverSpec",
    "ScoreKind", "check_name", "make_retriever",
]

DEFAULT_RETRIEVER = "ppr"
"""The retriever ``gear search``, :meth:`gear_agent.Gear.retrieve`, ``Gear.as_retriever``
and the server use by default: the best LLM-free row measured on both dev sets
(docs/quality.md), at interactive cost."""

DEFAULT_WHY = (
    "the best LLM-free row on both dev sets (R@5 / R@15: MuSiQue 74.7 / 91.2 against "
    "hybrid+naive_ge's 63.6 / 79.6, HotpotQA 90 / 99 against 79 / 96; "
    "p50 20-27 ms at 150k passages); docs/quality.md"
)
"""Why :data:`DEFAULT_RETRIEVER` is the default, with its figures (``gear retrievers``)."""


def _client(parts: IndexParts, llm: LLMClient | None) -> LLMClient:
    from gear_agent.llm.client import LLMClient

    return llm if llm is not None else LLMClient.from_settings(parts.settings)


def _hipporag_ner(parts: IndexParts, llm: LLMClient | None) -> Retriever:
    from gear_agent.expansion.hipporag_ner import HippoRAGNERRetriever, make_query_ner

    settings = parts.settings
    ner = make_query_ner(_client(parts, llm), prompts_dir=settings.prompts_dir,
                         deadline_s=settings.deadline_s or None)
    return HippoRAGNERRetriever(parts.ppr(), ner)


def _ppr_filter(parts: IndexParts, llm: LLMClient | None) -> Retriever:
    from gear_agent.expansion.ppr import PPRRetriever
    from gear_agent.expansion.ppr_filter import make_llm_filter

    llm_filter = make_llm_filter(_client(parts, llm), prompts_dir=parts.settings.prompts_dir)
    ppr = parts.ppr()
    filtered = PPRRetriever(parts.store, parts.encode, ppr.settings, llm_filter, graph=ppr.graph)
    filtered.name = "ppr+filter"
    return filtered


def _loop(kind: str, expansion: str, name: str) -> Builder:
    """The builder of a SyncGE (``kind="syncge"``) or GEAR agent (``"gear"``) retriever."""

    def build(parts: IndexParts, llm: LLMClient | None) -> Retriever:
        from gear_agent.agent.gear_retriever import GearRetriever
        from gear_agent.agent.syncge import SyncGERetriever

        loop = SyncGERetriever if kind == "syncge" else GearRetriever
        return loop(parts, _client(parts, llm), expansion, name,  # type: ignore[arg-type]
                    settings=parts.settings)

    return build


def _gear_sirerag(parts: IndexParts, llm: LLMClient | None) -> Retriever:
    from gear_agent.agent.gear_retriever import GearRetriever
    from gear_agent.sirerag.retriever import SiReRAGRetriever

    base = SiReRAGRetriever(parts.store, parts.encode)
    return GearRetriever(parts, _client(parts, llm), "ppr", "gear-sirerag",
                         base=base, settings=parts.settings)


_SPECS: list[RetrieverSpec] = [
    *LLM_FREE.values(),
    RetrieverSpec(
        "hipporag+ner", "HippoRAG 1 as the paper: the query's LLM-named entities linked to "
        "their nearest phrases are the seeds, then as hipporag", True, True, _hipporag_ner, "ppr",
    ),
    RetrieverSpec(
        "ppr+filter", "ppr with HippoRAG 2's LLM recognition-memory filter on the seed triples",
        True, True, _ppr_filter, "ppr",
    ),
    *(RetrieverSpec(name, description, True, True, _loop(name.split("-")[0], expansion, name))
      for name, expansion, description in [
          ("syncge", "beam", "SyncGE: reader triples linked to the index, beam search (the paper), RRF"),
          ("syncge-ppr", "ppr", "SyncGE expanding by PPR from the linked triples instead of beam search"),
          ("syncge-fused", "both", "SyncGE expanding by beam search and PPR, fused by RRF"),
          ("gear", "beam", "the GEAR agent: read, link, beam search, reason, rewrite; passageLink, RRF"),
          ("gear-ppr", "ppr", "the GEAR agent expanding by PPR (the agent's default expansion)"),
          ("gear-fused", "both", "the GEAR agent expanding by beam search and PPR, fused by RRF"),
      ]),
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


def make_retriever(name: str, index: IndexParts | OpenIndex, llm: LLMClient | None = None) -> Retriever:
    """Build the retriever called ``name`` over an index's parts.

    Args:
        name: A name of :data:`RETRIEVERS`.
        index: The index's parts (:func:`~gear_agent.parts.index_parts`): retrievers built
            over the same parts share what is costly to make (the PPR graph). An opened
            index gets parts of its own.
        llm: The chat client for LLM retrievers; built from the index's settings when
            None (which fails at once, in one line, when no model is configured).

    Raises:
        UnknownNameError: The name is unknown; the message lists the known ones.
    """
    spec = check_name(name)
    return spec.build(index if isinstance(index, IndexParts) else index_parts(index), llm)
