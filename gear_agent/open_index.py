"""An index opened once: its settings, embedding model, store and query encoder."""

from __future__ import annotations

from dataclasses import dataclass

from gear_agent.config import GearSettings
from gear_agent.embedding import Embedder, make_embedder
from gear_agent.embedding.base import QueryEncoder
from gear_agent.store import Store, open_store


@dataclass
class OpenIndex:
    """An index opened for retrieval: what retrievers and the agent are built from (the
    settings, the embedding model, the store and the query encoder). The parts made over
    it (the PPR graph, the base retriever, ...) are assembled, once, by
    :func:`gear_agent.parts.index_parts`, and kept by the parts it returns. Formerly
    ``gear_agent.runtime.Runtime``, a name that collided with LangGraph's
    ``langgraph.runtime.Runtime``; the old name still imports, with a warning.

    Example:
        >>> index = OpenIndex.open(GearSettings(index_dir="my-index"))  # doctest: +SKIP
    """

    settings: GearSettings
    embedder: Embedder
    store: Store
    encode: QueryEncoder

    @classmethod
    def open(cls, settings: GearSettings, *, create: bool = False) -> OpenIndex:
        """Load the embedding model and open the configured index (it must exist unless ``create``)."""
        embedder = make_embedder(settings)
        store = open_store(settings, embedder, create=create)
        return cls(settings, embedder, store, QueryEncoder(embedder))

    def under(self, settings: GearSettings) -> OpenIndex:
        """This index under ``settings``: itself for its own settings, else the same
        embedder, store and encoder under ``settings``."""
        if settings is self.settings:
            return self
        return OpenIndex(settings, self.embedder, self.store, self.encode)
