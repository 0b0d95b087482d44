"""Derived state names the commit it reflects: generations, snapshots, the write path, and
every vector chunk verified before its rows are used (the embedded store)."""

from __future__ import annotations

import multiprocessing
import os
import threading
from pathlib import Path

import numpy as np
import pytest
from support.cli import run_cli
from support.fakes import CountingEmbedder, make_passage, make_triple

from gear_agent.config import GearSettings
from gear_agent.expansion.ppr import PPRRetriever
from gear_agent.retrieval.search import QueryEncoder
from gear_agent.store.base import IndexCorruptError, StoreError
from gear_agent.store.embedded.db import COUNTER_FILE, read_counter, write_counter
from gear_agent.store.embedded.store import EmbeddedStore

passage, triple = make_passage, make_triple


ALPHA = passage("Alpha", "Alpha Base lies near Kestrel Lake.")
BRAVO = passage("Bravo", "Bravo Station lies near Kestrel Lake.")
CHARLIE = passage("Charlie", "Charlie Camp lies near Osprey Ridge.")
DELTA = passage("Delta", "Delta Post lies near Osprey Ridge.")
TRIPLES = {
    ALPHA.id: [triple(ALPHA, "Alpha Base", "near", "Kestrel Lake")],
    BRAVO.id: [triple(BRAVO, "Bravo Station", "near", "Kestrel Lake")],
    CHARLIE.id: [triple(CHARLIE, "Charlie Camp", "near", "Osprey Ridge")],
    DELTA.id: [triple(DELTA, "Delta Post", "near", "Osprey Ridge")],
}


def filled(path: Path, passages=(ALPHA, BRAVO, CHARLIE)) -> EmbeddedStore:
    store = EmbeddedStore.open(path, CountingEmbedder())
    store.passages.add(list(passages))
    store.triples.add([t for p in passages for t in TRIPLES[p.id]])
    return store


# ---- the PPR graph: never judged fresh by counting -------------------------------------------


def test_delete_then_add_with_equal_counts_moves_the_ppr_graph(tmp_path: Path) -> None:
    """Regression: a delete followed by an add of as many passages and triples left the
    graph with the deleted passage's vertex and without the new one (fresh by counts)."""
    store = filled(tmp_path / "ix")
    retriever = PPRRetriever(store, QueryEncoder(store.embedder), GearSettings())
    retriever.retrieve("Which camp lies near Osprey Ridge?", 2)
    graph = retriever.graph
    counts = (graph.n_passages, graph.n_triples)
    assert graph.passage_vertex(CHARLIE.id) is not None and graph.passage_vertex(DELTA.id) is None

    store.passages.remove([CHARLIE.id])
    store.passages.add([DELTA])
    store.triples.add(TRIPLES[DELTA.id])
    # the write path: this process's commits were taken in as they were made, before any query
    assert (graph.n_passages, graph.n_triples) == counts  # equal counts...
    assert graph.passage_vertex(CHARLIE.id) is None  # ...yet the deleted passage's vertex went
    assert graph.passage_vertex(DELTA.id) is not None  # and the new one came
    assert graph.generation == store.generation()
    ranked = retriever.retrieve("Which post lies near Osprey Ridge?", 2)
    assert DELTA.id in {p.id for p in ranked} and CHARLIE.id not in {p.id for p in ranked}


def test_a_graph_saved_by_another_process_catches_up_from_the_change_feed(tmp_path: Path) -> None:
    store = filled(tmp_path / "ix")
    first = PPRRetriever(store, QueryEncoder(store.embedder), GearSettings())
    first.retrieve("Kestrel Lake", 1)
    saved_at = first.graph.generation
    other = EmbeddedStore.open(tmp_path / "ix", CountingEmbedder())  # a second writer
    other.passages.remove([BRAVO.id])
    other.passages.add([DELTA])
    other.triples.add(TRIPLES[DELTA.id])
    reader = EmbeddedStore.open(tmp_path / "ix", CountingEmbedder())
    later = PPRRetriever(reader, QueryEncoder(reader.embedder), GearSettings())
    graph = later.graph  # loaded from the file (generation saved_at), then brought up to date
    assert saved_at < graph.generation == reader.generation()
    assert graph.passage_vertex(BRAVO.id) is None and graph.passage_vertex(DELTA.id) is not None


# ---- snapshots: one commit per query -------------------------------------------------------


def test_a_snapshot_keeps_its_commit_while_another_writer_commits(tmp_path: Path) -> None:
    store = filled(tmp_path / "ix")
    writer = EmbeddedStore.open(tmp_path / "ix", CountingEmbedder())
    vector = store.embedder.embed_one(DELTA.content)
    with store.snapshot():
        before = store.generation()
        writer.passages.add([DELTA])  # lands in the middle of this "query"
        assert store.generation() == before
        assert store.passages.count() == 3
        assert DELTA.id not in {h.id for h in store.passages.vector_search(vector, 5)}
        assert DELTA.id not in {h.id for h in store.passages.bm25_search("Delta Post", 5)}
        assert store.passages.get([DELTA.id]) == []
    assert store.generation() == before + 1
    assert store.passages.vector_search(vector, 1)[0].id == DELTA.id  # the next query: the new commit


def test_threads_pin_their_own_commits(tmp_path: Path) -> None:
    store = filled(tmp_path / "ix")
    pinned, go, seen = threading.Event(), threading.Event(), {}

    def reader() -> None:
        with store.snapshot():
            pinned.set()
            go.wait(10)
            seen["count"] = store.passages.count()

    thread = threading.Thread(target=reader)
    thread.start()
    pinned.wait(10)
    store.passages.add([DELTA])  # the same store object, another thread
    assert store.passages.count() == 4
    go.set()
    thread.join(10)
    assert seen["count"] == 3


# ---- every vector chunk verified before its rows are used --------------------------------------


def _flip_row(path: Path, row: int, dimension: int = 64) -> None:
    data = bytearray(path.read_bytes())
    start = row * dimension * 4
    data[start : start + dimension * 4] = bytes(dimension * 4)  # a zeroed row
    path.write_bytes(bytes(data))


def test_a_damaged_older_chunk_is_refused_not_silently_dropped(tmp_path: Path) -> None:
    store = filled(tmp_path / "ix")  # chunk 0: rows 0..3 (three passages)
    store.passages.add([DELTA])  # a newer chunk after it
    store.close()
    _flip_row(tmp_path / "ix" / "passage.vec", 0)
    with pytest.raises(IndexCorruptError, match=r"passage.vec rows 0..3 fail their checksum.*gear check --repair"):
        EmbeddedStore.open(tmp_path / "ix", CountingEmbedder())


def test_a_writers_own_files_are_trusted_without_reading_them_again(tmp_path: Path) -> None:
    filled(tmp_path / "ix").close()
    reopened = EmbeddedStore.open(tmp_path / "ix", CountingEmbedder())
    assert reopened.passage_parts.vectors.full_reads == 0  # the writer's mark vouches for every chunk
    reopened.close()
    vectors = tmp_path / "ix" / "passage.vec"
    os.utime(vectors, ns=(1, 1))  # not as its writer left it: every chunk is read once
    again = EmbeddedStore.open(tmp_path / "ix", CountingEmbedder())
    assert again.passage_parts.vectors.full_reads == 1
    again.close()
    assert EmbeddedStore.open(tmp_path / "ix", CountingEmbedder()).passage_parts.vectors.full_reads == 0


def test_non_finite_vectors_are_refused_at_write_and_never_ranked(tmp_path: Path) -> None:
    class NaNEmbedder(CountingEmbedder):
        def embed(self, texts):
            vectors = super().embed(texts)
            vectors[-1, 0] = np.nan
            return vectors

    store = EmbeddedStore.open(tmp_path / "ix", NaNEmbedder())
    with pytest.raises(StoreError, match="not finite.*nothing of this batch was stored"):
        store.passages.add([ALPHA, BRAVO])
    assert store.passages.count() == 0
    healthy = filled(tmp_path / "other")
    view = healthy.view("passage")
    rows, _ = healthy.passage_parts.exact(view, view.live_rows(), np.full(64, np.nan, dtype=np.float32), 3)
    assert len(rows) == 0  # a score that is not finite is never ranked
    with pytest.raises(ValueError, match="not finite"):
        healthy.passages.vector_search(np.full(64, np.nan, dtype=np.float32), 3)


# ---- the commit counter outside the WAL ---------------------------------------------------------


def _commit_and_die(path: str) -> None:
    store = EmbeddedStore.open(Path(path), CountingEmbedder())
    store.passages.add([DELTA])
    os._exit(0)  # no close: the commit stays in the WAL, not checkpointed


def test_a_lost_last_commit_is_detected_and_reported(tmp_path: Path) -> None:
    filled(tmp_path / "ix").close()
    process = multiprocessing.get_context("spawn").Process(target=_commit_and_die, args=(str(tmp_path / "ix"),))
    process.start()
    process.join(60)
    wal = tmp_path / "ix" / "index.sqlite-wal"
    assert wal.stat().st_size > 0 and read_counter(tmp_path / "ix") == 3
    wal.write_bytes(wal.read_bytes()[:100])  # the WAL damaged before a checkpoint
    with pytest.raises(IndexCorruptError, match="lost its last commit.*3 were made, index.sqlite holds 2"):
        EmbeddedStore.open(tmp_path / "ix", CountingEmbedder())

    checked = run_cli("check", "--index", str(tmp_path / "ix"))
    assert checked.exit_code == 1 and "commit counter" in checked.output and "were lost" in checked.output
    repaired = run_cli("check", "--index", str(tmp_path / "ix"), "--repair", env={"GEAR_EMBEDDING_MODEL": "hashing-64"})
    assert repaired.exit_code == 0, repaired.output
    reopened = EmbeddedStore.open(tmp_path / "ix", CountingEmbedder())
    assert reopened.passages.count() == 3 and reopened.generation() == 2


def test_the_counter_is_written_after_each_commit(tmp_path: Path) -> None:
    store = filled(tmp_path / "ix")
    assert read_counter(tmp_path / "ix") == store.generation() == 2
    (tmp_path / "ix" / COUNTER_FILE).write_text("garbage")
    assert read_counter(tmp_path / "ix") is None  # unreadable: no claim, nothing refused
    store.close()
    EmbeddedStore.open(tmp_path / "ix", CountingEmbedder()).close()
    write_counter(tmp_path / "ix", 2)
    assert read_counter(tmp_path / "ix") == 2
