"""The parts of an opened index, assembled in one place below the layers that use them:
the retrievers that need no LLM, by name, and the :class:`IndexParts` the agent's steps use.

:data:`gear_agent.registry.RETRIEVERS` is the one table of every retriever; its LLM-free
rows live here, below the agent, because the agent takes any of them as its base retriever
(``GEAR_BASE_RETRIEVER``). :func:`index_parts` is the one place that reads the parts off an
opened index (:class:`~gear_agent.open_index.OpenIndex`), so the parts built once (the PPR
graph, the sequence encoder, the base retriever) stay built once per index; a component
takes these parts and its settings section, never the ``OpenIndex`` itself.

Example:
    >>> list(LLM_FREE)[:3]
    ['bm25', 'dense', 'hybrid']
    >>> LLM_FREE["ppr"].score
    'ppr'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from gear_agent._deprecated import NEXT_REMOVAL, warn_deprecated
from gear_agent.config import AgentSettings, GearSettings
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

Builder = Callable[["OpenIndex", "LLMClient | None"], "Retriever"]
"""Builds a retriever over an open index; LLM retrievers use the client given (or one from
the index's settings when None)."""


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
    def build(index: OpenIndex, llm: LLMClient | None) -> Retriever:
        from gear_agent.retrieval.search import SearchRetriever

        return SearchRetriever(index.store, index.encode, mode, index.settings.rrf_k)

    return build


def naive_ge(mode: str) -> Builder:
    """The builder of ``{mode}+naive_ge``."""

    def build(index: OpenIndex, llm: LLMClient | None) -> Retriever:
        from gear_agent.expansion.beam import TripleBeamSearch
        from gear_agent.expansion.naive_ge import NaiveGERetriever
        from gear_agent.retrieval.search import SearchRetriever

        s = index.settings
        base = SearchRetriever(index.store, index.encode, mode, s.rrf_k)
        beam = TripleBeamSearch(index.store, index.sequence_encoder(), s, llm_in_loop=False)
        return NaiveGERetriever(base, beam, index.encode, s.base_k, s.rrf_k)

    return build


def ppr_retriever(index: OpenIndex) -> PPRRetriever:
    """One PPR retriever per open index, so its graph is built (or loaded) once."""
    from gear_agent.expansion.ppr import PPRRetriever

    return index.part("ppr", lambda: PPRRetriever(index.store, index.encode, index.settings))


def _ppr(index: OpenIndex, llm: LLMClient | None) -> Retriever:
    return ppr_retriever(index)


def _hipporag(index: OpenIndex, llm: LLMClient | None) -> Retriever:
    from gear_agent.expansion.hipporag import HippoRAGRetriever

    return HippoRAGRetriever(ppr_retriever(index))


def _fused(index: OpenIndex, llm: LLMClient | None) -> Retriever:
    from gear_agent.expansion.fused import FusedExpansionRetriever

    naive = naive_ge("hybrid")(index, llm)
    return FusedExpansionRetriever(naive, ppr_retriever(index), index.settings.rrf_k)  # type: ignore[arg-type]


def _sirerag(index: OpenIndex, llm: LLMClient | None) -> Retriever:
    from gear_agent.sirerag.retriever import SiReRAGRetriever

    return SiReRAGRetriever(index.store, index.encode)


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


def make_llm_free(name: str, index: OpenIndex) -> Retriever:
    """Build the LLM-free retriever ``name`` over the open ``index``.

    Raises:
        UnknownNameError: ``name`` is not an LLM-free retriever.
    """
    return check_llm_free(name).build(index, None)


@dataclass(frozen=True)
class IndexParts:
    """The parts of an index the agent's steps use; the costly ones are made on first use.

    Attributes:
        store: The passages, triples and their embeddings.
        encode: The query encoder.
        sequence_encoder: Makes (once) the beam search's encoder of sequence texts.
        ppr: Makes (once) the PPR retriever, so its graph is built or loaded once.
        base: Makes (once) the base retriever (``GEAR_BASE_RETRIEVER``).
    """

    store: Store
    encode: QueryEncoder
    sequence_encoder: Callable[[], Embedder]
    ppr: Callable[[], PPRRetriever]
    base: Callable[[], Retriever]


def index_parts(
    index: OpenIndex, base_retriever: str | None = None, *, settings: GearSettings | None = None
) -> IndexParts:
    """The parts of an opened index, in one pass: kept by the index, so they are built once.

    Args:
        index: The opened index.
        base_retriever: The LLM-free retriever the agent starts each iteration with;
            the settings' ``base_retriever`` when None.
        settings: Settings other than the index's: the same embedder, store and encoder
            with parts of their own built under them (:meth:`OpenIndex.under`).
    """
    if settings is not None:
        index = index.under(settings)
    name = base_retriever or index.settings.base_retriever

    def base() -> Retriever:
        check_llm_free(name)
        return index.part(f"base retriever {name}", lambda: make_llm_free(name, index))

    return IndexParts(index.store, index.encode, index.sequence_encoder, lambda: ppr_retriever(index), base)


def parts_and_settings(
    what: str, given: IndexParts | OpenIndex, settings: AgentSettings | None, *, reopen: bool = False
) -> tuple[IndexParts, AgentSettings]:
    """The parts and settings of a component's call; the old call with an ``OpenIndex``
    (its settings when none are given) still works, with a DeprecationWarning.

    ``reopen``: an old call whose settings are not the index's takes the index's parts
    anew under those settings (:meth:`OpenIndex.under`, as ``build_graph`` did).

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
    "index_parts", "make_llm_free", "naive_ge", "parts_and_settings", "ppr_retriever",
]
