"""ANN parts: built over centred rows, so a corpus's shared component does not crowd them."""

from __future__ import annotations

import numpy as np

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
