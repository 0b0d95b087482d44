"""Keeping the embedded store's derived caches current: the ANN parts.

Called inside a write transaction (:meth:`EmbeddedStore.maintain`): builds a new ANN part
when the rows past the saved parts exceed :data:`~gear_agent.store.ann.TAIL_MAX` (folding
small trailing parts into it), records the parts with their checksums in the meta table,
and removes part files no committed state refers to (they are superseded caches).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gear_agent.store import ann as ann_mod
from gear_agent.store.embedded_db import set_meta

if TYPE_CHECKING:
    from gear_agent.store.embedded import EmbeddedStore


def update_ann(store: EmbeddedStore) -> list[str]:
    """Build what the ANN plan asks for; returns the files written."""
    written = []
    for collection in ("passage", "triple"):
        index = store._ann[collection]
        rows = store._rows[collection]
        plan = ann_mod.plan_parts(index.parts, rows)
        if plan is None:
            continue
        kept, start = plan
        matrix = store._vectors[collection].view(rows)
        part = ann_mod.build_part(store.root, collection, matrix, start, rows)
        written.append(part.file)
        set_meta(store._db, f"ann:{collection}", ann_mod.dump_parts([*kept, part]))
    return written


def unreferenced_parts(store: EmbeddedStore) -> list[str]:
    """ANN files in the folder that the committed meta does not list."""
    listed = set()
    for collection in ("passage", "triple"):
        text = store._db.execute("SELECT value FROM meta WHERE key = ?", (f"ann:{collection}",)).fetchone()
        listed.update(p.file for p in ann_mod.parse_parts(text[0] if text else None))
    return sorted(p.name for p in store.root.glob(f"*{ann_mod.SUFFIX}") if p.name not in listed)


def remove_superseded(store: EmbeddedStore) -> None:
    """Delete ANN part files and temporaries no committed state refers to (caller holds the lock)."""
    for name in unreferenced_parts(store):
        (store.root / name).unlink(missing_ok=True)
    for leftover in store.root.glob(".tmp-*"):
        if leftover.is_file():
            leftover.unlink(missing_ok=True)
