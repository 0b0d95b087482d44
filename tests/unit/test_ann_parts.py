"""ANN parts: built over centred rows, so a corpus's shared component does not crowd them."""

from __future__ import annotations

import numpy as np
import pytest

from gear_agent.store import ann


def crowded_vectors(rows: int, dimension: int = 32, seed: int = 3) -> np.ndarray:
    """Unit vectors sharing one large common component (like the stand-in's passages)."""
    rng = np.random.default_rng(seed)
    common = rng.normal(size=dimension)
    common /= np.linalg.norm(common)
    noise = rng.normal(size=(rows, dimension))
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    vectors = 0.9 * common + 0.3 * noise
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def test_mean_row_is_the_mean_of_the_range_in_chunks():
    vectors = crowded_vectors(1000)
    assert np.allclose(ann.mean_row(vectors, 100, 900, step=64), vectors[100:900].mean(axis=0), atol=1e-6)


def test_a_part_over_crowded_rows_finds_each_row_for_itself(tmp_path):
    vectors = crowded_vectors(1000)
    part = ann.build_part(tmp_path, "passage", vectors, 0, 1000)
    assert (part.file, part.start, part.stop) == ("passage-0-1000.usearch", 0, 1000)
    index = ann.AnnIndex(tmp_path, "passage")
    index.load([part])
    assert index.covered == 1000 and not index.problems
    for row in range(0, 1000, 50):  # the exact best match of a stored row is itself
        assert row in set(index.candidates(vectors[row], 50).tolist())


def test_a_rebuilt_part_is_the_saved_one_byte_for_byte(tmp_path):
    # parts are built by one insertion thread, so `gear check --repair` rebuilding a lost
    # part gives the graph it lost, and the answers it gave (with several threads the graph
    # differed between builds, and so could the top 10)
    vectors = crowded_vectors(3000)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = ann.build_part(tmp_path / "a", "triple", vectors, 0, 3000)
    again = ann.build_part(tmp_path / "b", "triple", vectors, 0, 3000)
    assert first.checksum == again.checksum
    assert (tmp_path / "a" / first.file).read_bytes() == (tmp_path / "b" / again.file).read_bytes()


def test_only_large_passage_parts_get_the_denser_graph():
    rows, large = ann.LARGE_PART_GRAPH["passage"]
    assert ann.graph_settings("passage", rows - 1) == ann.GRAPH["passage"]
    assert ann.graph_settings("passage", rows) == large
    assert large.connectivity > ann.GRAPH["passage"].connectivity
    assert ann.graph_settings("triple", 10 * rows) == ann.GRAPH["triple"]
    assert ann.graph_settings("phrase", 10) == ann.GRAPH["triple"]


def _pieced_store(path, embedder):
    from gear_agent.store.embedded.store import EmbeddedStore

    store = EmbeddedStore.open(path, embedder, ann=ann.AnnPolicy(min_rows=50, tail_max=10, piece_rows=100))
    store.passages.add(_docs(350))
    return store


def _docs(n):
    from gear_agent.ids import passage_id
    from gear_agent.types import Passage

    texts = [(f"D{i}", f"document {i} about topic {i % 13} and theme {i % 7}") for i in range(n)]
    return [Passage(passage_id(t, x), t, x, "test") for t, x in texts]


def test_plan_parts_builds_pieces_and_never_folds_a_full_one():
    policy = ann.AnnPolicy(min_rows=10, tail_max=2, piece_rows=100)
    assert ann.plan_parts([], 250, policy) == ([], 0, 100)
    full = ann.PartInfo("p-0-100.usearch", 0, 100, "")
    small = ann.PartInfo("p-100-130.usearch", 100, 130, "")
    assert ann.plan_parts([full], 250, policy) == ([full], 100, 200)
    assert ann.plan_parts([full, small], 250, policy) == ([full], 100, 200)  # the small one folds
    assert ann.plan_parts([full, small], 131, policy) is None  # the tail is searched exactly
    assert ann.plan_parts([ann.PartInfo("p-0-40.usearch", 0, 40, "")], 400, policy) == ([], 0, 100)
    assert ann.plan_parts([], 250, ann.AnnPolicy(min_rows=10, triple_piece_rows=200), "triple") == ([], 0, 200)
    with pytest.raises(ValueError, match="piece_rows"):
        ann.AnnPolicy(piece_rows=0)


def test_an_interrupted_build_keeps_its_pieces_and_resumes_with_the_rest(tmp_path, monkeypatch):
    from support.fakes import CountingEmbedder

    embedder = CountingEmbedder()
    whole = _pieced_store(tmp_path / "whole", embedder)
    seen = []
    whole.maintain(lambda stage, done, total: seen.append((stage, done, total)))
    expected = whole.view("passage").ann.parts
    assert [(p.start, p.stop) for p in expected] == [(0, 100), (100, 200), (200, 300), (300, 350)]
    assert seen[-1] == ("passage ANN", 350, 350) and ("passage ANN", 100, 350) in seen
    assert all(p.stamp is not None and p.stamp.index_id == whole.index_id() for p in expected)

    broken = _pieced_store(tmp_path / "broken", embedder)
    real, calls = ann.build_part, []

    def fails_after_two(*args, **kwargs):
        if len(calls) == 2:
            raise KeyboardInterrupt("interrupted after piece 2")
        calls.append(args[3:5])
        return real(*args, **kwargs)

    monkeypatch.setattr(ann, "build_part", fails_after_two)
    with pytest.raises(KeyboardInterrupt):
        broken.maintain()
    assert [(p.start, p.stop) for p in broken.view("passage").ann.parts] == [(0, 100), (100, 200)]
    monkeypatch.setattr(ann, "build_part", lambda *a, **k: calls.append(a[3:5]) or real(*a, **k))
    broken.maintain()  # resumes: only the pieces not kept
    assert calls == [(0, 100), (100, 200), (200, 300), (300, 350)]  # two before, two after
    resumed = broken.view("passage").ann.parts
    assert [(p.file, p.checksum) for p in resumed] == [(p.file, p.checksum) for p in expected]
    for text in ("document about topic 5 and theme 2", "theme 6", "document 301"):
        query = embedder.embed_one(text)
        assert broken.passages.vector_search(query, 5) == whole.passages.vector_search(query, 5)


def test_a_part_of_another_index_is_refused(tmp_path):
    vectors = crowded_vectors(200)
    part = ann.build_part(tmp_path, "passage", vectors, 0, 200, stamp=ann.Stamp("aaaa", 3, "c0"))
    index = ann.AnnIndex(tmp_path, "passage")
    index.load([part], index_id="bbbb")
    assert index.covered == 0 and "another index" in index.problems[0]
    index.load([part], index_id="aaaa")
    assert index.covered == 200 and not index.problems
