"""The embedded store's ANN parts as derived state under the one freshness rule.

The parts themselves are files listed in the commit that records them (``ann:{collection}``
in the meta table, each part with the stamp it was built at: :mod:`gear_agent.store.ann`),
and exact by construction: vector rows are append-only and never reused, so a part over rows
``start..stop`` stays right for every later commit of the same index (a deleted row is a dead
row, which every search skips). What goes out of date is their *coverage*: rows added since
the last part are searched exactly until a part covers them.

:class:`AnnParts` brings that coverage up to date by
:func:`~gear_agent.store.changes.bring_up_to_date`, as the PPR graph, the SiReRAG pool and the
caches are: its :attr:`AnnParts.stamp` is the commit this process last brought them to; a stamp
of this index's history takes the changes since (the pieces the plan asks for over the rows
added: :func:`~gear_agent.store.ann.plan_parts`), anything else (a first use in this process,
a rolled-back index, another index in the same folder) is a rebuild, which first drops the
listed parts that cannot be used (missing, failing their checksum, built for another index)
and then builds the rest. Each piece is committed as it finishes, with progress, so an
interrupted build resumes.

When: on the write path (:meth:`EmbeddedStore.maintain`, which every write run ends with:
``gear index``, a sync, an OpenIE import, an extraction, a migration) and by ``gear check
--repair``. A process that only reads never builds parts: a reader may hold a read-only
index, a build takes minutes at a million rows and would stall the query that found it due,
and it would wait on the lock of the writer whose run is still going; the rows past the
parts are searched exactly meanwhile (the same answers, slower), and the next write run of
any process takes the changes since its own stamp.

Example:
    >>> store.maintain(progress)  # doctest: +SKIP
    >>> store.ann_parts.stamp == store.stamp()  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Protocol

from gear_agent.store import ann as ann_mod
from gear_agent.store.changes import Changes, Feed, Stamp, bring_up_to_date
from gear_agent.store.embedded.collection import RecordCollection
from gear_agent.store.embedded.state import States

__all__ = ["AnnParts"]


class AnnHost(Protocol):
    """What :class:`AnnParts` uses of its store (:class:`~gear_agent.store.embedded.store.EmbeddedStore`)."""

    states: States

    def transaction(self) -> AbstractContextManager[None]: ...


class AnnParts:
    """The ANN coverage of an embedded store's passages and triples (see the module).

    Args:
        store: The store whose parts these are.
        collections: Its passage and triple collections.
    """

    def __init__(self, store: AnnHost, collections: Sequence[RecordCollection]) -> None:
        self.store, self.collections = store, tuple(collections)
        self.stamp: Stamp | None = None
        self._progress: ann_mod.AnnProgress | None = None
        self._written: list[str] = []

    def update(self, feed: Feed, progress: ann_mod.AnnProgress | None = None) -> list[str]:
        """Bring the parts to ``feed``'s latest commit (:func:`bring_up_to_date`); the part
        files written. ``progress(stage, rows covered, rows)`` as pieces are built."""
        self._progress, self._written = progress, []
        try:
            bring_up_to_date(self, feed)
            return list(self._written)
        finally:
            self._progress = None

    # ---- Derived ------------------------------------------------------------------------
    def can_apply(self, changes: Changes) -> bool:
        """Every complete feed: added rows get pieces, removed rows are dead rows already."""
        return changes.complete

    def apply(self, store: object, changes: Changes) -> None:
        """Build the pieces the plan asks for (none when the rows added since stay in the tail)."""
        for coll in self.collections:
            self._build(coll, drop_unusable=False)

    def rebuild(self, store: object, generation: int) -> None:
        """Drop the listed parts that cannot be used, then build what the plan asks for."""
        for coll in self.collections:
            self._build(coll, drop_unusable=True)

    # ---- building -----------------------------------------------------------------------
    def _build(self, coll: RecordCollection, drop_unusable: bool) -> None:
        """The pieces of ``coll``, each in its own commit (kept as it finishes)."""
        written: list[str] = []
        while True:
            with self.store.transaction():
                state = self.store.states.writer()
                view = state.views[coll.name]
                if drop_unusable and coll.drop_unusable_ann(view):  # committed, then built again
                    drop_unusable = False
                    continue
                files = coll.update_ann(view, state.stamp, self._progress)
            if not files or set(files) & set(written):  # a part that does not load: once per update
                break
            written.extend(files)
        self._written.extend(written)
