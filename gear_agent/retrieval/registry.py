"""Retrievers by name, as `gear search --retriever` and `gear eval --retrievers` take them.

LLM-free names: ``bm25``, ``dense``, ``hybrid``, ``{base}+naive_ge`` for each base,
``ppr``, ``hybrid+naive_ge+ppr``. With an LLM: ``syncge``, ``syncge+ppr``, ``gear``.
"""

from __future__ import annotations

from collections.abc import Callable

from gear_agent.retrieval.base import Retriever
from gear_agent.retrieval.search import BASE_MODES, BaseRetriever
from gear_agent.runtime import Runtime

LLM_FREE = (
    *BASE_MODES,
    *(f"{mode}+naive_ge" for mode in BASE_MODES),
    "ppr",
    "hybrid+naive_ge+ppr",
)
NEEDS_LLM = ("syncge", "syncge+ppr", "gear")
_EXTRA: dict[str, Callable[[Runtime], Retriever]] = {}


def register(name: str, factory: Callable[[Runtime], Retriever]) -> None:
    """Make ``name`` available to :func:`make_retriever` (used by optional parts)."""
    _EXTRA[name] = factory


def available() -> tuple[str, ...]:
    """Every retriever name :func:`make_retriever` knows."""
    return tuple(dict.fromkeys((*LLM_FREE, *NEEDS_LLM, *_EXTRA)))


def make_retriever(name: str, runtime: Runtime) -> Retriever:
    """Build the retriever called ``name`` over the runtime's index.

    Raises:
        ValueError: the name is unknown; the message lists the known ones.
    """
    settings = runtime.settings
    if name in BASE_MODES:
        return BaseRetriever(runtime.store, runtime.encode, name, settings.rrf_k)
    if name.endswith("+naive_ge") and name.split("+")[0] in BASE_MODES:
        from gear_agent.expansion.beam import TripleBeamSearch
        from gear_agent.expansion.naive_ge import NaiveGERetriever

        base = BaseRetriever(runtime.store, runtime.encode, name.split("+")[0], settings.rrf_k)
        beam = TripleBeamSearch(runtime.store, runtime.embedder, runtime.beam_settings())
        return NaiveGERetriever(base, beam, runtime.encode, settings.base_k, settings.rrf_k)
    if name in _EXTRA:
        return _EXTRA[name](runtime)
    raise ValueError(f"unknown retriever {name!r}; known: {', '.join(available())}")
