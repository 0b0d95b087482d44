"""Removals taken into the PPR graph in place, from the change feed: after any sequence of
adds and deletes the graph equals (edges) and ranks as (walk) a graph built from scratch on
the same data, in memory and read back from its files."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.fakes import make_passage, make_triple

from gear_agent.embedding.base import Embedder, normalise_rows
from gear_agent.expansion import ppr_graph_files as files
from gear_agent.expansion.ppr import ppr_expand
from gear_agent.expansion.ppr_graph import PPRGraph, load_or_build, synonym_eligible
from gear_agent.store.embedded.store import EmbeddedStore
from gear_agent.types import Passage, Triple

DIM = 32
THRESHOLD = 0.8
# multi-word phrases sharing words: bag-of-words cosines of 0.82 ("city one" / "city one
# river") make synonym edges, which a removed phrase must take with it
PHRASES = ("city one", "city one river", "city two", "old city two", "person a", "person b",
           "person a b", "company x", "company x y", "river", "x")
QUERIES = ("city one river", "person a company x", "old city", "company x y person b")


class WordsEmbedder(Embedder):
    """Bag of hashed words, normalised: phrases sharing words are similar."""

    name = "words"

    @property
    def dimension(self) -> int:
        return DIM

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = np.zeros((len(texts), DIM), np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                rows[i, int(hashlib.md5(word.encode()).hexdigest(), 16) % DIM] += 1.0
            rows[i, -1] += 1e-3  # never a zero row
        return normalise_rows(rows)


def _document(n: int, picks: Sequence[tuple[int, int]]) -> tuple[Passage, list[Triple]]:
    passage = make_passage(f"doc {n}", f"text of passage {n}")
    triples = {make_triple(passage, PHRASES[s], "relates to", PHRASES[o]) for s, o in picks}
    return passage, sorted(triples, key=lambda t: t.id)


def _ranking(store: EmbeddedStore, graph: PPRGraph, embedder: Embedder) -> list[list[tuple[str, float]]]:
    out = []
    for query in QUERIES:
        found = ppr_expand(store, graph, query, embedder.embed_one(query), None, k=8)
        out.append([(p.id, round(p.score, 9)) for p in found])
    return out


def _assert_as_built(store: EmbeddedStore, graph: PPRGraph, embedder: Embedder, **kwargs) -> None:
    scratch = PPRGraph.build(store, embedder, THRESHOLD, **kwargs)
    assert graph.edge_kinds() == scratch.edge_kinds()
    assert (graph.n_passages, graph.n_phrases, graph.n_triples) == (
        scratch.n_passages, scratch.n_phrases, scratch.n_triples)
    assert _ranking(store, graph, embedder) == _ranking(store, scratch, embedder)


DOCUMENTS = st.lists(
    st.lists(st.tuples(st.integers(0, len(PHRASES) - 1), st.integers(0, len(PHRASES) - 1)),
             min_size=1, max_size=3),
    min_size=8, max_size=8,
)
STEPS = st.lists(
    st.tuples(st.sets(st.integers(0, 7), max_size=3), st.sets(st.integers(0, 7), max_size=3),
              st.booleans()),
    min_size=1, max_size=5,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(documents=DOCUMENTS, steps=STEPS)
def test_any_adds_and_deletes_leave_the_graph_a_build_would_make(
    tmp_path_factory: pytest.TempPathFactory, documents: list[list[tuple[int, int]]],
    steps: list[tuple[set[int], set[int], bool]],
) -> None:
    """Each step adds some documents (those not stored), deletes others (those stored),
    brings the graph up to date from the feed and, when drawn, saves and reads it back."""
    folder = tmp_path_factory.mktemp("removals")
    embedder = WordsEmbedder()
    store = EmbeddedStore.open(folder / "index", embedder)
    docs = [_document(n, picks) for n, picks in enumerate(documents)]
    stored = {0, 1, 2, 3}
    store.passages.add([docs[n][0] for n in sorted(stored)])
    store.triples.add([t for n in sorted(stored) for t in docs[n][1]])
    path = folder / "graph.npz"
    graph = load_or_build(store, embedder, THRESHOLD, path, compact=False)
    for adds, deletes, reload in steps:
        adds, deletes = sorted(adds - stored), sorted(deletes & stored)
        if adds:
            store.passages.add([docs[n][0] for n in adds])
            store.triples.add([t for n in adds for t in docs[n][1]])
        if deletes:
            store.passages.remove([docs[n][0].id for n in deletes])
        stored = (stored | set(adds)) - set(deletes)
        stats = graph.update(store)
        assert not stats.rebuilt
        assert stats.passages_removed == len(deletes)
        _assert_as_built(store, graph, embedder)
        if reload:
            graph.save(path)
            graph = PPRGraph.load(path, embedder, THRESHOLD)
            assert graph.stamp == store.stamp()
            _assert_as_built(store, graph, embedder)


def _small_store(tmp_path: Path, embedder: Embedder) -> tuple[EmbeddedStore, list[Passage]]:
    store = EmbeddedStore.open(tmp_path / "index", embedder)
    docs = [_document(n, [(n % 11, (n + 1) % 11), ((3 * n) % 11, (n + 5) % 11)]) for n in range(10)]
    store.passages.add([p for p, _ in docs])
    store.triples.add([t for _, ts in docs for t in ts])
    return store, [p for p, _ in docs]


def test_a_removal_is_saved_as_a_delta_that_a_load_replays(tmp_path: Path) -> None:
    embedder = WordsEmbedder()
    store, passages = _small_store(tmp_path, embedder)
    path = tmp_path / "graph.npz"
    graph = load_or_build(store, embedder, THRESHOLD, path, compact=False)
    store.passages.add([make_passage("late", "a late passage")])
    graph.update(store)
    graph.save(path)  # adds only: a delta
    store.passages.remove([passages[0].id, passages[4].id])
    assert not graph.update(store).rebuilt and graph.unsaved
    graph.save(path)  # a delta that lists what it removed
    manifest = files.read_manifest(path)
    assert len(manifest["segments"]) == 3
    meta, _ = files.read_segment(files.delta_path(path, 2), manifest["segments"][2]["checksum"])
    assert set(meta["removed_passages"]) == {passages[0].id, passages[4].id}
    loaded = PPRGraph.load(path, embedder, THRESHOLD)
    assert loaded.edge_kinds() == graph.edge_kinds()
    _assert_as_built(store, loaded, embedder)
    store.passages.remove([passages[5].id])  # the graph read back takes removals in place too
    assert not loaded.update(store).rebuilt
    _assert_as_built(store, loaded, embedder)


def test_a_removal_after_unsaved_adds_writes_the_base(tmp_path: Path) -> None:
    embedder = WordsEmbedder()
    store, passages = _small_store(tmp_path, embedder)
    path = tmp_path / "graph.npz"
    graph = load_or_build(store, embedder, THRESHOLD, path, compact=False)
    late, late_triples = _document(20, [(0, 9), (9, 10)])
    store.passages.add([late])
    store.triples.add(late_triples)
    graph.update(store)  # not saved: its rows are numbered as before the removal below
    store.passages.remove([passages[1].id])
    graph.update(store)
    graph.save(path)
    assert len(files.read_manifest(path)["segments"]) == 1 and not files.delta_path(path, 1).exists()
    _assert_as_built(store, PPRGraph.load(path, embedder, THRESHOLD), embedder)


def test_a_graph_read_from_files_without_triple_ends_rebuilds_at_a_removal(tmp_path: Path) -> None:
    embedder = WordsEmbedder()
    store, passages = _small_store(tmp_path, embedder)
    path = tmp_path / "graph.npz"
    load_or_build(store, embedder, THRESHOLD, path, compact=False)
    # the files as format 4 wrote them: no triple ends
    manifest = files.read_manifest(path)
    meta, arrays = files.read_segment(path, manifest["segments"][0]["checksum"])
    del arrays["triple_ends"]
    manifest["segments"][0]["checksum"] = files.write_segment(path, meta, arrays)
    files.write_manifest(path, manifest)
    text = json.loads(files.manifest_path(path).read_text())
    files.manifest_path(path).write_text(json.dumps({**text, "format_version": 4}))
    old = PPRGraph.load(path, embedder, THRESHOLD)
    store.passages.add([make_passage("late", "a late passage")])
    assert not old.update(store).rebuilt  # adds need no triple ends
    store.passages.remove([passages[2].id])
    assert old.update(store).rebuilt
    _assert_as_built(store, old, embedder)


def test_a_removed_phrase_leaves_the_phrase_ann_and_every_search(tmp_path: Path) -> None:
    embedder = WordsEmbedder()
    store, passages = _small_store(tmp_path, embedder)
    path = tmp_path / "graph.npz"
    graph = load_or_build(store, embedder, THRESHOLD, path, compact=False, exact_max=0)  # the phrase ANN
    gone = [p for p in passages if p.id != passages[0].id]
    store.passages.remove([p.id for p in gone])
    stats = graph.update(store)
    assert not stats.rebuilt and stats.phrases_removed > 0
    held = {graph.vertex_name(int(v)) for v in graph.phrase_rows() if v >= 0}
    assert held == set(graph.node_names()) - {passages[0].id}
    for phrase in PHRASES:
        vertices, _ = graph.nearest_phrases(embedder.embed_one(phrase), len(PHRASES))
        assert {graph.vertex_name(int(v)) for v in vertices} <= held
    eligible = [v for v in graph.phrase_rows() if v >= 0 and synonym_eligible(graph.vertex_name(int(v)))]
    assert graph._ann is not None and len(graph._ann) == len(eligible)
    graph.save(path)  # a delta: the ANN file still holds the removed rows, a load takes them out
    assert len(files.read_manifest(path)["segments"]) == 2
    loaded = PPRGraph.load(path, embedder, THRESHOLD, exact_max=0)
    assert loaded._ann is not None and len(loaded._ann) == len(eligible)
    assert loaded.edge_kinds() == graph.edge_kinds() == PPRGraph.build(store, embedder, THRESHOLD).edge_kinds()
