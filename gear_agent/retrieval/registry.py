"""Retrievers by name, as `gear search --retriever` and `gear eval --retrievers` take them.

Built in (LLM-free): ``bm25``, ``dense``, ``hybrid``, and ``{base}+naive_ge`` for each
base; ``ppr`` (HippoRAG 2-style Personalized PageRank) and ``hybrid+naive_ge+ppr`` (RRF of
the two). The agent's module registers ``syncge``, ``syncge+ppr`` and ``gear``.
"""

from __future__ import annotations

from collections.abc import Callable

from gear_agent.errors import UnknownNameError
from gear_agent.retrieval.base import Retriever
from gear_agent.retrieval.search import BASE_MODES, BaseRetriever
from gear_agent.runtime import Runtime

BUILT_IN = (*BASE_MODES, *(f"{mode}+naive_ge" for mode in BASE_MODES), "ppr", "ppr+filter", "hybrid+naive_ge+ppr")
_EXTRA: dict[str, Callable[[Runtime], Retriever]] = {}


def register(name: str, factory: Callable[[Runtime], Retriever]) -> None:
    """Make ``name`` available to :func:`make_retriever` (used by optional parts)."""
    _EXTRA[name] = factory


def available() -> tuple[str, ...]:
    """Every retriever name :func:`make_retriever` knows."""
    _load_optional_parts()
    return tuple(dict.fromkeys((*BUILT_IN, *_EXTRA)))


def make_retriever(name: str, runtime: Runtime) -> Retriever:
    """Build the retriever called ``name`` over the runtime's index.

    Raises:
        UnknownNameError: the name is unknown; the message lists the known ones.
    """
    check_name(name)
    settings = runtime.settings
    if name in BASE_MODES:
        return BaseRetriever(runtime.store, runtime.encode, name, settings.rrf_k)
    if name.endswith("+naive_ge") and name.split("+")[0] in BASE_MODES:
        from gear_agent.expansion.beam import TripleBeamSearch
        from gear_agent.expansion.naive_ge import NaiveGERetriever

        base = BaseRetriever(runtime.store, runtime.encode, name.split("+")[0], settings.rrf_k)
        beam = TripleBeamSearch(runtime.store, runtime.embedder, runtime.beam_settings())
        return NaiveGERetriever(base, beam, runtime.encode, settings.base_k, settings.rrf_k)
    if name == "ppr":
        return runtime.ppr_retriever()
    if name == "ppr+filter":
        from gear_agent.expansion.ppr import PPRRetriever
        from gear_agent.expansion.ppr_filter import make_llm_filter
        from gear_agent.llm import LLMClient

        llm_filter = make_llm_filter(LLMClient.from_settings(settings), prompts_dir=settings.prompts_dir)
        ppr = runtime.ppr_retriever()
        filtered = PPRRetriever(runtime.store, runtime.encode, settings, llm_filter, graph=ppr.graph)
        filtered.name = "ppr+filter"
        return filtered
    if name == "hybrid+naive_ge+ppr":
        from gear_agent.expansion.fused import FusedExpansionRetriever

        naive = make_retriever("hybrid+naive_ge", runtime)
        return FusedExpansionRetriever(naive, runtime.ppr_retriever(), settings.rrf_k)
    if name in _EXTRA:
        return _EXTRA[name](runtime)
    raise UnknownNameError(f"unknown retriever {name!r}; known: {', '.join(available())}")


def check_name(name: str) -> str:
    """``name`` if a retriever of that name exists, else UnknownNameError listing the names."""
    if name not in available():
        raise UnknownNameError(f"unknown retriever {name!r}; known: {', '.join(available())}")
    return name


def _load_optional_parts() -> None:
    """Import the modules that register the PPR and LLM-backed retrievers, where present."""
    import importlib

    for module in _OPTIONAL_MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise


_OPTIONAL_MODULES: tuple[str, ...] = ("gear_agent.agent.retrievers",)
#: Names whose retrievers call an LLM (checked for configuration before any work).
NEEDS_LLM = ("ppr+filter", "syncge", "syncge+ppr", "gear")
