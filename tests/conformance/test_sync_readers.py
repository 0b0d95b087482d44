"""A re-sync of a source is one commit for readers on every backend (embedded, the
Elasticsearch fake, a live cluster with marker ``es``): a reader (another store object)
searching while a source is synced over and over sees its old version or its new one,
never both and never neither; on Elasticsearch also after every single bulk write of the
sync (the writer's ``_write`` checked step by step, not only by a polling thread), and
after a sync killed (or failing) at any of its steps and the next writer's takeover. The
retired passages are deleted by a later sync, and the passages of many sources are listed
in one request."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from support.fakes import make_passage, make_triple

from gear_agent.store.base import Store
from gear_agent.types import Passage

SOURCE = "/data/report.txt"
PARTS = 12


def version(n: int) -> list[Passage]:
    return [make_passage(f"Part {i}", f"Part {i} of the report, version {n}: the river rises.", source=SOURCE)
            for i in range(PARTS)]


class Reader:
    """Searches the source's passages and sorts what it saw: one whole version, or not."""

    def __init__(self, store: Store, versions: dict[str, int]) -> None:
        self.store, self.versions = store, versions
        self.seen: dict[str, int] = {"whole": 0, "both": 0, "neither": 0, "partial": 0}

    def look(self) -> None:
        hits = self.store.passages.bm25_search("river rises report", 100, where={"source": SOURCE})
        found = {self.versions[h.id] for h in hits if h.id in self.versions}
        per = {v: sum(1 for h in hits if self.versions.get(h.id) == v) for v in found}
        if not hits:
            self.seen["neither"] += 1
        elif len(found) > 1:
            self.seen["both"] += 1
        elif len(hits) != PARTS or list(per.values()) != [PARTS]:
            self.seen["partial"] += 1
        else:
            self.seen["whole"] += 1


def sync(store: Store, old: list[Passage], new: list[Passage]) -> None:
    store.passages.replace([p.id for p in old], new)
    triples = [make_triple(p, f"Part {i}", "rises in", "spring") for i, p in enumerate(new)]
    store.triples.add(triples)


@pytest.mark.parametrize("rounds", [4])
def test_a_reader_never_sees_both_versions_or_neither(backend: Any, embedder: Any, rounds: int,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    writer: Any = backend.open(embedder)
    versions = {p.id: n for n in range(rounds + 1) for p in version(n)}
    writer.passages.add(version(0))
    reader = Reader(backend.open(embedder), versions)
    write: Callable[..., Any] | None = getattr(writer, "_write", None)
    if write is not None:  # Elasticsearch: look after every bulk write of the sync
        def write_then_look(*args: Any, **kwargs: Any) -> Any:
            outcome = write(*args, **kwargs)
            reader.look()
            return outcome

        monkeypatch.setattr(writer, "_write", write_then_look)
    stop = threading.Event()
    poller = Reader(backend.open(embedder), versions)  # a thread polling on its own store
    neighbour = Reader(writer, versions)  # and one on the writer's (a server's other requests)

    def poll(reader: Reader) -> None:
        while not stop.is_set():
            reader.look()

    threads = [threading.Thread(target=poll, args=(r,)) for r in (poller, neighbour)]
    for thread in threads:
        thread.start()
    try:
        for n in range(1, rounds + 1):
            sync(writer, version(n - 1), version(n))
            reader.look()
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
    for seen in (reader.seen, poller.seen, neighbour.seen):
        assert (seen["both"], seen["neither"], seen["partial"]) == (0, 0, 0), seen
    assert reader.seen["whole"] >= rounds
    hits = writer.passages.bm25_search("river rises", 100, where={"source": SOURCE})
    assert {versions[h.id] for h in hits} == {rounds}


def test_retired_passages_are_deleted_by_a_later_sync(backend: Any, embedder: Any) -> None:
    store: Any = backend.open(embedder)
    store.passages.add(version(0))
    store.passages.replace([p.id for p in version(0)], version(1))
    if hasattr(store, "purge_after_s"):
        store.purge_after_s = 0.0
    store.passages.replace([p.id for p in version(1)], version(2))
    assert store.passages.get([p.id for p in version(0)]) == [], "deleted, not only hidden"
    assert store.passages.count() == PARTS, "version 1 is hidden at once (and deleted by a later sync)"
    store.passages.replace([], [])  # a later sync, with nothing to change
    assert store.passages.get([p.id for p in version(0) + version(1)]) == []
    assert len(store.passages.get([p.id for p in version(2)])) == PARTS
    assert store.passages.count() == PARTS and store.triples.count() == 0


def test_the_passages_of_many_sources_at_once(store: Store) -> None:
    passages = [make_passage(f"T{i}", f"text {i}", source=f"/d/{i % 3}.txt") for i in range(9)]
    store.passages.add(passages)
    found = store.passages.ids_of_sources(["/d/0.txt", "/d/2.txt", "/d/none.txt"])
    assert {k: sorted(v) for k, v in found.items()} == {
        "/d/0.txt": sorted(p.id for p in passages if p.source == "/d/0.txt"),
        "/d/2.txt": sorted(p.id for p in passages if p.source == "/d/2.txt"),
        "/d/none.txt": [],
    }
    assert found["/d/0.txt"] == store.passages.ids_of_source("/d/0.txt")


# ---- a sync killed half-way (Elasticsearch: the embedded store's sync is one SQLite transaction)


class Killed(Exception):
    """The writer's process dies here: nothing it sends afterwards reaches the cluster."""


class DyingClient:
    """The writer's client for ``_bulk``: the ``kill_at``-th request (from 0) and every
    later one raise :class:`Killed` (all of them when ``dies``, else only that one)."""

    def __init__(self, client: Any, kill_at: int, dies: bool) -> None:
        self.client, self.kill_at, self.dies = client, kill_at, dies
        self.sent, self.dead = 0, False

    def check(self) -> None:
        if self.dead or self.sent == self.kill_at:
            self.dead = self.dies
            self.sent += 1
            raise Killed(f"killed at _bulk request {self.sent - 1}")
        self.sent += 1

    def bulk(self, **kwargs: Any) -> Any:
        self.check()
        return self.client.bulk(**kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


SYNC_BULKS = 17
"""The ``_bulk`` requests of one sync of :data:`PARTS` passages in batches of 5: the intent;
the new passages (3); the deletion records of the old triples (3) and passages (3); their
retirement, triples (3) then passages (3); the intent's deletion (the sync is done)."""


def _triples(passages: list[Passage]) -> list[Any]:
    return [make_triple(p, f"Part {i}", "rises in", "spring") for i, p in enumerate(passages)]


@pytest.mark.parametrize("kill_at", [0, 1, 2, 4, 7, 10, 13, 16, SYNC_BULKS])
@pytest.mark.parametrize("dies", [True, False], ids=["killed", "failed"])
def test_a_sync_killed_half_way_leaves_one_whole_version(backend: Any, embedder: Any, kill_at: int, dies: bool,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Killed (or failing) at each step, a sync leaves the old version whole once the next
    writer (another store, after the dead writer's lock went stale) has written anything;
    killed after its intent was done (only the publish missing), the new version, whole."""
    writer: Any = backend.open(embedder)
    if getattr(writer, "_feed", None) is None:
        pytest.skip("the embedded store's sync is one SQLite transaction")
    versions = {p.id: n for n in range(3) for p in version(n)}
    writer.passages.add(version(0))
    writer.triples.add(_triples(version(0)))
    mark = writer.generation()
    bulk = writer.connection.writer
    bulk.batch_size = 5
    dying = DyingClient(bulk.client, kill_at, dies)
    monkeypatch.setattr(bulk, "client", dying)
    feed = writer._feed
    publish, release = feed._publish, feed._release
    monkeypatch.setattr(feed, "_publish", lambda g: dying.check() or publish(g))
    monkeypatch.setattr(feed, "_release", lambda: None if dying.dead else release())  # a dead lock stays
    if kill_at == SYNC_BULKS and not dies:
        pytest.skip("a sync that does not fail publishes the new version (the test above)")
    with pytest.raises(Killed):
        writer.passages.replace([p.id for p in version(0)], version(1))
    expected = 1 if kill_at == SYNC_BULKS else 0  # the intent done: only the publish is missing
    assert kill_at < SYNC_BULKS or dying.sent == SYNC_BULKS + 1  # every request went, the publish died
    if dies:
        other: Any = backend.open(embedder)
        other._feed.lock_stale_s = -1.0  # the dead writer's lock is stale: taken over
        other.passages.add([make_passage("Other", "Another source entirely.", source="/data/other.txt")])
    reader = Reader(backend.open(embedder), versions)
    reader.look()
    assert reader.seen["whole"] == 1, reader.seen
    hits = reader.store.passages.bm25_search("river rises report", 100, where={"source": SOURCE})
    assert {versions[h.id] for h in hits} == {expected}
    assert reader.store.triples.count() == (PARTS if expected == 0 else 0)  # old triples back too
    changes = reader.store.changes_since(mark)  # the feed says the same: no deletion records left
    assert set(changes.passages_removed) == ({p.id for p in version(0)} if expected else set())
    assert {i for i in changes.passages_added if i in versions} == ({p.id for p in version(1)} if expected else set())
    if expected == 0:  # the aborted sync's passages are deleted, not only hidden
        assert reader.store.passages.get([p.id for p in version(1)]) == []
    assert reader.store.connection.search("intents", reader.store.changes_index, {
        "query": {"term": {"kind": "sync"}}})["hits"]["hits"] == []
    # the source's next sync (by the reader's store) replaces what is there, whole
    reader.store.passages.replace([p.id for p in version(expected)], version(2))
    reader.look()
    assert reader.seen["whole"] == 2, reader.seen
    assert reader.store.passages.count() == PARTS + dies
