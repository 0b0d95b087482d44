"""The parts of an opened index, assembled in one place below the layers that use them:
the retrievers that need no LLM, by name, and the :class:`IndexParts` every retriever and
the agent's steps are built from.

:data:`gear_agent.registry.RETRIEVERS` is the one table of every retriever; its LLM-free
rows live here, below the agent, because the agent takes any of them as its base retriever
(``GEAR_BASE_RETRIEVER``). :func:`index_parts` is the one place that reads the parts off an
opened index (:class:`~gear_agent.open_index.OpenIndex`), in one pass: the parts that are
costly to make (the PPR graph, the sequence encoder, the base retriever) are made on first
use and kept by the :class:`IndexParts`, so a composition root (``Gear``, ``gear serve``,
the CLI) assembles the parts once and hands the same ones to every retriever and the agent.
A component takes these parts and its settings section, never the ``OpenIndex`` itself.

Example:
    >>> list(LLM_FREE)[:3]
    ['bm25', 'dense', 'hybrid']
    >>> LLM_FREE["ppr"].score
    'ppr'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Literal

from gear_agent._deprecated import NEXT_REMOVAL, warn_deprecated
from gear_agent.config import AgentSettings, GearSettings
from gear_agent.embedding import make_sequence_encoder
from gear_agent.errors import UnknownNameError
from gear_agent.open_index import OpenIndex
from gear_agent.types import BASE_MODES

if TYPE_CHECKING:  # the table itself imports nothing heavy: `gear --help` lists its names
    from gear_agent.embedding import Embedder
    from gear_agent.embedding.base import QueryEncoder
    from gear_agent.expansion.ppr import PPRRetriever
    from gear_agent.llm.client import LLMClient
    from gear_agent.retrieval.base import Retriever
    from gear_agent.store import Store

ScoreKind = Literal["bm25", "cosine", "rrf", "ppr"]
"""What a retriever's scores are: a BM25 score, a cosine similarity, a Reciprocal Rank
Fusion score (sum of ``1 / (rrf_k + rank)`` over the fused lists) or a PPR probability."""

Builder = Callable[["IndexParts", "LLMClient | None"], "Retriever"]
"""Builds a retriever over an index's parts; LLM retrievers use the client given (or one
from the parts' settings when None)."""


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


def _base(mode: str) -> Builder:
    def build(parts: IndexParts, llm: LLMClient | None) -> Retriever:
        from gear_agent.retrieval.search import SearchRetriever

        return SearchRetriever(parts.store, parts.encode, mode, parts.settings.rrf_k)

    return build


def naive_ge(mode: str) -> Builder:
    """The builder of ``{mode}+naive_ge``."""

    def build(parts: IndexParts, llm: LLMClient | None) -> Retriever:
        from gear_agent.expansion.beam import TripleBeamSearch
        from gear_agent.expansion.naive_ge import NaiveGERetriever
        from gear_agent.retrieval.search import SearchRetriever

        s = parts.settings
        base = SearchRetriever(parts.store, parts.encode, mode, s.rrf_k)
        beam = TripleBeamSearch(parts.store, parts.sequence_encoder(), s, llm_in_loop=False)
        return NaiveGERetriever(base, beam, parts.encode, s.base_k, s.rrf_k)

    return build


def _ppr(parts: IndexParts, llm: LLMClient | None) -> Retriever:
    return parts.ppr()


def _hipporag(parts: IndexParts, llm: LLMClient | None) -> Retriever:
    from gear_agent.expansion.hipporag import HippoRAGRetriever

    return HippoRAGRetriever(parts.ppr())


def _fused(parts: IndexParts, llm: LLMClient | None) -> Retriever:
    from gear_agent.expansion.fused import FusedExpansionRetriever

    naive = naive_ge("hybrid")(parts, llm)
    return FusedExpansionRetriever(naive, parts.ppr(), parts.settings.rrf_k)  # type: ignore[arg-type]


def _sirerag(parts: IndexParts, llm: LLMClient | None) -> Retriever:
    from gear_agent.sirerag.retriever import SiReRAGRetriever

    return SiReRAGRetriever(parts.store, parts.encode)


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
            False, True, naive_ge(m),
        )
        for m in BASE_MODES
    ),
    RetrieverSpec(
        "ppr", "HippoRAG 2 Personalized PageRank seeded by the query's nearest triples and the "
        "names it spells out, with title edges (no LLM)",
        False, True, _ppr, "ppr",
    ),
    RetrieverSpec(
        "hipporag", "HippoRAG 1 PPR over the phrase graph from the query's nearest phrases, "
        "node specificity (no LLM)", False, True, _hipporag, "ppr",
    ),
    RetrieverSpec(
        "hybrid+naive_ge+ppr", "RRF of hybrid+naive_ge and ppr (no LLM)", False, True, _fused,
    ),
    RetrieverSpec(
        "sirerag", "SiReRAG: dense ranking over passages + tree nodes (`gear sirerag build`), "
        "a node counting as its passages (no LLM at query time)",
        False, False, _sirerag, "cosine",
    ),
]

LLM_FREE: dict[str, RetrieverSpec] = {spec.name: spec for spec in _SPECS}
"""The retrievers that need no LLM, by name, in the order ``gear retrievers`` lists them."""


def check_llm_free(name: str) -> RetrieverSpec:
    """The row of ``name`` among the LLM-free retrievers.

    Raises:
        UnknownNameError: ``name`` is not one of them; the message lists them.

    Example:
        >>> check_llm_free("ppr").name
        'ppr'
    """
    spec = LLM_FREE.get(name)
    if spec is None:
        raise UnknownNameError(
            f"{name!r} is not a retriever without an LLM; choose one of {', '.join(LLM_FREE)}"
        )
    return spec


def make_llm_free(name: str, parts: IndexParts | OpenIndex) -> Retriever:
    """Build the LLM-free retriever ``name`` over an index's ``parts`` (an ``OpenIndex``
    gets parts of its own, :func:`index_parts`).

    Raises:
        UnknownNameError: ``name`` is not an LLM-free retriever.
    """
    spec = check_llm_free(name)
    return spec.build(parts if isinstance(parts, IndexParts) else index_parts(parts), None)


@dataclass(frozen=True)
class IndexParts:
    """The parts of an opened index that retrievers and the agent's steps use, under one
    set of settings; the costly ones are made on first use and kept (made once per parts).

    Attributes:
        store: The passages, triples and their embeddings.
        encode: The query encoder.
        sequence_encoder: Makes (once) the beam search's encoder of sequence texts.
        ppr: Makes (once) the PPR retriever, so its graph is built or loaded once.
        base: Makes (once) the base retriever (``GEAR_BASE_RETRIEVER``).
        settings: The settings the parts were assembled under.
    """

    store: Store
    encode: QueryEncoder
    sequence_encoder: Callable[[], Embedder]
    ppr: Callable[[], PPRRetriever]
    base: Callable[[], Retriever]
    settings: GearSettings


def index_parts(
    index: OpenIndex, base_retriever: str | None = None, *, settings: GearSettings | None = None
) -> IndexParts:
    """The parts of an opened index, in one pass: read off the index once here and kept by
    the parts returned, so hand the same parts to every retriever and the agent.

    Args:
        index: The opened index.
        base_retriever: The LLM-free retriever the agent starts each iteration with;
            the settings' ``base_retriever`` when None.
        settings: Settings other than the index's: the same embedder, store and encoder
            with parts of their own built under them.
    """
    under = index.settings if settings is None else settings
    name = base_retriever or under.base_retriever
    store, encode, embedder = index.store, index.encode, index.embedder

    @cache
    def sequence_encoder() -> Embedder:
        return make_sequence_encoder(under, embedder)

    @cache
    def ppr() -> PPRRetriever:
        from gear_agent.expansion.ppr import PPRRetriever

        return PPRRetriever(store, encode, under)

    @cache
    def base() -> Retriever:
        return make_llm_free(name, parts)

    parts = IndexParts(store, encode, sequence_encoder, ppr, base, under)
    return parts


def parts_and_settings(
    what: str, given: IndexParts | OpenIndex, settings: AgentSettings | None, *, reopen: bool = False
) -> tuple[IndexParts, AgentSettings]:
    """The parts and settings of a component's call; the old call with an ``OpenIndex``
    (its settings when none are given) still works, with a DeprecationWarning.

    ``reopen``: an old call whose settings are not the index's takes the index's parts
    anew under those settings (as ``build_graph`` did).

    Raises:
        TypeError: Parts given without settings.
    """
    if isinstance(given, IndexParts):
        if settings is None:
            raise TypeError(f"{what} needs settings: the loop's AgentSettings (a GearSettings is one)")
        return given, settings
    warn_deprecated(
        f"{what}(runtime, ...) with an OpenIndex: pass index_parts(runtime) "
        "and the settings (e.g. runtime.settings)",
        removed_in=NEXT_REMOVAL, stacklevel=3,
    )
    if settings is None:
        return index_parts(given), given.settings
    under = settings if reopen else None
    return index_parts(given, settings.base_retriever, settings=under), settings  # type: ignore[arg-type]


__all__ = [
    "BASE_MODES", "LLM_FREE", "Builder", "IndexParts", "RetrieverSpec", "ScoreKind", "check_llm_free",
    "index_parts", "make_llm_free", "naive_ge", "parts_and_settings",
]
