"""Indexes in the previous embedded format (``CURRENT`` + ``gen-NNNNNN/`` folders): ``gear migrate``.

The store does not open them: opening one is a one-line error naming ``gear migrate``,
which converts it, not rebuilds it: the live generation's records, extraction marks and
vectors (no re-embedding) are copied into the SQLite format in one commit, and which
generation it came from is recorded. The old folders are left exactly as they were
(``gear check`` mentions them; delete them by hand once the new index serves you). A
crash during migration leaves no committed state, and migrating again starts over.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gear_agent.embedding.base import Embedder
from gear_agent.store.base import IndexCorruptError, ModelMismatchError, StoreError
from gear_agent.store.embedded import generations as gen
from gear_agent.store.embedded.db import DB_FILE
from gear_agent.store.embedded.manifest import has_previous_format
from gear_agent.types import Passage, Triple


def migrate(root: Path, embedder: Embedder, tokenizer: str = "standard") -> dict[str, int]:
    """Convert the previous-format index at ``root`` into this format, in place (one commit);
    returns the counts copied.

    ``embedder`` only names the model (nothing is embedded): a
    :class:`~gear_agent.embedding.base.NamedEmbedder` of the manifest's model will do.

    Raises:
        StoreError: ``root`` holds no previous-format index (or one already migrated).
        IndexCorruptError: its files cannot be read (they are left untouched).
        ModelMismatchError: ``embedder`` is not the model the index was built with.
    """
    from gear_agent.store.embedded.store import EmbeddedStore

    root = Path(root)
    if not has_previous_format(root):
        where = "already has an index.sqlite" if (root / DB_FILE).exists() else "holds no CURRENT file"
        raise StoreError(f"nothing to migrate at {root}: it {where}")
    try:
        live = gen.current_generation(root)
        if live is None:
            raise StoreError(f"nothing to migrate at {root}: it holds no CURRENT file")
        manifest = gen.read_json(live / gen.MANIFEST)
        passage_rows = gen.read_jsonl(live / "passages.jsonl")
        triple_rows = gen.read_jsonl(live / "triples.jsonl")
        passage_vectors = gen.read_array(live / "passage_vectors.npy", embedder.dimension)
        triple_vectors = gen.read_array(live / "triple_vectors.npy", embedder.dimension)
    except (OSError, IndexCorruptError) as exc:
        raise IndexCorruptError(
            f"the previous-format index at {root} cannot be read for migration ({exc}); "
            "its files were left untouched") from exc
    if manifest.get("embedding_model") != embedder.name or manifest.get("dimension") != embedder.dimension:
        raise ModelMismatchError(
            f"index at {root} was built with embedding model {manifest.get('embedding_model')!r} "
            f"(dimension {manifest.get('dimension')}); the configured model is {embedder.name!r} "
            f"(dimension {embedder.dimension}). Set GEAR_EMBEDDING_MODEL={manifest.get('embedding_model')} "
            "to use this index.")
    if len(passage_vectors) != len(passage_rows) or len(triple_vectors) != len(triple_rows):
        raise IndexCorruptError(f"{live}: vector counts do not match record counts; its files were left untouched")
    passages = [Passage(r["id"], r["title"], r["text"], r.get("source", ""), r.get("metadata") or {})
                for r in passage_rows]
    triples = [Triple(r["id"], r["subject"], r["predicate"], r["object"], r["passage_id"]) for r in triple_rows]
    target = root / DB_FILE
    created = [p for p in (target, target.with_name(f"{DB_FILE}-wal"), target.with_name(f"{DB_FILE}-shm"),
                           root / "passage.vec", root / "triple.vec") if not p.exists()]
    try:
        store = EmbeddedStore(root, embedder, tokenizer=tokenizer)
        try:
            with store.transaction():
                store.import_with_vectors(
                    passages, np.asarray(passage_vectors, dtype=np.float32),
                    [bool(r.get("extracted", False)) for r in passage_rows],
                    triples, np.asarray(triple_vectors, dtype=np.float32))
                store.db.set_meta("migrated_from", live.name)
            store.maintain()
        finally:
            store.close()
    except BaseException:  # the files this migration created (the old ones are untouched)
        for leftover in created:
            leftover.unlink(missing_ok=True)
        raise
    return {"passages": len(passages), "triples": len(triples)}
