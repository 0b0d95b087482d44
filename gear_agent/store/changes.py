"""Commit generations, stamps and the change feed: how derived state names the commit it reflects.

Every commit a store makes gets the next **generation** (1, 2, ...; 0 is an empty store).
A generation alone is not unique: an index rolled back to an older copy of its files
counts the same numbers again for other commits, and a new index in the same folder
starts again at 1. So derived state records a :class:`Stamp`: the index's **id** (random,
made when the index is created), the generation, and a **digest of the commit** (of its
record in the commit log, which holds a random token per commit). :meth:`Store.stamp`
gives the stamp of the commit a store reads, :meth:`Store.knows` whether a stamp names a
commit of this index's history (then :meth:`Store.changes_since` leads from it to now).
Whatever is computed from a store (the PPR graph and its phrase ANN, a cache beside the
index) records the stamp it reflects and is brought up to date by one rule,
:func:`bring_up_to_date`: equal stamps are fresh, a known stamp takes the changes since,
anything else is rebuilt (compared with the store). It is never judged fresh by counting
rows (a delete followed by an add of as many records leaves every count the same) nor by
a generation number alone.

Its users: the PPR graph and its phrase ANN, the SiReRAG pool, the embedded store's ANN
parts (:mod:`gear_agent.store.embedded.ann_parts`) and live node rows
(:class:`~gear_agent.store.embedded.nodes.LiveNodes`), Elasticsearch's expansion cache,
passage vectors and recent triple documents (docs/storage.md, "The freshness table").
The embedded BM25 segments need no rule: they are written in the commit that changes their
rows. SiReRAG nodes lose deleted passages in the commit that deletes them.

Example:
    >>> changes = Changes(since=3, generation=5, passages_added=("p-2",), passages_removed=("p-1",))
    >>> changes.removes_anything, changes.empty
    (True, False)
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Changes:
    """What the commits after generation ``since`` up to ``generation`` did.

    Attributes:
        since: The generation the changes start after.
        generation: The generation they bring a reader to.
        passages_added: Ids of passages stored now that were not at ``since``.
        passages_removed: Ids of passages stored at ``since`` that are deleted now.
        triples_added: Ids of triples stored now that were not at ``since``.
        triples_removed: Ids of triples stored at ``since`` that are deleted now (a
            backend that cannot list them leaves them out: a removed passage takes its
            triples with it, so a reader that sees ``passages_removed`` rebuilds).
        complete: False when the store no longer knows the changes since ``since`` (a
            generation from another index, or before the feed began): rebuild instead.
    """

    since: int
    generation: int
    passages_added: tuple[str, ...] = ()
    passages_removed: tuple[str, ...] = ()
    triples_added: tuple[str, ...] = ()
    triples_removed: tuple[str, ...] = ()
    complete: bool = True

    @property
    def removes_anything(self) -> bool:
        """True when a passage or triple present at ``since`` is gone."""
        return bool(self.passages_removed or self.triples_removed)

    @property
    def empty(self) -> bool:
        """True when nothing was added or removed (the generation may still have moved)."""
        return not (self.passages_added or self.triples_added or self.removes_anything)


@dataclass(frozen=True)
class Stamp:
    """The exact state of an index that derived state reflects.

    Attributes:
        index_id: The index's random id, made when it was created ("" for a backend or an
            index that has none: then only an equal stamp is trusted).
        generation: The generation of the commit.
        commit: A digest of that commit's record ("" for generation 0, or a backend that
            keeps no commit log).

    Example:
        >>> stamp = Stamp("9f1c", 17, "a1b2")
        >>> Stamp.from_dict(stamp.as_dict()) == stamp, str(stamp)
        (True, 'index 9f1c, generation 17, commit a1b2')
    """

    index_id: str
    generation: int
    commit: str = ""

    def as_dict(self) -> dict[str, Any]:
        """The stamp as JSON-ready values (what a derived file records)."""
        return {"index_id": self.index_id, "generation": self.generation, "commit": self.commit}

    @classmethod
    def from_dict(cls, value: Mapping[str, Any] | None) -> Stamp | None:
        """The stamp :meth:`as_dict` wrote, or None for a file that records none (or a bad one)."""
        if not isinstance(value, Mapping):
            return None
        try:
            return cls(str(value["index_id"]), int(value["generation"]), str(value["commit"]))
        except (KeyError, TypeError, ValueError):
            return None

    def __str__(self) -> str:
        return f"index {self.index_id or '?'}, generation {self.generation}, commit {self.commit or '-'}"


class Feed(Protocol):
    """What :func:`bring_up_to_date` asks of a store: every :class:`~gear_agent.store.base.Store`
    is one (this module sits below the store's interface, so it names only these)."""

    def stamp(self) -> Stamp:
        """The exact state the store reads."""
        ...

    def knows(self, stamp: Stamp) -> bool:
        """Whether ``stamp`` names a commit of this index's history."""
        ...

    def changes_since(self, generation: int) -> Changes:
        """What the commits after ``generation`` added and removed."""
        ...


class Derived(Protocol):
    """Something computed from a store that knows which commit it reflects.

    :func:`bring_up_to_date` sets :attr:`stamp` after :meth:`apply` or :meth:`rebuild`.
    """

    stamp: Stamp | None
    """The store state this reflects (None: unknown, rebuild)."""

    # Optional: ``reads_feed = False`` on a derived structure that is brought up to date from
    # the store's own record of what it covers, not from the ids the feed lists (the embedded
    # ANN parts: the rows past their coverage; the live node rows: the feed lists no nodes).
    # Its :meth:`rebuild` is then what a new stamp runs, whatever the stamp, and the feed is
    # not read (listing a million ids added to ignore them).

    def apply(self, store: Any, changes: Changes) -> None:
        """Take in ``changes`` (complete, adds only, or removals it can handle)."""
        ...

    def rebuild(self, store: Any, generation: int) -> None:
        """Compute everything again from ``store`` (a :class:`~gear_agent.store.base.Store`) as
        of ``generation`` (it may reuse what it holds that the store still has: ids name contents)."""
        ...

    def can_apply(self, changes: Changes) -> bool:
        """Whether :meth:`apply` can take these changes (else :meth:`rebuild`)."""
        ...


def bring_up_to_date(derived: Derived, store: Feed) -> bool:
    """The one freshness rule: compare stamps; apply the changes since, or rebuild.

    Equal stamps: fresh. A stamp of this index's history (:meth:`Store.knows`): the changes
    since its generation are applied, or the state rebuilt where they cannot be. Any other
    stamp (another index in the same folder, a rolled-back index that counted the same
    generation again for other commits, none at all): rebuilt. A derived structure with
    ``reads_feed = False`` is rebuilt at any new stamp (its rebuild keeps what still holds).

    Call it inside ``store.snapshot()`` so the stamp read and the records read are of the
    same commit. Returns True when ``derived`` changed.

    Example:
        >>> with store.snapshot():  # doctest: +SKIP
        ...     bring_up_to_date(graph, store)
    """
    now = store.stamp()
    held = derived.stamp
    if held == now:
        return False
    if held is None or not getattr(derived, "reads_feed", True) or not store.knows(held):
        derived.rebuild(store, now.generation)
    else:
        changes = store.changes_since(held.generation)
        if changes.complete and changes.generation == now.generation and derived.can_apply(changes):
            derived.apply(store, changes)
        else:
            derived.rebuild(store, now.generation)
    derived.stamp = now
    return True


Listener = Callable[[int], None]
"""Called with the new generation after a store object commits (the write path)."""


class Listeners:
    """The in-process listeners of one store object, told after each of its commits.

    A listener that fails is logged and kept: a derived cache must never undo a commit
    that has already happened.
    """

    def __init__(self) -> None:
        self._listeners: list[Listener] = []
        self._lock = threading.Lock()

    def add(self, listener: Listener) -> Callable[[], None]:
        with self._lock:
            self._listeners.append(listener)

        def remove() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return remove

    def __bool__(self) -> bool:
        return bool(self._listeners)

    def notify(self, generation: int) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(generation)
            except Exception:  # the commit stands; the listener catches up at its next query
                logger.exception("a listener of commit %d failed; it catches up at its next use", generation)
