"""Index backends behind one interface; :func:`open_store` picks the configured one from
the backend table (:mod:`gear_agent.store.backends`).

A :class:`Store` composes its collections, ``store.passages`` and ``store.triples``
(:mod:`gear_agent.store.collections`), and owns what is store-wide (commits, the change
feed, snapshots). The backends are packages beside this shared protocol:
:mod:`gear_agent.store.embedded` and :mod:`gear_agent.store.elasticsearch`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gear_agent.store.base import IndexCorruptError, ModelMismatchError, Store, StoreError
from gear_agent.store.changes import Changes
from gear_agent.store.collections import Collection, Passages, Triples

if TYPE_CHECKING:
    from gear_agent.config import BackendSettings
    from gear_agent.embedding.base import Embedder

__all__ = [
    "Changes",
    "Collection",
    "IndexCorruptError",
    "ModelMismatchError",
    "Passages",
    "Store",
    "StoreError",
    "Triples",
    "open_store",
]


def open_store(settings: BackendSettings, embedder: Embedder, *, create: bool = True) -> Store:
    """Open the backend the settings name (``GEAR_BACKEND``) with the given embedder.

    Raises:
        StoreError: no index where one is required, or the backend is unreachable.
        ModelMismatchError: the index was built with another embedding model.
    """
    from gear_agent.store.backends import backend

    return backend(settings.backend).open(settings, embedder, create)
