"""What the embedded store looks like at one commit, per thread: states, pins, the feed.

A :class:`State` is the store as of one commit: its generation and stamp (the index's id,
the generation, a digest of the commit's record: :func:`stamp_at`), each collection's
:class:`~gear_agent.store.embedded.collection.View` (rows, live count, dead rows, opened ANN parts)
and the BM25 tokenizers. :class:`States` keeps the latest one (reloaded when another
connection committed, checked at most every :data:`SYNC_INTERVAL_S`), the one a thread
pinned for a query (:meth:`States.pinned`: SQLite reads of that thread see the same
commit), and the writer's own inside its transaction; it answers the change feed from
the commit log (:meth:`States.changes_since`) and caches filter rows per commit.

A state is loaded inside one SQLite read transaction (:meth:`States.at_read_commit`), so
its generation, row counts and dead rows are of one commit; and a read that combines a
state with SQLite reads (filter rows, postings, ids) runs pinned, so both are of the same
commit (the store pins one per call outside a snapshot). Without either, a reader
searching while another connection replaced a source's passages could take the old
version's rows as dead and the new ones as not yet there: no hits at all.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import xxhash

from gear_agent.filters import Where
from gear_agent.store.changes import Changes, Stamp
from gear_agent.store.embedded.collection import RecordCollection, View
from gear_agent.store.embedded.db import INDEX_ID_KEY, Database
from gear_agent.store.embedded.where_sql import where_sql

SYNC_INTERVAL_S = 0.005
"""How stale a read of the state alone (an unfiltered count, a view) outside a snapshot may
be: it looks for other processes' commits at most this often (one query makes dozens of
store calls). A read that also reads SQLite pins the commit its read transaction sees."""


def stamp_at(db: Database, generation: int, index_id: str) -> Stamp:
    """The stamp of commit ``generation`` as ``db`` (this thread's connection) holds it: the
    digest is xxh3-64 over the commit's record in the commit log (generation, row counts,
    time, random token), "" where the log has no record of it (generation 0, or a commit
    made before the log began)."""
    row = db.one("SELECT * FROM commits WHERE generation=?", (generation,)) if generation > 0 else None
    digest = "" if row is None else xxhash.xxh3_64_hexdigest("|".join(map(str, row)).encode("utf-8"))
    return Stamp(index_id, generation, digest)


@dataclass(frozen=True)
class State:
    """The store as of one commit: its generation and stamp, each collection's view, the
    tokenizers."""

    generation: int
    views: dict[str, View]
    tokenizers: tuple[str, ...]
    stamp: Stamp


class States:
    """The states of one store (see the module docstring).

    Args:
        db: The store's database.
        collections: Its passage and triple collections, by name.
        verify: Verify vector chunks before a state uses their rows.
    """

    def __init__(self, db: Database, collections: Mapping[str, RecordCollection], verify: bool) -> None:
        self.db, self.collections, self.verify = db, collections, verify
        self._latest: State | None = None
        self._checked_at = 0.0
        self._lock = threading.RLock()
        self._local = threading.local()
        self._where_cache: dict[tuple[int, str, str], np.ndarray] = {}

    def load(self, generation: int, previous: State | None) -> State:
        """The store as this thread's connection sees it (at ``generation``)."""
        meta = self.db.meta_like("rows:%", "count:%", "ann:%", "tokenizers", INDEX_ID_KEY)
        views = {name: coll.load_view(generation, meta, previous.views[name] if previous else None, self.verify)
                 for name, coll in self.collections.items()}
        stamp = stamp_at(self.db, generation, str(meta.get(INDEX_ID_KEY) or ""))
        return State(generation, views, tuple(json.loads(meta.get("tokenizers") or "[]")), stamp)

    def sync(self, force: bool = False) -> State:
        """The latest state, reloaded when another connection committed since (from one
        read transaction: :meth:`at_read_commit`)."""
        state = self._latest
        now = time.monotonic()
        if state is not None and not force and now - self._checked_at < SYNC_INTERVAL_S:
            return state
        self._checked_at = now
        if state is not None and self.db.generation() == state.generation:
            return state
        with self.db.reading():
            return self.at_read_commit()

    def at_read_commit(self) -> State:
        """(Inside :meth:`Database.reading`.) The state of the commit this thread's read
        transaction sees: the latest when it is that commit, else loaded in this transaction
        (its generation, row counts and dead rows of that one commit, never the counts of one
        and the deletions of a later one) and kept as the latest when newer."""
        with self._lock:
            generation, latest = self.db.generation(), self._latest
            if latest is not None and latest.generation == generation:
                return latest
            loaded = self.load(generation, latest)
            if not self.db.writing_here() and (latest is None or loaded.generation > latest.generation):
                self._latest = loaded  # never a writer's uncommitted state
            return loaded

    def current(self, fresh: bool = False) -> State:
        """The state this thread reads: its pinned commit, the writer's, or the latest
        (``fresh``: looked up now, not up to :data:`SYNC_INTERVAL_S` old)."""
        pinned = getattr(self._local, "state", None)
        if pinned is not None:
            return pinned
        if self.db.writing_here():
            return self.writer()
        return self.sync(force=fresh)

    def writer(self) -> State:
        """The writer's state inside its transaction (loaded once per transaction)."""
        state = getattr(self._local, "writer", None)
        if state is None:
            state = self._local.writer = self.load(self.db.generation(), self._latest)
        return state

    def forget_writer(self) -> None:
        self._local.writer = None

    @contextmanager
    def pinned(self) -> Iterator[None]:
        """This thread's reads see one commit inside the block (re-entrant): one SQLite read
        transaction, and the state of its commit."""
        if getattr(self._local, "state", None) is not None or self.db.writing_here():
            yield
            return
        with self.db.reading():
            self._local.state = self.at_read_commit()
            try:
                yield
            finally:
                self._local.state = None

    def is_pinned(self) -> bool:
        return getattr(self._local, "state", None) is not None

    def knows(self, stamp: Stamp) -> bool:
        """Whether ``stamp`` names a commit of this index up to the state this thread reads:
        the same index id, a generation not past it, and that commit's digest."""
        state = self.current()
        if not stamp.index_id or stamp.index_id != state.stamp.index_id or stamp.generation > state.generation:
            return False
        return stamp_at(self.db, stamp.generation, stamp.index_id) == stamp

    def changes_since(self, generation: int) -> Changes:
        """What the commits after ``generation`` added and removed, from the commit log:
        rows are never reused, so the records added are the live rows past the row counts
        ``generation`` left, and the removed ones the rows it held that died since."""
        state = self.current()
        now = state.generation
        if generation >= now:
            return Changes(generation, now, complete=generation == now)
        if generation == 0:
            before: tuple[int, int] | None = (0, 0)
        else:
            found = self.db.one("SELECT passage_rows, triple_rows FROM commits WHERE generation=?", (generation,))
            before = None if found is None else (int(found[0]), int(found[1]))
        if before is None or generation < 0:
            return Changes(generation, now, complete=False)
        added, removed = {}, {}
        for (name, coll), start in zip(self.collections.items(), before):
            view = state.views[name]
            rows = np.arange(start, view.rows)
            added[name] = tuple(coll.ids_of_rows(rows[~view.dead[start:]]))
            removed[name] = tuple(i for (i,) in self.db.rows(
                "SELECT id FROM dead WHERE collection=? AND generation > ? AND row < ? AND id IS NOT NULL "
                "ORDER BY row", (name, generation, start)))
        return Changes(generation, now, added["passage"], removed["passage"], added["triple"], removed["triple"])

    def where_rows(self, collection: str, where: Where, state: State) -> np.ndarray:
        """Rows of ``collection`` passing ``where`` at ``state`` (for triples: whose passage
        passes); cached per commit only when this thread is pinned to ``state`` (:meth:`pinned`:
        the rows were read in that commit's read transaction, not at a later commit)."""
        key = (state.generation, collection, repr(where))
        rows = self._where_cache.get(key)
        if rows is None:
            sql, params = where_sql(where)
            if collection == "triple":
                sql = f"SELECT row FROM triples WHERE passage_row IN ({sql.replace(' ORDER BY row', '')}) ORDER BY row"
            rows = np.fromiter((r for (r,) in self.db.rows(sql, params)), dtype=np.int64)
            rows = rows[rows < state.views[collection].rows]
            if getattr(self._local, "state", None) is state:  # read at the commit of ``state``
                with self._lock:
                    if len(self._where_cache) > 64:
                        self._where_cache.clear()
                    self._where_cache[key] = rows
        return rows

    def allowed(self, collection: str, where: Where | None, state: State) -> np.ndarray | None:
        """A mask over the rows of ``collection`` passing ``where`` (None: no filter)."""
        if where is None:
            return None
        mask = np.zeros(state.views[collection].rows, dtype=bool)
        mask[self.where_rows(collection, where, state)] = True
        return mask
