"""Elasticsearch's change feed: commit generations, a writer lock and deletion records.

Elasticsearch has no transaction that spans documents, so the feed is made of three kinds of
documents in one small index, ``{prefix}-changes`` (:func:`changes_mappings`):

* ``generation``: the **published generation** ``G`` and the generation the feed started
  at (``start``). Readers get it in real time (one ``GET`` per query).
* ``lock``: held by the one writer at a time (made with ``op_type=create``, so a second
  writer waits; a lock whose holder has not renewed it for :data:`LOCK_STALE_S` seconds is
  taken over, so a killed writer blocks nobody for long).
* ``deleted``: one per removed passage or triple id, with the generation that removed it
  and the generation its document was written at (``born``).

A writer holds the lock, stamps every passage and triple it writes with ``G + 1`` (the
``generation`` field), writes the deletion records of what it deletes *before* deleting it,
refreshes, and only then publishes ``G + 1``. So every document of a published generation
is searchable, and :meth:`ElasticsearchStore.changes_since` lists the ids with
``since < generation <= G`` (added) and the deletion records with ``since < generation <= G``
and ``born <= since`` (removed: present at ``since``, gone now). A writer killed half-way
leaves documents stamped ``G + 1`` unpublished; the next writer writes ``G + 1`` too and
publishes them with its own, once its feed's ``recover`` (the store's roll-back of the syncs
the dead writer left unfinished, :mod:`gear_agent.store.elasticsearch.sync`) has run on
taking the lock over. Inside :meth:`ElasticsearchStore.bulk_load` the lock is held for the
whole block and the one generation is published when it ends.

An index made before the feed has documents without the field: they existed when the feed
began (its ``start``, the indexing statistics' count then, as the generation used to be),
so changes since a generation before ``start`` are "incomplete" and a reader rebuilds.

Example:
    >>> deleted_query(3, 5)["bool"]["filter"][0]
    {'term': {'kind': 'deleted'}}
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from gear_agent.store.base import StoreError
from gear_agent.store.elasticsearch.client import import_elasticsearch, translate_errors

if TYPE_CHECKING:  # pragma: no cover - typing only
    from elasticsearch import Elasticsearch

GENERATION_FIELD = "generation"
"""The field every passage and triple document carries: the generation that wrote it."""
RETIRED_FIELD = "retired"
"""The generation that removed a document a sync replaced (:mod:`gear_agent.store.elasticsearch.sync`):
hidden from readers once it is published, deleted after."""
LOCK_STALE_S = 300.0
"""A lock not renewed for this long is taken over (its writer died)."""
LOCK_WAIT_S = 600.0
"""How long a writer waits for another writer's lock before it gives up with an error."""
_RENEW_S = 30.0
_GENERATION_ID = "generation"
_LOCK_ID = "lock"


def changes_mappings(model: str) -> dict[str, Any]:
    """The mapping of ``{prefix}-changes`` (``model``: the store's, as on its other indices)."""
    keyword, long = {"type": "keyword"}, {"type": "long"}
    return {
        "dynamic": "strict",
        "_meta": {"gear_agent": {"schema_version": 1, "collection": "changes", "embedding_model": model}},
        "properties": {
            "kind": keyword, "generation": long, "start": long, "owner": keyword,
            "at": {"type": "double"}, "collection": keyword, "doc_id": keyword, "born": long,
        },
    }


def added_query(since: int, now: int) -> dict[str, Any]:
    """Documents written by the generations after ``since`` up to ``now``."""
    return {"range": {GENERATION_FIELD: {"gt": since, "lte": now}}}


def deleted_query(since: int, now: int) -> dict[str, Any]:
    """Deletion records of documents present at ``since`` and removed by ``now``."""
    return {"bool": {"filter": [
        {"term": {"kind": "deleted"}},
        {"range": {"generation": {"gt": since, "lte": now}}},
        {"range": {"born": {"lte": since}}},
    ]}}


def visible_at(generation: int) -> dict[str, Any]:
    """Documents written by generation ``generation`` or before (or before the feed) and not
    retired by it: what a search at ``generation`` may return. Said as "not written later,
    not retired", ranges that match only the few documents of later commits or waiting to be
    deleted, so the filter costs next to nothing (a range matching every document would be
    evaluated over all of them by every kNN search)."""
    return {"bool": {"must_not": [{"range": {GENERATION_FIELD: {"gt": generation}}},
                                  {"range": {RETIRED_FIELD: {"lte": generation}}}]}}


BY_RECORD: tuple[tuple[str, str], ...] = (("collection", "asc"), ("doc_id", "asc"))
"""Sort of a walk over deletion records."""


def deletion_record(collection: str, doc_id: str, generation: int, born: int) -> tuple[str, dict[str, Any]]:
    """The ``(_id, _source)`` of the record that ``generation`` removed ``doc_id``."""
    return f"{collection}:{doc_id}", {
        "kind": "deleted", "collection": collection, "doc_id": doc_id,
        "generation": generation, "born": born,
    }


class ChangeFeed:
    """The published generation and the writer lock of one store's ``{prefix}-changes``.

    Args:
        client: The store's client.
        index: ``{prefix}-changes``.
        clock: Seconds since the epoch (inject in tests).
        sleep: The wait while another writer holds the lock.
        lock_stale_s: See :data:`LOCK_STALE_S`.
        lock_wait_s: See :data:`LOCK_WAIT_S`.
    """

    def __init__(
        self, client: Elasticsearch, index: str, *, clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep, lock_stale_s: float = LOCK_STALE_S,
        lock_wait_s: float = LOCK_WAIT_S,
    ) -> None:
        self.client, self.index = client, index
        self.clock, self.sleep = clock, sleep
        self.lock_stale_s, self.lock_wait_s = lock_stale_s, lock_wait_s
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.start = 0
        """The generation the feed began at: changes since an earlier one are unknown."""
        self._held = 0  # re-entrant depth of the lock
        self._lock_version: tuple[int, int] | None = None  # (seq_no, primary_term) of our lock
        self._renewed = 0.0
        self._writing: int | None = None  # the generation being written while the lock is held
        self._thread: int | None = None  # the thread writing it
        self._wrote = False
        self._took_over = False  # the lock was taken from a writer that died
        self.recover: Callable[[int], None] | None = None
        """Called with the published generation when this writer took over a dead writer's
        lock, before anything is written or published (its unfinished work is settled)."""

    # ---- opening ----------------------------------------------------------------------
    def open(self, start: Callable[[], int]) -> None:
        """Make the generation document when there is none, with ``start()`` as both the
        published generation and the feed's start; read the start."""
        es = import_elasticsearch()
        first = start()
        try:
            with translate_errors(f"starting the change feed in {self.index!r}"):
                self.client.create(index=self.index, id=_GENERATION_ID, refresh=True, document={
                    "kind": "generation", "generation": first, "start": first})
            self.start = first
        except StoreError as err:
            if not isinstance(err.__cause__, es.ConflictError):
                raise
            self.start = int(self._generation_source()["start"])

    def _generation_source(self) -> dict[str, Any]:
        with translate_errors(f"reading the generation from {self.index!r}"):
            return dict(self.client.get(index=self.index, id=_GENERATION_ID)["_source"])

    def published(self) -> int:
        """The last published generation (a real-time ``GET``)."""
        return int(self._generation_source()["generation"])

    # ---- writing ----------------------------------------------------------------------
    @contextmanager
    def writing(self) -> Iterator[int]:
        """Hold the writer lock; yields the generation to stamp on what is written. The
        outermost block publishes it when it ends (also by an exception: what landed is
        stored), if anything was written (:meth:`wrote`). Re-entrant."""
        if self._held:
            self._held += 1
            self.renew()
            try:
                yield self._writing  # type: ignore[misc]
            finally:
                self._held -= 1
            return
        self._acquire()
        self._held, self._wrote, self._thread = 1, False, threading.get_ident()
        try:
            self._writing = self.published() + 1
            if self._took_over and self.recover is not None:
                self.recover(self._writing - 1)
            self._took_over = False
            yield self._writing
        finally:
            try:
                if self._wrote and self._writing is not None:
                    self.renew()  # renewed within 30 s, or now: never publish over a writer that took it
                    self._publish(self._writing)
            finally:
                self._held, self._writing, self._wrote, self._thread = 0, None, False, None
                self._release()

    @property
    def pending(self) -> int | None:
        """The generation being written (published when the lock is let go), or None."""
        return self._writing

    @property
    def writing_here(self) -> bool:
        """Whether this thread is the one writing (its searches see what it has not published;
        other threads of the process read the published generation, as other processes do)."""
        return self._writing is not None and self._thread == threading.get_ident()

    def wrote(self) -> None:
        """Note that the generation being written changed something (it will be published);
        the lock is renewed when it is due (a long write calls this as it goes)."""
        self._wrote = True
        self.renew()

    def _publish(self, generation: int) -> None:
        with translate_errors(f"publishing generation {generation} in {self.index!r}"):
            self.client.index(index=self.index, id=_GENERATION_ID, document={
                "kind": "generation", "generation": generation, "start": self.start})

    def _lock_document(self) -> dict[str, Any]:
        return {"kind": "lock", "owner": self.owner, "at": self.clock()}

    def _acquire(self) -> None:
        es = import_elasticsearch()
        waited, pause = 0.0, 0.05
        while True:
            try:
                response = self.client.create(index=self.index, id=_LOCK_ID, document=self._lock_document())
                self._lock_version = (int(response["_seq_no"]), int(response["_primary_term"]))
                self._renewed = self.clock()
                return
            except es.ConflictError:
                pass
            except es.ApiError as err:
                with translate_errors(f"taking the writer lock in {self.index!r}"):
                    raise err
            holder = self._holder()
            if holder is None:
                continue  # let go meanwhile
            source, seq_no, term = holder
            age = self.clock() - float(source.get("at", 0.0))
            if age > self.lock_stale_s:
                try:  # its writer died: take it over (only if nobody renewed or took it meanwhile)
                    self.client.delete(index=self.index, id=_LOCK_ID, if_seq_no=seq_no, if_primary_term=term)
                    self._took_over = True
                except (es.ConflictError, es.NotFoundError):
                    pass
                continue
            if waited >= self.lock_wait_s:
                raise StoreError(
                    f"the index is being written by {source.get('owner')!r} (lock in {self.index!r}, "
                    f"renewed {age:.0f} s ago); waited {waited:.0f} s. Try again when it is done; a "
                    f"lock its writer stopped renewing is taken over after {self.lock_stale_s:.0f} s."
                )
            self.sleep(pause)
            waited += pause
            pause = min(pause * 2, 2.0)

    def _holder(self) -> tuple[dict[str, Any], int, int] | None:
        es = import_elasticsearch()
        try:
            found = self.client.get(index=self.index, id=_LOCK_ID)
        except es.NotFoundError:
            return None
        return dict(found["_source"]), int(found["_seq_no"]), int(found["_primary_term"])

    def renew(self, *, force: bool = False) -> None:
        """Tell waiting writers this one is alive, when due (every 30 s) or ``force``d.

        Raises:
            StoreError: another writer took the lock over (this one was silent for longer
                than :data:`LOCK_STALE_S`); what this one wrote stays unpublished until the
                other publishes.
        """
        if self._lock_version is None or (not force and self.clock() - self._renewed < _RENEW_S):
            return
        es = import_elasticsearch()
        seq_no, term = self._lock_version
        try:
            response = self.client.index(index=self.index, id=_LOCK_ID, document=self._lock_document(),
                                         if_seq_no=seq_no, if_primary_term=term)
        except es.ConflictError as err:
            self._lock_version = None
            raise StoreError(
                f"this writer lost its lock in {self.index!r} to another writer (silent for over "
                f"{self.lock_stale_s:.0f} s); what it wrote is published with that writer's commit. "
                "Run the write again."
            ) from err
        except es.ApiError as err:
            with translate_errors(f"renewing the writer lock in {self.index!r}"):
                raise err
        self._lock_version = (int(response["_seq_no"]), int(response["_primary_term"]))
        self._renewed = self.clock()

    def _release(self) -> None:
        es = import_elasticsearch()
        if self._lock_version is None:
            return
        seq_no, term = self._lock_version
        self._lock_version = None
        try:  # only our own lock: one taken over meanwhile belongs to another writer now
            self.client.delete(index=self.index, id=_LOCK_ID, if_seq_no=seq_no, if_primary_term=term)
        except (es.ConflictError, es.NotFoundError):
            pass
