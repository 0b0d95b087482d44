"""The embedded store's ANN parts as derived state under the one freshness rule.

The parts themselves are files listed in the commit that records them (``ann:{collection}``
in the meta table, each part with the stamp it was built at: :mod:`gear_agent.store.ann`),
and exact by construction: vector rows are append-only and never reused, so a part over rows
``start..stop`` stays right for every later commit of the same index (a deleted row is a dead
row, which every search skips). What goes out of date is their *coverage*: rows added since
the last part are searched exactly until a part covers them.

:class:`AnnParts` brings that coverage up to date by
:func:`~gear_agent.store.changes.bring_up_to_date`, as the PPR graph, the SiReRAG pool and the
caches are: its :attr:`AnnParts.stamp` is the commit this process last brought them to, and a
new stamp, of any process's commit, runs its update. That update reads the rows past the
parts' coverage, not the ids the feed lists (``reads_feed = False``: a write run of a million
passages would list a million ids to ignore): it drops the listed parts that cannot be used
(missing, failing their checksum, built for another index: what a rolled-back index or another
index in the same folder leaves) and builds the pieces the plan asks for over the rows past
the rest (:func:`~gear_agent.store.ann.plan_parts`). Each piece is committed as it finishes,
with progress, so an interrupted build resumes.

When: on the write path (:meth:`EmbeddedStore.maintain`, which every write run ends with:
``gear index``, a sync, an OpenIE import, an extraction, a migration) and by ``gear check
--repair``. A process that only reads never builds parts: a reader may hold a read-only
index, a build takes minutes at a million rows and would stall the query that found it due,
and it would wait on the lock of the writer whose run is still going; the rows past the
parts are searched exactly meanwhile (the same answers, slower), and the next write run of
any process takes the changes since its own stamp.

Example:
    >>> store.maintain(progress)  # doctest: +SKIP
    >>> store.knows(store.ann_parts.stamp)  # the commit it was last brought to  # doctest: +SKIP
    True
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
    reads_feed = False
    """Brought up to date from the rows past the parts' coverage, not from the ids the feed
    lists: any new stamp runs :meth:`rebuild`, which keeps every part that still loads."""

    def can_apply(self, changes: Changes) -> bool:
        return changes.complete

    def apply(self, store: object, changes: Changes) -> None:
        """As :meth:`rebuild` (the parts cover rows, and rows are append-only)."""
        self.rebuild(store, changes.generation)

    def rebuild(self, store: object, generation: int) -> None:
        """Drop the listed parts that cannot be used (none, unless one is missing, fails its
        checksum or was built for another index), then build the pieces the plan asks for over
        the rows past the rest (none when the rows added since stay in the tail)."""
        for coll in self.collections:
            self._build(coll)

    # ---- building -----------------------------------------------------------------------
    def _build(self, coll: RecordCollection) -> None:
        """The pieces of ``coll``, each in its own commit (kept as it finishes)."""
        written: list[str] = []
        drop_unusable = True
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
