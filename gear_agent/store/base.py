"""The one small interface every index backend implements.

Retrieval, expansion and the agent talk only to :class:`Store`, so a backend
(the embedded default in :mod:`gear_agent.store.embedded.store`, Elasticsearch in
:mod:`gear_agent.store.elasticsearch.store`) can be swapped without touching them.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Container, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

from gear_agent.errors import GearError
from gear_agent.store.changes import Changes, Listeners, Stamp
from gear_agent.store.collections import Passages, Triples, WhereSpec
from gear_agent.types import Collection as CollectionName

__all__ = ["IndexCorruptError", "ModelMismatchError", "Store", "StoreError", "WhereSpec", "split_new"]


class StoreError(GearError, RuntimeError):
    """A store cannot do what was asked; the message says why and what to do."""


class ModelMismatchError(StoreError):
    """The index was built with another embedding model than the one configured."""


class IndexCorruptError(StoreError):
    """An index cannot be read as it is; the message names what is wrong and what to do
    (``gear check``, ``gear check --repair``)."""


def split_new(records: Sequence[Any], stored: Container[str]) -> tuple[list[Any], list[str]]:
    """Records to write (the first of each id that is not stored) and the ids that are
    no-ops, in order: a repeat of an id within the same call counts as existing.

    Example:
        >>> from gear_agent.types import Passage
        >>> a, b = Passage("p-1", "A", "a"), Passage("p-2", "B", "b")
        >>> new, existing = split_new([a, b, a], {"p-2"})
        >>> [p.id for p in new], existing
        (['p-1'], ['p-2', 'p-1'])
    """
    new: list[Any] = []
    existing: list[str] = []
    seen: set[str] = set()
    for record in records:
        if record.id in stored or record.id in seen:
            existing.append(record.id)
        else:
            seen.add(record.id)
            new.append(record)
    return new, existing


class Store(ABC):
    """Passages and triples, with BM25 and vector search over each and an entity graph.

    The store composes its collections (``store.passages``, ``store.triples``:
    :mod:`gear_agent.store.collections`) and owns what is store-wide: commits and their
    generation, the change feed, snapshots, bulk loads, closing. Every triple belongs to
    exactly one passage; deleting a passage deletes its triples and their graph edges.
    Every commit has a generation, and :meth:`changes_since` says what changed after one.

    Optional capabilities are protocols a backend may implement: SiReRAG nodes, a third
    collection ``store.nodes`` (:class:`gear_agent.store.nodes.HasNodes`; both backends
    keep them).
    """

    #: The backend's name in :data:`gear_agent.store.backends.BACKENDS`.
    backend: ClassVar[str] = ""
    #: Name of the embedding model the index was built with.
    embedding_model: str
    #: Dimension of its vectors.
    dimension: int

    @property
    def derived_dir(self) -> Path | None:
        """The folder where caches derived from this index live (the PPR graph), or None
        when the backend keeps no local folder (they are then kept in memory only)."""
        return None

    #: The passages (:class:`~gear_agent.store.collections.Passages`).
    passages: Passages
    #: The triples (:class:`~gear_agent.store.collections.Triples`).
    triples: Triples

    def collection(self, name: CollectionName) -> Passages | Triples:
        """The collection called ``name`` (``"passage"`` or ``"triple"``), for callers that
        pick one by name.

        Raises:
            ValueError: no such collection.
        """
        if name == "passage":
            return self.passages
        if name == "triple":
            return self.triples
        raise ValueError(f"unknown collection {name!r}; expected 'passage' or 'triple'")

    # ---- commits ------------------------------------------------------------
    @abstractmethod
    def generation(self) -> int:
        """The generation of the last commit this store sees: every commit gets the next
        number, 0 is a store nothing was ever written to (:mod:`gear_agent.store.changes`).
        Cheap enough to ask once per query."""

    @abstractmethod
    def changes_since(self, generation: int) -> Changes:
        """What the commits after ``generation`` added and removed (up to :meth:`generation`).

        Example:
            >>> changes = store.changes_since(graph.generation)  # doctest: +SKIP
            >>> changes.passages_added, changes.passages_removed  # doctest: +SKIP
        """

    def index_id(self) -> str:
        """The index's own random id, made when it was created: a new index in the same
        place (or under the same names) gets another one. "" where a backend has none."""
        return ""

    def stamp(self) -> Stamp:
        """The exact state this store reads (:class:`~gear_agent.store.changes.Stamp`):
        what a derived file records and is compared with. Backends with a commit log add
        a digest of the last commit; this default has none."""
        return Stamp(self.index_id(), self.generation())

    def knows(self, stamp: Stamp) -> bool:
        """Whether ``stamp`` names a commit of this index's history up to now, so that
        :meth:`changes_since` of its generation leads from that state to this one. This
        default, without a commit log, knows only its own current stamp."""
        return stamp == self.stamp()

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads inside see one commit, however many land meanwhile (a query's reads
        never mix two commits). Backends that cannot pin a commit read the latest."""
        yield

    def subscribe(self, listener: Callable[[int], None]) -> Callable[[], None]:
        """Call ``listener(generation)`` after each commit this store object makes (the
        write path of derived state kept in this process); returns the unsubscribe call."""
        listeners = self.__dict__.setdefault("_commit_listeners", Listeners())
        return listeners.add(listener)

    def _committed(self, generation: int | Callable[[], int]) -> None:
        """Tell the listeners about a commit (backends call it after each one); a callable
        ``generation`` is asked only when someone listens."""
        listeners = self.__dict__.get("_commit_listeners")
        if listeners is not None and listeners:
            listeners.notify(generation() if callable(generation) else generation)

    def bulk_load(self) -> contextlib.AbstractContextManager[None]:
        """A block of many writes (a whole build): a backend that writes faster with other
        settings while it runs uses them (Elasticsearch: no refresh until the end, see
        :meth:`ElasticsearchStore.bulk_load`). Here: nothing changes."""
        return contextlib.nullcontext()

    def maintain(self, progress: Callable[[str, int, int], None] | None = None) -> None:  # noqa: B027 - optional hook
        """The write path of the derived state the store keeps itself: what every write run
        ends with. The embedded store brings its ANN parts up to date by the one freshness
        rule (:func:`~gear_agent.store.changes.bring_up_to_date`, reporting ``progress(stage,
        done, total)``); a no-op where there is nothing to do (Elasticsearch's copies are
        brought up to date where they are read)."""

    def serving(self) -> None:  # noqa: B027 - optional hook
        """Called by a server that keeps this store open and reads it from several threads
        for weeks (``gear serve``): a backend whose reads trade memory for a faster cold
        start may choose the smaller footprint (the embedded store: SQLite without a memory
        map). A no-op where there is nothing to choose."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources (connections, locks)."""

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
