"""Backends for the Store conformance suite, and a deterministic test embedder.

Every test in this folder that takes ``backend`` runs once per backend:

* ``embedded``: :class:`gear_agent.store.embedded.store.EmbeddedStore` in ``tmp_path``;
* ``es-fake``: :class:`ElasticsearchStore` through the real ``elasticsearch``
  client against the in-memory emulation in ``es_fake.py`` (no cluster);
* ``elasticsearch``: :class:`ElasticsearchStore` against a live cluster (the ``es_url``
  fixture: ``GEAR_ES_URL`` with the other ``GEAR_ES_*`` variables, else the test cluster
  that ``tests/support/es_cluster.py`` starts), in fresh indices
  ``gear-conformance-<random>-*`` deleted afterwards. Skipped, with the reason, where no
  cluster can be had (no Java 17 or Maven); ``-m "not es"`` leaves them out.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gear_agent.config import GearSettings
from gear_agent.embedding.base import Embedder
from gear_agent.embedding.hashing import HashingEmbedder
from gear_agent.store.base import Store

_INDICES = ("passages", "triples", "nodes", "nodes-meta", "changes")
"""Every index a store of one prefix may create."""


@dataclass
class Backend:
    """A way to open (and re-open) one store of one backend with a given embedder."""

    name: str
    open: Callable[[Embedder], Store]


def _embedded(tmp_path: Path, opened: list[Store]) -> Backend:
    try:
        from gear_agent.store.embedded.store import EmbeddedStore
    except ImportError as err:  # pragma: no cover - while the embedded store is being written
        pytest.skip(f"the embedded store cannot be imported yet: {err}")

    def open_store(embedder: Embedder) -> Store:
        store = EmbeddedStore.open(tmp_path / "index", embedder)
        opened.append(store)
        return store

    return Backend("embedded", open_store)


def _es_fake(tmp_path: Path, opened: list[Store]) -> Backend:
    pytest.importorskip("elasticsearch", reason="the elasticsearch client is not installed")
    from es_fake import FakeElasticsearch

    from gear_agent.store.elasticsearch.store import ElasticsearchStore

    server = FakeElasticsearch()
    settings = GearSettings(backend="elasticsearch", es_index_prefix="conformance",
                            es_cache_dir=tmp_path / "es-cache")

    def open_store(embedder: Embedder) -> Store:
        client = server.client()
        store = ElasticsearchStore(settings, embedder, client=client, sleep=lambda _s: None)
        opened.append(store)
        return store

    return Backend("es-fake", open_store)


def _es_live(
    url: str, tmp_path: Path, opened: list[Store], cleanup: list[Callable[[], None]]
) -> Backend:
    pytest.importorskip("elasticsearch", reason="the elasticsearch client is not installed")
    from gear_agent.store.elasticsearch.client import make_client
    from gear_agent.store.elasticsearch.store import ElasticsearchStore

    prefix = f"gear-conformance-{uuid.uuid4().hex[:10]}"
    settings = GearSettings(backend="elasticsearch", es_url=url, es_index_prefix=prefix,
                            es_cache_dir=tmp_path / "es-cache")

    def open_store(embedder: Embedder) -> Store:
        store = ElasticsearchStore(settings, embedder)
        opened.append(store)
        if drop_indices not in cleanup:  # only once the cluster answered
            cleanup.append(drop_indices)
        return store

    def drop_indices() -> None:
        client = make_client(settings)
        try:
            client.indices.delete(
                index=",".join(f"{prefix}-{name}" for name in _INDICES), ignore_unavailable=True
            )
        finally:
            client.close()

    return Backend("elasticsearch", open_store)


@pytest.fixture(params=["embedded", "es-fake", pytest.param("elasticsearch", marks=pytest.mark.es)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    opened: list[Store] = []
    cleanup: list[Callable[[], None]] = []
    if request.param == "embedded":
        chosen = _embedded(tmp_path, opened)
    elif request.param == "es-fake":
        chosen = _es_fake(tmp_path, opened)
    else:
        chosen = _es_live(request.getfixturevalue("es_url"), tmp_path, opened, cleanup)
    try:
        yield chosen
    finally:
        for store in opened:
            store.close()
        for step in cleanup:
            step()


@pytest.fixture
def embedder() -> HashingEmbedder:
    return HashingEmbedder(64)


@pytest.fixture
def store(backend: Backend, embedder: HashingEmbedder) -> Store:
    return backend.open(embedder)
