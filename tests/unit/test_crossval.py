"""benchmarks/crossval.py's gate and its wrappers: a value that helps only the half it was
tuned on shows no gain on the other half; the wrappers' zero values are today's ranking."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def crossval():
    spec = importlib.util.spec_from_file_location("crossval_bench", ROOT / "benchmarks" / "crossval.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def test_a_value_that_helps_only_its_tuning_half_gains_nothing(crossval):
    miss, hit = (0.0, 0.0, 0.0, 0.0), (1.0, 1.0, 1.0, 1.0)
    results = {
        "default": [miss, miss, miss, miss],
        "lucky": [hit, miss, hit, miss],  # right on the even positions only
    }
    even, odd = crossval.folds(results, "default")
    assert even["chosen"] == "lucky" and even["gain"] == 0.0  # reported on the odd half
    assert odd["chosen"] == "default" and odd["gain"] == 0.0  # a tie keeps the default


def test_a_value_that_helps_both_halves_gains_on_both_folds(crossval):
    miss, hit = (0.0, 0.0, 0.0, 0.0), (1.0, 1.0, 1.0, 1.0)
    results = {"default": [miss, miss, miss, miss], "better": [hit, miss, hit, hit]}
    gains = [fold["gain"] for fold in crossval.folds(results, "default")]
    assert all(g > 0 for g in gains)


def test_fuse_at_weight_zero_is_ppr_alone_and_a_weight_lets_the_other_list_in(crossval):
    ranked = lambda ids: [SimpleNamespace(id=i) for i in ids]  # noqa: E731
    ppr = SimpleNamespace(retrieve=lambda q, k: ranked([f"p{i}" for i in range(k)]))
    other = SimpleNamespace(retrieve=lambda q, k: ranked([f"x{i}" for i in range(k)]))
    runtime = SimpleNamespace(settings=SimpleNamespace(rrf_k=60))
    assert crossval._fused(runtime, ppr, other, 0.0)("q") == [f"p{i}" for i in range(15)]
    fused = crossval._fused(runtime, ppr, other, 1.0)("q")
    assert fused[:2] == ["p0", "x0"] and len(fused) == 15  # PPR's first on the tie


class _Graph:
    """Two triples naming phrase 1, one naming phrase 2; every phrase in one passage."""

    vertices = {"a": 1, "b": 2, "c": 3}

    def phrase_vertex(self, phrase):
        return self.vertices.get(phrase)

    def vertex_specificity(self):
        return [1, 1, 1, 1]


def test_phrase_mean_and_link_top_k_reweigh_the_seed_phrases(crossval):
    triples = [SimpleNamespace(subject="a", object="b"), SimpleNamespace(subject="a", object="c")]
    assert crossval._mean_phrases(_Graph(), triples, [1.0, 0.5]) == {1: 0.75, 2: 1.0, 3: 0.5}
    assert crossval._top_phrases(2)(_Graph(), triples, [1.0, 0.5]) == {1: 1.0, 2: 1.0}
    assert crossval._top_phrases(0)(_Graph(), triples, [1.0, 0.5]) == {1: 1.0, 2: 1.0, 3: 0.5}
