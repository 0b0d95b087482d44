"""Indexes in the previous embedded format (``CURRENT`` + ``gen-NNNNNN/`` folders).

They are migrated, not rebuilt: the first open of such a directory copies the live
generation's records, extraction marks and vectors (no re-embedding) into the SQLite
format in one transaction, and records which generation it came from. The old folders
are left exactly as they were (``gear check`` mentions them; delete them by hand once the
new index serves you). A crash during migration leaves no committed state, and the next
open migrates again.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from gear_agent.store import generations as gen
from gear_agent.store.embedded_db import IndexCorruptError, set_meta
from gear_agent.types import Passage, Triple

if TYPE_CHECKING:
    from gear_agent.store.embedded import EmbeddedStore

MANIFEST = "manifest.json"


def has_legacy_index(root: Path) -> bool:
    """Whether ``root`` holds an index in the previous format."""
    return (Path(root) / gen.CURRENT).exists()


def read_legacy_manifest(root: Path) -> dict[str, Any] | None:
    """The previous format's manifest, or None when there is no such index."""
    try:
        live = gen.current_generation(Path(root))
    except gen.IndexCorruptError as exc:
        raise IndexCorruptError(str(exc)) from exc
    if live is None:
        return None
    try:
        manifest = gen.read_json(live / MANIFEST)
    except FileNotFoundError as exc:
        raise IndexCorruptError(f"{live} named by CURRENT is missing its manifest; run `gear check`") from exc
    return {**manifest, "format_version": 1}


def migrate(store: EmbeddedStore) -> None:
    """Copy the live legacy generation into ``store`` (one transaction)."""
    try:
        live = gen.current_generation(store.root)
        if live is None:
            return
        manifest = gen.read_json(live / MANIFEST)
        passages_rows = gen.read_jsonl(live / "passages.jsonl")
        triple_rows = gen.read_jsonl(live / "triples.jsonl")
        passage_vectors = gen.read_array(live / "passage_vectors.npy", store.dimension)
        triple_vectors = gen.read_array(live / "triple_vectors.npy", store.dimension)
    except (OSError, gen.IndexCorruptError) as exc:
        raise IndexCorruptError(
            f"the previous-format index at {store.root} cannot be read for migration ({exc}); "
            "its files were left untouched"
        ) from exc
    if manifest.get("embedding_model") != store.embedding_model or manifest.get("dimension") != store.dimension:
        from gear_agent.store.base import ModelMismatchError

        raise ModelMismatchError(
            f"index at {store.root} was built with embedding model {manifest.get('embedding_model')!r} "
            f"(dimension {manifest.get('dimension')}); the configured model is {store.embedding_model!r} "
            f"(dimension {store.dimension}). Set GEAR_EMBEDDING_MODEL={manifest.get('embedding_model')} "
            "to use this index."
        )
    if len(passage_vectors) != len(passages_rows) or len(triple_vectors) != len(triple_rows):
        raise IndexCorruptError(f"{live}: vector counts do not match record counts; its files were left untouched")
    passages = [Passage(r["id"], r["title"], r["text"], r.get("source", ""), r.get("metadata") or {})
                for r in passages_rows]
    triples = [Triple(r["id"], r["subject"], r["predicate"], r["object"], r["passage_id"]) for r in triple_rows]
    with store.transaction():
        if store._meta("migrated_from") is not None:
            return
        if passages:
            store._insert_passages(passages, np.asarray(passage_vectors, dtype=np.float32),
                                   extracted=[bool(r.get("extracted", False)) for r in passages_rows])
        if triples:
            rows = store._existing("passages", [t.passage_id for t in triples])
            store._insert_triples(triples, np.asarray(triple_vectors, dtype=np.float32), rows)
        set_meta(store._db, "migrated_from", live.name)
