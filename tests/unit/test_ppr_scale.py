"""PPR at scale: local push and HippoRAG 1 against a direct linear solve, the approximate
synonym search against the exact one, the graph's delta files, checksums and progress."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import sparse
from test_ppr import (
    SYNONYMS,
    TableEmbedder,
    _batches,
    _direct_ppr,
    _passage,
    _specificity_store,
    _store,
    _triple,
)

from gear_agent.config import GearSettings
from gear_agent.expansion._ppr_push import push_personalized_pagerank
from gear_agent.expansion._ppr_synonyms import PhraseANN, exact_pairs
from gear_agent.expansion.hipporag import HippoRAGRetriever, hipporag_scores, query_node_mass
from gear_agent.expansion.ppr import (
    PPRRetriever,
    choose_seeds,
    passage_mass,
    ppr_expand,
    seed_phrase_mass,
    sparse_personalized_pagerank,
    tail_mass,
)
from gear_agent.expansion.ppr_graph import PPRGraph, load_or_build
from gear_agent.expansion.ppr_graph_files import delta_path, manifest_path
from gear_agent.expansion.ppr_walk import walk_of
from gear_agent.questions import RunOptionError
from gear_agent.retrieval.search import QueryEncoder
from gear_agent.store.embedded.store import EmbeddedStore

HAND_EDGES = [(0, 1, 1.0), (1, 2, 2.0), (2, 0, 0.5), (2, 3, 3.0), (3, 4, 1.0), (4, 1, 0.25)]


def _adjacency(n: int, edges: list[tuple[int, int, float]]) -> tuple[sparse.csr_array, np.ndarray]:
    a = np.zeros((n, n))
    for i, j, w in edges:
        a[i, j] += w
        a[j, i] += w
    return sparse.csr_array(a), a.sum(axis=1)


# ---- local push ------------------------------------------------------------------------------


@pytest.mark.parametrize("damping", [0.5, 0.15, 0.85])
@pytest.mark.parametrize("sweep_share", [0, 10**9])  # rounds by row gather only / sweeps only
def test_push_converges_to_the_direct_solve(
    damping: float, sweep_share: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("gear_agent.expansion._ppr_push.SWEEP_SHARE", sweep_share)
    n = 6  # vertex 5 has no edges: its mass restarts by the reset (igraph's convention)
    adjacency, strength = _adjacency(n, HAND_EDGES)
    seeds, mass = np.array([0, 2, 5]), np.array([0.6, 0.1, 0.3])
    reset = np.zeros(n)
    reset[seeds] = mass
    expected = _direct_ppr(n, HAND_EDGES, reset, damping)
    vertices, values = push_personalized_pagerank(
        adjacency, strength, seeds, mass, damping, tolerance=1e-12
    )
    got = np.zeros(n)
    got[vertices] = values
    np.testing.assert_allclose(got, expected, atol=1e-9, rtol=0)
    assert len(set(vertices.tolist())) == len(vertices)


def test_push_never_overshoots_and_stays_local() -> None:
    # a path 0-1-2-...-49: a coarse tolerance stops near the seed; values only grow to the truth
    edges = [(i, i + 1, 1.0) for i in range(49)]
    adjacency, strength = _adjacency(50, edges)
    reset = np.zeros(50)
    reset[0] = 1.0
    exact = _direct_ppr(50, edges, reset, 0.5)
    vertices, values = push_personalized_pagerank(
        adjacency, strength, np.array([0]), np.array([1.0]), 0.5, tolerance=1e-3
    )
    assert vertices.max() < 15  # the far end of the path is never touched
    assert np.all(values <= exact[vertices] + 1e-12)
    assert values.sum() > 0.99


def test_push_rejects_bad_input() -> None:
    adjacency, strength = _adjacency(5, HAND_EDGES)
    with pytest.raises(ValueError, match="distinct"):
        push_personalized_pagerank(adjacency, strength, np.array([0, 0]), np.array([1.0, 1.0]))
    with pytest.raises(ValueError, match="non-negative"):
        push_personalized_pagerank(adjacency, strength, np.array([0]), np.array([0.0]))
    with pytest.raises(ValueError, match="tolerance"):
        push_personalized_pagerank(adjacency, strength, np.array([0]), np.array([1.0]),
                                   tolerance=0)


def test_local_and_global_ppr_expand_agree(tmp_path: Path) -> None:
    passages, (first, second) = _batches()
    embedder = TableEmbedder(SYNONYMS)
    store = _store(tmp_path, embedder)
    store.passages.add(passages)
    store.triples.add(first + second)
    graph = PPRGraph.build(store, embedder)
    q = embedder.embed_one("alpha meets gamma")
    local = ppr_expand(store, graph, "x", q, None, k=6, method="local", tolerance=1e-12)
    exact = ppr_expand(store, graph, "x", q, None, k=6, method="global")
    assert [p.id for p in local] == [p.id for p in exact]
    np.testing.assert_allclose([p.score for p in local], [p.score for p in exact], atol=1e-9)
    with pytest.raises(ValueError, match="local, global"):
        ppr_expand(store, graph, "x", q, None, k=6, method="power")


# ---- HippoRAG 1 ------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["local", "global"])
def test_hipporag_scores_are_the_phrase_walk_summed_per_passage(tmp_path: Path, method: str) -> None:
    passages, (first, second) = _batches()
    embedder = TableEmbedder(SYNONYMS)
    store = _store(tmp_path, embedder)
    store.passages.add(passages)
    store.triples.add(first + second)
    graph = PPRGraph.build(store, embedder)
    names = graph.node_names()
    phrase_edges = [
        (names.index(a), names.index(b), w)
        for a, b, _, _, contains, w in graph.edge_kinds() if not contains
    ]
    seeds = np.array([graph.phrase_vertex("alpha"), graph.phrase_vertex("delta")])
    mass = query_node_mass(graph, seeds, np.array([0.9, 0.5]))
    # specificity: alpha is in 3 passages, delta in 2; softmax of 0.9/3 and 0.5/2
    expected_mass = np.exp([0.3, 0.25]) / np.exp([0.3, 0.25]).sum()
    np.testing.assert_allclose(mass, expected_mass)
    reset = np.zeros(graph.n_vertices)
    reset[seeds] = mass
    p = _direct_ppr(graph.n_vertices, phrase_edges, reset, 0.5)  # passages: isolated vertices
    expected = {}
    for a, b, _, _, contains, _ in graph.edge_kinds():
        if contains:
            passage, phrase = (a, b) if graph.passage_vertex(a) is not None else (b, a)
            expected[passage] = expected.get(passage, 0.0) + p[names.index(phrase)]
    vertices, scores = hipporag_scores(graph, seeds, mass, 0.5, method, tolerance=1e-13)
    got = {names[v]: s for v, s in zip(vertices.tolist(), scores.tolist())}
    assert got.keys() == {k for k, v in expected.items() if v > 0}
    for passage, score in got.items():
        assert score == pytest.approx(expected[passage], abs=1e-9)


def test_hipporag_retriever_ranks_the_seed_phrase_passages_first(tmp_path: Path) -> None:
    store, embedder, passages, _ = _specificity_store(tmp_path)
    settings = GearSettings(hipporag_seed_phrases=1)
    ppr = PPRRetriever(store, QueryEncoder(embedder), settings)
    retriever = HippoRAGRetriever(ppr, settings)
    ranked = retriever.retrieve("rare thing", k=4)
    assert retriever.name == "hipporag"
    assert ranked[0].id == passages[0].id  # the only passage that mentions "rare thing"
    assert len(ranked) == 4 and len({p.id for p in ranked}) == 4  # dense fills the rest
    with pytest.raises(RunOptionError, match="k must be a whole number >= 1"):
        retriever.retrieve("rare thing", k=0)  # like every other retriever


# ---- approximate synonyms --------------------------------------------------------------------


def assert_same_edges(got: list[tuple], want: list[tuple]) -> None:
    """The same edges in the same order; their weights equal up to float rounding (pytest's
    ``approx`` takes no nested tuples since pytest 9.1)."""
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert len(g) == len(w)
        for a, b in zip(g, w):
            if isinstance(a, float) and not isinstance(a, bool):
                assert a == pytest.approx(b), (g, w)
            else:
                assert a == b, (g, w)



def test_ann_synonym_pairs_match_the_exact_search() -> None:
    rng = np.random.default_rng(5)
    base = rng.normal(size=(300, 32)).astype(np.float32)
    near = base + 0.25 * rng.normal(size=base.shape).astype(np.float32)  # a close variant each
    vectors = np.vstack([base, near])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    eligible = np.ones(len(vectors), bool)
    a, b, _ = exact_pairs(vectors, eligible, 0, 0.8)
    exact = {tuple(sorted(pair)) for pair in zip(a.tolist(), b.tolist())}
    ann = PhraseANN(32)
    rows = np.arange(len(vectors))
    ann.add(vectors, rows)
    a, b, cosine = ann.pairs(vectors, rows, 0.8)
    approximate = {tuple(sorted(pair)) for pair in zip(a.tolist(), b.tolist())}
    assert len(exact) >= 250  # the test has synonyms to find
    assert approximate <= exact and len(approximate) >= 0.99 * len(exact)
    np.testing.assert_allclose(cosine, np.einsum("ij,ij->i", vectors[a], vectors[b]), atol=1e-6)


def test_graph_uses_the_phrase_ann_above_the_exact_limit(tmp_path: Path) -> None:
    passages, (first, second) = _batches()
    store = _store(tmp_path, TableEmbedder(SYNONYMS))
    store.passages.add(passages)
    store.triples.add(first)
    exact_first = PPRGraph.build(store, TableEmbedder(SYNONYMS))
    graph = PPRGraph.build(store, TableEmbedder(SYNONYMS), exact_max=0)
    assert graph._ann is not None
    assert_same_edges(graph.edge_kinds(), exact_first.edge_kinds())
    store.triples.add(second)
    graph.update(store)
    exact = PPRGraph.build(store, TableEmbedder(SYNONYMS))
    assert [r[:3] for r in graph.edge_kinds()] == [r[:3] for r in exact.edge_kinds()]
    np.testing.assert_allclose([r[5] for r in graph.edge_kinds()],
                               [r[5] for r in exact.edge_kinds()], atol=1e-6)


# ---- files: deltas, checksums, compaction; progress --------------------------------------------


def test_updates_append_deltas_that_load_to_the_same_graph(tmp_path: Path) -> None:
    passages, (first, second) = _batches()
    store = _store(tmp_path, TableEmbedder(SYNONYMS))
    store.passages.add(passages[:3])
    store.triples.add(first)
    path = tmp_path / "g" / "ppr-graph.npz"
    graph = load_or_build(store, TableEmbedder(SYNONYMS), 0.8, path)
    base_bytes = path.read_bytes()
    store.passages.add(passages[3:])
    store.triples.add(second)
    graph = load_or_build(store, TableEmbedder(SYNONYMS), 0.8, path, graph=graph)
    assert path.read_bytes() == base_bytes  # the base is not rewritten
    assert delta_path(path, 1).is_file()
    manifest = json.loads(manifest_path(path).read_text())
    assert [s["file"] for s in manifest["segments"]] == ["ppr-graph.npz", "ppr-graph.1.npz"]
    embedder = TableEmbedder(SYNONYMS)
    loaded = load_or_build(store, embedder, 0.8, path)
    assert embedder.embedded == []  # nothing to embed: everything came from the files
    assert loaded.node_names() == graph.node_names()
    assert loaded.edge_kinds() == graph.edge_kinds()
    assert_same_edges(loaded.edge_kinds(), PPRGraph.build(store, TableEmbedder(SYNONYMS)).edge_kinds())


def test_a_corrupt_segment_is_rebuilt_not_trusted(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    passages, (first, second) = _batches()
    store = _store(tmp_path, TableEmbedder(SYNONYMS))
    store.passages.add(passages)
    store.triples.add(first)
    path = tmp_path / "ppr-graph.npz"
    graph = load_or_build(store, TableEmbedder(SYNONYMS), 0.8, path)
    store.triples.add(second)
    load_or_build(store, TableEmbedder(SYNONYMS), 0.8, path, graph=graph)
    data = bytearray(delta_path(path, 1).read_bytes())
    data[-20] ^= 0xFF
    delta_path(path, 1).write_bytes(bytes(data))
    embedder = TableEmbedder(SYNONYMS)
    rebuilt = load_or_build(store, embedder, 0.8, path)
    assert "checksum" in caplog.text
    assert embedder.embedded  # rebuilt from the store
    assert_same_edges(rebuilt.edge_kinds(), PPRGraph.build(store, TableEmbedder(SYNONYMS)).edge_kinds())
    assert not delta_path(path, 1).exists()  # the rebuild wrote a fresh base
    assert PPRGraph.load(path, TableEmbedder(SYNONYMS)).edge_kinds() == rebuilt.edge_kinds()


def test_many_updates_compact_into_a_new_base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("gear_agent.expansion.ppr_graph_files.MAX_DELTAS", 2)
    store = _store(tmp_path, TableEmbedder())
    path = tmp_path / "ppr-graph.npz"
    graph = None
    for n in range(5):
        p = _passage(n)
        store.passages.add([p])
        store.triples.add([_triple(p, f"thing {n}", "near", f"place {n}")])
        graph = load_or_build(store, TableEmbedder(), 0.8, path, graph=graph)
        segments = json.loads(manifest_path(path).read_text())["segments"]
        assert len(segments) <= 3
    assert PPRGraph.load(path, TableEmbedder()).n_triples == 5


def test_build_reports_progress_by_stage(tmp_path: Path) -> None:
    store, embedder, _, _ = _specificity_store(tmp_path)
    seen: list[tuple[str, int, int]] = []
    retriever = PPRRetriever(store, QueryEncoder(embedder), GearSettings())
    retriever.progress = lambda stage, done, total: seen.append((stage, done, total))
    retriever.retrieve("Common Thing", 2)
    stages = [s for s, _, _ in seen]
    assert {"read", "embed", "link", "synonyms", "save"} <= set(stages)
    for stage in ("read", "embed", "link", "synonyms", "save"):
        done, total = [(d, t) for s, d, t in seen if s == stage][-1]
        assert done == total


def _five_passages(tmp_path: Path) -> tuple[EmbeddedStore, PPRGraph, np.ndarray]:
    """Five passages, each with triples (no dangling vertex), their graph and a query."""
    passages, (first, second) = _batches()
    embedder = TableEmbedder(SYNONYMS)
    store = _store(tmp_path, embedder)
    store.passages.add(passages[:5])
    store.triples.add(first + second)
    return store, PPRGraph.build(store, embedder), embedder.embed_one("alpha meets gamma")


def test_local_tail_is_a_uniform_mass_on_every_passage(tmp_path: Path) -> None:
    # dense_passages below the passage count: the passages left out get mass c each (the
    # tail's estimated mean), which by linearity is the global walk of that restart vector

    store, graph, q = _five_passages(tmp_path)
    got = ppr_expand(store, graph, "x", q, None, k=2, dense_passages=2, tolerance=1e-13)

    triples, scores = choose_seeds(store, "x", q, None, 5, None)
    phrases = seed_phrase_mass(graph, triples, scores)
    hits = store.passages.vector_search(q, 2)
    top = passage_mass(graph, hits, store.passages.lowest_similarity(q), hits[0].score, 0.05)
    c = tail_mass(np.fromiter(top.values(), dtype=np.float64), graph.n_passages)
    assert 0 < c < min(top.values())
    reset = np.zeros(graph.n_vertices)
    reset[graph.passage_mask()] = c
    for vertex, mass in {**top, **phrases}.items():
        reset[vertex] = mass
    expected = sparse_personalized_pagerank(*graph.transition(), reset, 0.5, tol=1e-14)
    for passage in got:
        assert passage.score == pytest.approx(expected[graph.passage_vertex(passage.id)], abs=1e-9)
    ranked = sorted(graph.passage_vertices()[0], key=lambda v: -expected[v])
    assert [graph.passage_vertex(p.id) for p in got] == ranked[:2]


def test_the_phrase_ann_is_saved_and_restored_with_the_graph(tmp_path: Path) -> None:
    from gear_agent.expansion.ppr_graph_files import ann_path

    passages, (first, second) = _batches()
    store = _store(tmp_path, TableEmbedder(SYNONYMS))
    store.passages.add(passages)
    store.triples.add(first)
    path = tmp_path / "ppr-graph.npz"
    load_or_build(store, TableEmbedder(SYNONYMS), 0.8, path, exact_max=0)
    assert ann_path(path).is_file() and ann_path(path).suffix == ".hnsw"
    loaded = PPRGraph.load(path, TableEmbedder(SYNONYMS), exact_max=0)
    assert loaded._ann is not None and len(loaded._ann) == loaded.n_phrases
    store.triples.add(second)
    loaded.update(store)
    assert [r[:3] for r in loaded.edge_kinds()] == [
        r[:3] for r in PPRGraph.build(store, TableEmbedder(SYNONYMS), exact_max=0).edge_kinds()
    ]


def test_tail_mass_recovers_the_mean_below_the_cut_for_normal_cosines() -> None:
    from gear_agent.expansion.ppr import tail_mass

    cosines = np.random.default_rng(0).normal(0.3, 0.05, 20_000)
    masses = np.sort(0.05 * (cosines - cosines.min()) / np.ptp(cosines))[::-1]
    assert tail_mass(masses[:2000], 20_000) == pytest.approx(masses[2000:].mean(), rel=0.02)
    assert tail_mass(masses[:1], 20_000) == pytest.approx(masses[0] / 2)  # too few to fit


def test_local_tail_with_sharpened_passage_weights(tmp_path: Path) -> None:
    # sharpness 3: the tail's mean is fitted on the affine scale (cube root of mass / w) and
    # cubed back; the walk equals the global walk of that restart vector, title edges too
    store, graph, q = _five_passages(tmp_path)
    walk = walk_of(graph, store, 2.0)
    got = ppr_expand(store, graph, "x", q, None, k=2, dense_passages=2, tolerance=1e-13,
                     passage_sharpness=3.0, walk=walk)

    triples, scores = choose_seeds(store, "x", q, None, 5, None)
    phrases = seed_phrase_mass(graph, triples, scores)
    hits = store.passages.vector_search(q, 2)
    low = store.passages.lowest_similarity(q)
    top = passage_mass(graph, hits, low, hits[0].score, 0.05, sharpness=3.0)
    linear = passage_mass(graph, hits, low, hits[0].score, 0.05)
    c = 0.05 * (tail_mass(np.fromiter(linear.values(), dtype=np.float64),
                          graph.n_passages) / 0.05) ** 3
    assert 0 < c < min(top.values())
    reset = np.zeros(graph.n_vertices)
    reset[graph.passage_mask()] = c
    for vertex, mass in {**top, **phrases}.items():
        reset[vertex] = mass
    expected = sparse_personalized_pagerank(walk.transition, walk.dangling, reset, 0.5,
                                            tol=1e-14)
    for passage in got:
        assert passage.score == pytest.approx(expected[graph.passage_vertex(passage.id)], abs=1e-9)
