"""Cheap checks that run before any model loads: the index exists and was built with the
configured embedding model, the LLM is configured, the retriever can do its job.

Loading the embedding model takes seconds; each check here reads a small file or the
environment, so a command that cannot succeed says so in well under a second.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gear_agent.cli.common import console

if TYPE_CHECKING:
    from gear_agent.config import GearSettings
    from gear_agent.registry import RetrieverSpec
    from gear_agent.store import Store


def require_index(settings: GearSettings, *, missing_ok: bool = False) -> dict[str, Any] | None:
    """The committed index's manifest (embedded backend), checked against the settings.

    Returns None for Elasticsearch, whose index is checked when it is opened, and for a
    missing index when ``missing_ok`` (a command that creates one).

    Raises:
        StoreError: There is no index at ``settings.index_dir``.
        ModelMismatchError: The index was built with another embedding model than the
            configured one (compared by name, so no model is loaded to find out).
    """
    from gear_agent.store.backends import backend

    row = backend(settings.backend)
    if row.manifest is None:
        return None
    from gear_agent.embedding import embedder_name
    from gear_agent.store import ModelMismatchError, StoreError

    manifest = row.manifest(settings)
    if manifest is None and missing_ok:
        return None
    if manifest is None:
        raise StoreError(
            f"no index at {settings.index_dir}: build one with `gear index CORPUS --index "
            f"{settings.index_dir}` (or point --index / GEAR_INDEX_DIR at an existing one)"
        )
    built_with, configured = manifest.get("embedding_model"), embedder_name(settings)
    if built_with and built_with != configured:
        raise ModelMismatchError(
            f"index at {settings.index_dir} was built with embedding model {built_with!r} "
            f"(dimension {manifest.get('dimension')}); the configured model is {configured!r}. "
            f"Set GEAR_EMBEDDING_MODEL={built_with} to use this index, or build a new index "
            "in another directory."
        )
    return manifest


def refuse_damaged_index(settings: GearSettings) -> None:
    """Refuse to write into an index whose database fails SQLite's check (``quick_check``;
    ``gear check`` runs the full one): new records would land in pages that cannot be
    trusted.

    Raises:
        IndexCorruptError: the check found damage (the message names ``gear check``).
    """
    from gear_agent.store.backends import backend

    row = backend(settings.backend)
    if row.integrity_errors is None or row.manifest is None or row.manifest(settings) is None:
        return
    from gear_agent.store.base import IndexCorruptError

    problems = row.integrity_errors(settings)
    if problems:
        raise IndexCorruptError(
            f"the index at {settings.index_dir} fails SQLite's integrity check ({'; '.join(problems)[:200]}); "
            "nothing was added. Run `gear check`, and index into a new folder")


def require_llm(settings: GearSettings) -> None:
    """Build (not call) the configured chat model, so a missing key, endpoint or provider
    package is one line now rather than after the index is loaded.

    Raises:
        LLMConfigError: No model is configured, or its integration is not installed.
    """
    from gear_agent.llm import factory

    factory.make_chat_model(settings)


def require_passing_filter(settings: GearSettings, where: Any) -> None:
    """Some stored passage passes ``where`` (embedded index: read without loading the
    embedding model; Elasticsearch is checked when the index is opened).

    Raises:
        NothingMatchesError: No passage passes; the message names the filter.
    """
    from gear_agent.store.backends import backend

    if where is None or backend(settings.backend).manifest is None:  # checked when it opens
        return
    from gear_agent.retrieval.filtering import checked_where

    with open_store_without_model(settings) as store:
        checked_where(store, where)


def open_store_without_model(settings: GearSettings) -> Store:
    """Open the existing index to read or delete from, without loading the embedding model
    (embedded backend: the manifest names the model; Elasticsearch loads it).

    Raises:
        StoreError: There is no index.
    """
    from gear_agent.store import StoreError, open_store
    from gear_agent.store.backends import backend

    row = backend(settings.backend)
    if row.manifest is None:
        from gear_agent.embedding import make_embedder

        return open_store(settings, make_embedder(settings), create=False)
    from gear_agent.embedding.base import NamedEmbedder

    manifest = row.manifest(settings)
    if manifest is None:
        raise StoreError(f"no index at {settings.index_dir}: build one with `gear index CORPUS`")
    embedder = NamedEmbedder(str(manifest["embedding_model"]), int(manifest["dimension"]))
    return open_store(settings, embedder, create=False)


def warn_without_triples(spec: RetrieverSpec, store: Store) -> bool:
    """One warning line when ``spec`` walks triples and the index has none; True if warned."""
    if not spec.needs_triples or store.triples.count() > 0:
        return False
    console.print(
        f"[bold yellow]warning:[/] {spec.name} walks triples, but this index has none, so "
        "its graph step adds nothing to the passage ranking; add triples with "
        "`gear index CORPUS --openie FILE` or `--extract`",
        highlight=False, soft_wrap=True,
    )
    return True
