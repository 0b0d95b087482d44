"""The manifest of an embedded index, read without loading the store (no numpy search
code, no scipy): what ``gear info`` and the CLI's cheap checks need."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from gear_agent.store import embedded_db as edb
from gear_agent.store.embedded_db import FORMAT_VERSION, IndexCorruptError


def read_manifest(path: Path) -> dict[str, Any] | None:
    """The manifest of the index at ``path`` (no model loaded), or None if there is none.

    An index still in the previous format (``CURRENT`` + ``gen-*``) gives that format's
    manifest with ``"format_version": 1``; it is migrated the first time it is opened.
    """
    from gear_agent.store import legacy

    db_path = Path(path) / edb.DB_FILE
    if not db_path.exists():
        return legacy.read_legacy_manifest(Path(path))
    db = edb.connect(db_path, timeout_s=5.0, readonly=True)
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
        "tokenizers": json.loads(meta.get("tokenizers", "[]")),
    }
