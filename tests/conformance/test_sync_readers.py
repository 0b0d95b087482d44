"""A re-sync of a source is one commit for readers on every backend (embedded, the
Elasticsearch fake, a live cluster with marker ``es``): a reader (another store object)
searching while a source is synced over and over sees its old version or its new one,
never both and never neither; on Elasticsearch also after every single bulk write of the
sync (the writer's ``_write`` checked step by step, not only by a polling thread). The
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
