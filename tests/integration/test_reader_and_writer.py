"""A long-running reader (as a server is) answers while a second process writes.

The writer's commit is made to land in the middle of a query, deterministically: the
reader's embedder runs the writer process to completion the first time it encodes the
trigger question, which every retriever here does after its first store reads (BM25, or
the snapshot's pin) and before the rest. The reader must answer that query from the commit
it started on (never a mix of the two) and the next query from the new commit.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from support.fakes import make_passage, make_triple

from gear_agent.config import GearSettings
from gear_agent.embedding.hashing import HashingEmbedder
from gear_agent.open_index import OpenIndex
from gear_agent.parts import index_parts
from gear_agent.registry import make_retriever
from gear_agent.retrieval.search import QueryEncoder
from gear_agent.store.embedded.store import EmbeddedStore
from gear_agent.types import Passage, Triple

QUESTION = "What lies near Kestrel Lake?"


ALPHA = make_passage("Alpha", "Alpha Base lies near Kestrel Lake.")
BRAVO = make_passage("Bravo", "Bravo Station lies near Kestrel Lake.")
CHARLIE = make_passage("Charlie", "Charlie Camp lies near Osprey Ridge.")
DELTA = make_passage("Delta", "Delta Post lies near Kestrel Lake.")
OLD = {ALPHA.id, BRAVO.id, CHARLIE.id}
NEW = {ALPHA.id, CHARLIE.id, DELTA.id}


def _triples(p: Passage) -> list[Triple]:
    subject = p.text.split(" lies")[0]
    return [make_triple(p, subject, "lies near", p.text.split("near ")[1].rstrip("."))]


def _write(path: str) -> None:
    """The second process: one commit that deletes Bravo and adds Delta (equal counts)."""
    store = EmbeddedStore.open(Path(path), HashingEmbedder(64))
    with store.transaction():
        store.passages.remove([BRAVO.id])
        store.passages.add([DELTA])
        store.triples.add(_triples(DELTA))
    store.close()


class WriterOnEncode(HashingEmbedder):
    """Runs the writer process the first time the question is encoded."""

    def __init__(self, path: Path) -> None:
        super().__init__(64)
        self.path, self.fired = path, False

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if QUESTION in texts and not self.fired:
            self.fired = True
            process = multiprocessing.get_context("spawn").Process(target=_write, args=(str(self.path),))
            process.start()
            process.join(120)
            assert process.exitcode == 0
        return super().embed(texts)


@pytest.fixture
def index(tmp_path: Path) -> Path:
    store = EmbeddedStore.open(tmp_path / "ix", HashingEmbedder(64))
    store.passages.add([ALPHA, BRAVO, CHARLIE])
    store.triples.add([t for p in (ALPHA, BRAVO, CHARLIE) for t in _triples(p)])
    store.close()
    return tmp_path / "ix"


@pytest.mark.parametrize("name", ["hybrid", "hybrid+naive_ge", "ppr", "hybrid+naive_ge+ppr"])
def test_a_commit_during_a_query_is_served_whole_by_the_next_query(index: Path, name: str) -> None:
    embedder = WriterOnEncode(index)
    settings = GearSettings(index_dir=index, embedding_model="hashing-64")
    store = EmbeddedStore.open(index, embedder)
    parts = index_parts(OpenIndex(settings, embedder, store, QueryEncoder(embedder, cache_size=0)))
    retriever = make_retriever(name, parts)
    retriever.retrieve("Which camp lies near Osprey Ridge?", 3)  # warm: the graph is built
    during = {p.id for p in retriever.retrieve(QUESTION, 3)}
    assert embedder.fired
    assert during <= OLD and BRAVO.id in during  # the commit it started on, whole
    after = {p.id for p in retriever.retrieve(QUESTION, 3)}
    assert after <= NEW and DELTA.id in after  # the next query: the new commit, whole
    if name.endswith("ppr"):
        graph = parts.ppr().graph
        assert graph.passage_vertex(BRAVO.id) is None and graph.passage_vertex(DELTA.id) is not None
