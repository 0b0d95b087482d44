"""The manifest of an embedded index, read without loading the store (no numpy search
code, no scipy): what ``gear info`` and the CLI's cheap checks need."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from gear_agent.store.base import IndexCorruptError, StoreError
from gear_agent.store.embedded.db import (
    COUNTER_FILE,
    DB_FILE,
    FORMAT_VERSION,
    connect,
    read_counter,
)

PREVIOUS_FORMAT_POINTER = "CURRENT"
"""The file naming the live generation of an index in the previous format (``gen-*``)."""
ANN_SUFFIX = ".usearch"


def has_previous_format(path: Path) -> bool:
    """Whether ``path`` holds an index in the previous format (``CURRENT`` + ``gen-*``) and
    none in this one (``gear migrate`` converts it)."""
    path = Path(path)
    return path.is_dir() and (path / PREVIOUS_FORMAT_POINTER).exists() and not (path / DB_FILE).exists()


def read_manifest(path: Path) -> dict[str, Any] | None:
    """The manifest of the index at ``path`` (no model loaded), or None if there is none.

    An index still in the previous format gives that format's manifest with
    ``"format_version": 1`` (``gear migrate`` converts it).

    Raises:
        StoreError: ``path`` is a file, not an index folder.
        IndexCorruptError: ``index.sqlite`` cannot be read.
    """
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise StoreError(f"{path} is a file, not an index folder")
    db_path = path / DB_FILE
    if not db_path.exists():
        if has_previous_format(path):
            from gear_agent.store.embedded.generations import read_legacy_manifest

            return read_legacy_manifest(path)
        return None
    db = connect(db_path, timeout_s=5.0, readonly=True)
    try:
        if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone() is None:
            return None  # a writer is creating it
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
    except sqlite3.DatabaseError as exc:
        raise IndexCorruptError(f"{db_path} cannot be read ({exc}); run `gear check`") from exc
    finally:
        db.close()
    if "embedding_model" not in meta:
        return None
    return {
        "format_version": int(meta.get("format_version", FORMAT_VERSION)),
        "embedding_model": meta["embedding_model"],
        "dimension": int(meta["dimension"]),
        "passages": int(meta.get("count:passage", 0)),
        "triples": int(meta.get("count:triple", 0)),
        "extracted_passages": int(meta.get("extracted", 0)),
        "committed_at": meta.get("committed_at", "?"),
        "generation": int(meta.get("generation", 0)),
        "index_id": meta.get("index_id"),
        "generation_counted": read_counter(path),
        "tokenizers": json.loads(meta.get("tokenizers", "[]")),
    }


def size_on_disk(root: Path) -> int:
    """Bytes of the files of the index at ``root`` (SQLite with its WAL, vectors, ANN parts)."""
    names = (DB_FILE, f"{DB_FILE}-wal", COUNTER_FILE, "passage.vec", "triple.vec", "node.vec")
    total = 0
    for path in Path(root).iterdir():
        if path.is_file() and (path.name in names or path.name.endswith(ANN_SUFFIX)):
            total += path.stat().st_size
    return total
