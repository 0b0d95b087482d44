"""What GEAR's steps search and expand with: the parts of an opened index, handed to the
agent's graph, its nodes and SyncGE by the composition roots (:func:`build_agent`, the
retriever table, :class:`gear_agent.Gear`, the CLI, the server).

A component takes these parts and its settings section (``AgentSettings``), never the
:class:`~gear_agent.open_index.OpenIndex` itself; :func:`index_parts` is the one place that
reads them off an opened index, so the parts built once (the PPR graph, the sequence
encoder, the base retriever) stay built once per index.

Example:
    >>> index = OpenIndex.open(GearSettings(index_dir="my-index"))  # doctest: +SKIP
    >>> graph = build_graph(index_parts(index), llm, index.settings)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gear_agent._deprecated import NEXT_REMOVAL, warn_deprecated
from gear_agent.config import AgentSettings
from gear_agent.open_index import OpenIndex
from gear_agent.retrieval.llm_free import check_llm_free, make_llm_free

if TYPE_CHECKING:
    from gear_agent.embedding import Embedder
    from gear_agent.expansion.ppr import PPRRetriever
    from gear_agent.retrieval.base import Retriever
    from gear_agent.retrieval.search import QueryEncoder
    from gear_agent.store import Store


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


def index_parts(index: OpenIndex, base_retriever: str | None = None) -> IndexParts:
    """The parts of an opened index, kept by the index so they are built once.

    Args:
        index: The opened index.
        base_retriever: The LLM-free retriever the agent starts each iteration with;
            ``index.settings.base_retriever`` when None.
    """
    name = base_retriever or index.settings.base_retriever

    def base() -> Retriever:
        check_llm_free(name)
        return index.part(f"base retriever {name}", lambda: make_llm_free(name, index))

    return IndexParts(index.store, index.encode, index.sequence_encoder, index.ppr_retriever, base)


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
    index = given
    if settings is None:
        settings = index.settings
    elif reopen:
        index = index.under(settings)  # type: ignore[arg-type]
    return index_parts(index, settings.base_retriever), settings


__all__ = ["IndexParts", "index_parts"]
