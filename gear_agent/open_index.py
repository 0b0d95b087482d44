"""The parts a running GEAR needs, opened once: settings, embedder, store, query encoder."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from gear_agent.config import GearSettings
from gear_agent.embedding import Embedder, make_embedder, make_sequence_encoder
from gear_agent.embedding.base import QueryEncoder
from gear_agent.store import Store, open_store

T = TypeVar("T")


@dataclass
class OpenIndex:
    """An index opened for retrieval: everything retrievers and the agent are built from
    (the settings, the embedding model, the store, the query encoder, and the parts built
    once over them, which :mod:`gear_agent.parts` assembles). Formerly
    ``gear_agent.runtime.Runtime``, a name that collided with LangGraph's
    ``langgraph.runtime.Runtime``; the old name still imports, with a warning.

    Example:
        >>> index = OpenIndex.open(GearSettings(index_dir="my-index"))  # doctest: +SKIP
    """

    settings: GearSettings
    embedder: Embedder
    store: Store
    encode: QueryEncoder
    _sequence_encoder: Embedder | None = field(default=None, repr=False)
    _parts: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def open(cls, settings: GearSettings, *, create: bool = False) -> OpenIndex:
        """Load the embedding model and open the configured index (it must exist unless ``create``)."""
        embedder = make_embedder(settings)
        store = open_store(settings, embedder, create=create)
        return cls(settings, embedder, store, QueryEncoder(embedder))

    def under(self, settings: GearSettings) -> OpenIndex:
        """This index under ``settings``: itself for its own settings, else the same
        embedder, store and encoder with parts of their own (built under ``settings``)."""
        if settings is self.settings:
            return self
        return OpenIndex(settings, self.embedder, self.store, self.encode)

    def part(self, key: str, build: Callable[[], T]) -> T:
        """``build()`` made once per open index and kept under ``key`` (e.g. the agent's base
        retriever, so a PPR graph or a beam search is set up once, not per question)."""
        if key not in self._parts:
            self._parts[key] = build()
        return self._parts[key]

    def sequence_encoder(self) -> Embedder:
        """The beam search's encoder of sequence texts (``beam_encoder``), made once: the
        embedder itself, or its int8 ONNX Runtime copy."""
        if self._sequence_encoder is None:
            self._sequence_encoder = make_sequence_encoder(self.settings, self.embedder)
        return self._sequence_encoder
