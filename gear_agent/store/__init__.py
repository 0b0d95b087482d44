"""Index backends behind one interface; :func:`open_store` picks the configured one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gear_agent.store.base import ModelMismatchError, Store, StoreError

if TYPE_CHECKING:
    from gear_agent.config import GearSettings
    from gear_agent.embedding.base import Embedder

__all__ = ["ModelMismatchError", "Store", "StoreError", "open_store"]


def open_store(settings: GearSettings, embedder: Embedder, *, create: bool = True) -> Store:
    """Open the backend the settings name (``GEAR_BACKEND``) with the given embedder.

    Raises:
        StoreError: no index where one is required, or the backend is unreachable.
        ModelMismatchError: the index was built with another embedding model.
    """
    if settings.backend == "elasticsearch":
        from gear_agent.store.elasticsearch import ElasticsearchStore
        from gear_agent.store.es_client import ElasticsearchSettings

        return ElasticsearchStore(ElasticsearchSettings.from_gear(settings), embedder, create=create)
    from gear_agent.store.embedded import EmbeddedStore

    return EmbeddedStore.open(
        settings.index_dir, embedder, create=create, tokenizer=settings.bm25_tokenizer
    )
