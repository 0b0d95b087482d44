"""The one table of index backends: name → how it opens, where it lives, what it offers.

Everything outside :mod:`gear_agent.store` that needs to know about a backend (the CLI's
cheap checks, ``gear info``, ``gear check``, the PPR graph's cache folder, the facade's
``repr``) reads its row here instead of branching on the store's class. A backend's
module is imported only when it is opened, so a missing optional dependency
(``elasticsearch``) fails only when that backend is chosen.

Example:
    >>> backend("embedded").keeps_nodes
    True
    >>> sorted(BACKENDS)
    ['elasticsearch', 'embedded']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gear_agent.errors import UnknownNameError
from gear_agent.store.nodes import HasNodes, NodesNotSupportedError, NodeStore

if TYPE_CHECKING:
    from gear_agent.config import BackendSettings
    from gear_agent.embedding.base import Embedder
    from gear_agent.store.base import Store
    from gear_agent.store.check_report import CheckReport


@dataclass(frozen=True)
class Backend:
    """One row of :data:`BACKENDS`.

    Attributes:
        name: The ``GEAR_BACKEND`` value.
        description: One line for help texts.
        open: ``open(settings, embedder, create)``: the opened :class:`Store`.
        location: Where the index lives, for messages (a folder, a URL).
        index_option: The command-line option that points at this index (``--index DIR``),
            or "" where the settings alone name it.
        derived_dir: The local folder under which caches derived from the index live (the PPR
            graph): the index folder itself, or ``GEAR_ES_CACHE_DIR`` (an opened store's
            ``derived_dir`` names its own sub-folder, ``{cluster_uuid}-{prefix}``).
        manifest: Reads the index's manifest without loading a model (embedding model,
            dimension, counts), or None when the backend checks these when it opens.
        check: ``gear check`` for this backend (None: it keeps its own integrity).
        repair: ``gear check --repair``: ``repair(settings, report, embedder, progress)``
            mends what the report found derived; returns what was done.
        integrity_errors: Damage found by the database's own check before a write (empty:
            sound), or None when the backend has none.
        size_on_disk: Bytes of the index's files, or None.
        keeps_nodes: Whether the store implements :class:`gear_agent.store.nodes.HasNodes`.
        snapshot: ``gear snapshot``: ``snapshot(settings, only_if_changed)`` takes one now and
            keeps the newest ``GEAR_SNAPSHOT_KEEP``; returns one line saying what was taken, or
            None when ``only_if_changed`` and the newest snapshot holds the last commit.
        restore: ``gear snapshot --restore``: puts the newest good snapshot back; returns one
            line; ``gear check --repair`` calls it too when the check offered a snapshot
            (``CheckReport.restorable_from``). None where the backend's ``repair`` restores
            a damaged index itself.
        exists: Whether an index (empty or not, this format or a previous one) is already
            where the settings point, told without opening it; None where the backend cannot
            tell without connecting (opening it says).
        migrate: ``gear migrate``: converts an index of a previous format in place and returns
            the counts copied (``passages``, ``triples``), or None where the backend has no
            previous format.
    """

    name: str
    description: str
    open: Callable[[BackendSettings, Embedder, bool], Store]
    location: Callable[[BackendSettings], str]
    index_option: Callable[[BackendSettings], str]
    derived_dir: Callable[[BackendSettings], Path | None]
    manifest: Callable[[BackendSettings], dict[str, Any] | None] | None
    check: Callable[[BackendSettings], CheckReport] | None
    repair: Callable[[BackendSettings, CheckReport, Embedder, Any], list[str]] | None
    integrity_errors: Callable[[BackendSettings], list[str]] | None
    size_on_disk: Callable[[BackendSettings], int] | None
    keeps_nodes: bool
    snapshot: Callable[[BackendSettings, bool], str | None]
    restore: Callable[[BackendSettings], str] | None = None
    exists: Callable[[BackendSettings], bool] | None = None
    migrate: Callable[[BackendSettings], dict[str, int]] | None = None


def _open_embedded(settings: BackendSettings, embedder: Embedder, create: bool) -> Store:
    from gear_agent.store.embedded.store import EmbeddedStore

    return EmbeddedStore.open(settings.index_dir, embedder, create=create, tokenizer=settings.bm25_tokenizer)


def _embedded_manifest(settings: BackendSettings) -> dict[str, Any] | None:
    from gear_agent.store.embedded.manifest import read_manifest

    return read_manifest(settings.index_dir)


def _embedded_check(settings: BackendSettings) -> CheckReport:
    from gear_agent.store.embedded.check import check_index
    from gear_agent.store.embedded.snapshot import offer_snapshot

    return offer_snapshot(check_index(settings.index_dir))


def _embedded_repair(settings: BackendSettings, report: CheckReport, embedder: Embedder, progress: Any) -> list[str]:
    from gear_agent.store.embedded.repair import repair_index

    return repair_index(settings.index_dir, report, embedder, settings.bm25_tokenizer, progress)


def _embedded_integrity(settings: BackendSettings) -> list[str]:
    from gear_agent.store.embedded.check import integrity_errors

    return integrity_errors(settings.index_dir)


def _embedded_size(settings: BackendSettings) -> int:
    from gear_agent.store.embedded.manifest import size_on_disk

    return size_on_disk(settings.index_dir)


def _embedded_exists(settings: BackendSettings) -> bool:
    from gear_agent.store.embedded.db import DB_FILE
    from gear_agent.store.embedded.manifest import read_manifest

    folder = Path(settings.index_dir)
    return (folder / DB_FILE).exists() or read_manifest(folder) is not None


def _embedded_migrate(settings: BackendSettings) -> dict[str, int]:
    from gear_agent.embedding.base import NamedEmbedder
    from gear_agent.store.base import StoreError
    from gear_agent.store.embedded.legacy import migrate
    from gear_agent.store.embedded.manifest import read_manifest

    manifest = read_manifest(settings.index_dir)
    if manifest is None or manifest.get("format_version") != 1:
        raise StoreError(f"nothing to migrate at {settings.index_dir}: it holds no index of the previous format")
    embedder = NamedEmbedder(str(manifest["embedding_model"]), int(manifest["dimension"]))
    return migrate(settings.index_dir, embedder, settings.bm25_tokenizer)


def _es_check(settings: BackendSettings) -> CheckReport:
    from gear_agent.store.elasticsearch.check import check_elasticsearch
    from gear_agent.store.elasticsearch.snapshot import offer_es_snapshot

    return offer_es_snapshot(settings, check_elasticsearch(settings))


def _es_repair(settings: BackendSettings, report: CheckReport, embedder: Embedder, progress: Any) -> list[str]:
    """The derived file Elasticsearch keeps outside the cluster: its expansion cache, rebuilt
    when ``gear check`` found it stale (the cluster owns its indices; a damaged one is put back
    by ``restore``; the PPR graph cache is rebuilt by ``gear check --repair`` for every backend)."""
    from gear_agent.store.elasticsearch.check import repair_elasticsearch

    return repair_elasticsearch(settings, report, embedder, progress)


def _embedded_snapshot(settings: BackendSettings, only_if_changed: bool) -> str | None:
    from gear_agent.store.embedded.snapshot import take

    taken = take(settings.index_dir, settings.snapshot_keep, only_if_changed=only_if_changed)
    return None if taken is None else taken.line()


def _es_snapshot(settings: BackendSettings, only_if_changed: bool) -> str | None:
    from gear_agent.store.elasticsearch.snapshot import take_es_snapshot

    return take_es_snapshot(settings)


def _es_restore(settings: BackendSettings) -> str:
    from gear_agent.store.elasticsearch.snapshot import restore_es_snapshot

    return restore_es_snapshot(settings)


def _open_elasticsearch(settings: BackendSettings, embedder: Embedder, create: bool) -> Store:
    from gear_agent.store.elasticsearch.store import ElasticsearchStore

    return ElasticsearchStore(settings, embedder, create=create)


BACKENDS: dict[str, Backend] = {
    "embedded": Backend(
        name="embedded",
        description="one local folder (SQLite + memory-mapped vectors + ANN parts), no server",
        open=_open_embedded,
        location=lambda s: str(s.index_dir),
        index_option=lambda s: f"--index {s.index_dir}",
        derived_dir=lambda s: Path(s.index_dir),
        manifest=_embedded_manifest,
        check=_embedded_check,
        repair=_embedded_repair,
        integrity_errors=_embedded_integrity,
        size_on_disk=_embedded_size,
        keeps_nodes=True,
        snapshot=_embedded_snapshot,
        exists=_embedded_exists,
        migrate=_embedded_migrate,
    ),
    "elasticsearch": Backend(
        name="elasticsearch",
        description="two indices in an Elasticsearch 8 cluster (GEAR_ES_URL)",
        open=_open_elasticsearch,
        location=lambda s: str(s.es_url),
        index_option=lambda s: "",
        derived_dir=lambda s: Path(s.es_cache_dir),
        manifest=None,
        check=_es_check,
        repair=_es_repair,
        integrity_errors=None,
        size_on_disk=None,
        keeps_nodes=True,
        snapshot=_es_snapshot,
        restore=_es_restore,
    ),
}
"""Every backend, by its ``GEAR_BACKEND`` name."""


def backend(name: str) -> Backend:
    """The row of backend ``name``.

    Raises:
        UnknownNameError: no such backend (the message lists the known ones).
    """
    try:
        return BACKENDS[name]
    except KeyError:
        raise UnknownNameError(
            f"unknown backend {name!r}; known: {', '.join(sorted(BACKENDS))}"
        ) from None


def backends_with_nodes() -> list[str]:
    """Names of the backends that keep SiReRAG nodes."""
    return [name for name, row in BACKENDS.items() if row.keeps_nodes]


def node_store_of(store: Store) -> NodeStore:
    """The SiReRAG node collection of ``store``.

    Raises:
        NodesNotSupportedError: the backend keeps no nodes (the message names one that does).

    Example:
        >>> node_store_of(store).count()  # doctest: +SKIP
    """
    if isinstance(store, HasNodes):
        return store.nodes
    names = ", ".join(f"GEAR_BACKEND={name}" for name in backends_with_nodes()) or "none"
    raise NodesNotSupportedError(
        f"the {store.backend or type(store).__name__} backend does not store SiReRAG nodes; "
        f"build SiReRAG indexes in a backend that does ({names})"
    )
