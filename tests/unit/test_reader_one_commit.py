"""A reader on its own store object answers each question from one commit of the embedded
index, even when another store object commits in the middle of it: a state loaded from one
read transaction (never the rows of one commit with the deletions of a later one), and a
search whose SQLite reads (filter rows, postings, ids) are of the commit of its state.

The writer's commit is injected at the point where the bug let it in, so each test is
deterministic (the conformance test ``test_sync_readers.py`` finds the same by polling)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.fakes import CountingEmbedder, make_passage, make_triple

from gear_agent.store.embedded.store import EmbeddedStore
from gear_agent.types import Passage

SOURCE = "/data/report.txt"
PARTS = 6
QUERY = "river rises report"


def version(n: int) -> list[Passage]:
    return [make_passage(f"Part {i}", f"Part {i} of the report, version {n}: the river rises.", source=SOURCE)
            for i in range(PARTS)]


VERSION_OF = {p.id: n for n in range(4) for p in version(n)}


def resync(store: EmbeddedStore, n: int) -> None:
    """What a sync of the source does: one commit replacing version ``n - 1`` by ``n``, then
    one adding its triples."""
    store.passages.replace([p.id for p in version(n - 1)], version(n))
    store.triples.add([make_triple(p, f"Part {i}", "rises in", "spring") for i, p in enumerate(version(n))])


def versions_seen(store: EmbeddedStore) -> list[int]:
    hits = store.passages.bm25_search(QUERY, 100, where={"source": SOURCE})
    return sorted(VERSION_OF[h.id] for h in hits)


def once_after(call: Callable[..., Any], then: Callable[[], None]) -> Callable[..., Any]:
    """``call``, which runs ``then`` after its first return (the injected commit)."""
    fired: list[bool] = []

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        outcome = call(*args, **kwargs)
        if not fired:
            fired.append(True)
            then()
        return outcome

    return wrapped


@pytest.fixture
def stores(tmp_path: Path) -> tuple[EmbeddedStore, EmbeddedStore]:
    writer = EmbeddedStore.open(tmp_path / "ix", CountingEmbedder())
    writer.passages.add(version(0))
    reader = EmbeddedStore.open(tmp_path / "ix", CountingEmbedder())
    assert reader.passages.count() == PARTS  # its state taken (no filter rows cached yet)
    return writer, reader


def test_a_commit_after_the_reader_took_its_state_is_not_read_by_that_search(
        stores: tuple[EmbeddedStore, EmbeddedStore], monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression: the search took the state of one commit, then read the filter rows of the
    next one (the old version's rows deleted, the new ones past its rows): no hits."""
    writer, reader = stores
    monkeypatch.setattr(reader.states, "current", once_after(reader.states.current, lambda: resync(writer, 1)))
    assert versions_seen(reader) == [0] * PARTS  # the commit it began at, whole
    assert versions_seen(reader) == [1] * PARTS  # the next question: the new commit, whole


def test_a_commit_while_the_reader_loads_a_state_is_not_mixed_into_it(
        stores: tuple[EmbeddedStore, EmbeddedStore], monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression: loading a state read the row counts of one commit and the dead rows of a
    later one (the new version dead before it was visible): no hits."""
    writer, reader = stores
    resync(writer, 1)  # the reader has not looked since
    monkeypatch.setattr(reader.db, "meta_like", once_after(reader.db.meta_like, lambda: resync(writer, 2)))
    state = reader.states.sync(force=True)
    view = state.views["passage"]
    assert view.count == len(view.live_rows()) == PARTS  # counts and dead rows of one commit
    assert state.generation == reader.states.sync(force=True).generation - 2
    assert versions_seen(reader) == [2] * PARTS


def test_a_search_that_loads_its_state_reads_that_commit_only(
        stores: tuple[EmbeddedStore, EmbeddedStore], monkeypatch: pytest.MonkeyPatch) -> None:
    writer, reader = stores
    resync(writer, 1)
    monkeypatch.setattr(reader.db, "meta_like", once_after(reader.db.meta_like, lambda: resync(writer, 2)))
    assert versions_seen(reader) == [1] * PARTS
    assert versions_seen(reader) == [2] * PARTS
