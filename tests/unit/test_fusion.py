import pytest

from gear_agent.retrieval.base import RankedPassage, fuse_passages
from gear_agent.retrieval.fusion import rrf


def test_rrf_against_hand_computed_values():
    fused = dict(rrf([["a", "b", "c"], ["c", "a"], ["d"]], k=60))
    assert fused["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert fused["b"] == pytest.approx(1 / 62)
    assert fused["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert fused["d"] == pytest.approx(1 / 61)


def test_rrf_order_and_tie_break_by_first_appearance():
    assert [i for i, _ in rrf([["x", "y"], ["y", "x"]])] == ["x", "y"]
    assert [i for i, _ in rrf([["a", "b", "c"], ["c", "a"], ["d"]])] == ["a", "c", "d", "b"]


def test_rrf_counts_a_repeated_id_once_per_list():
    assert dict(rrf([["a", "a", "b"]], k=0)) == {"a": 1.0, "b": 0.5}


def test_rrf_k_is_used():
    assert dict(rrf([["a"]], k=1))["a"] == 0.5
    with pytest.raises(ValueError):
        rrf([["a"]], k=-1)


def test_fused_passages_keep_their_chains():
    base = [RankedPassage("p1", 9.0), RankedPassage("p2", 8.0)]
    expanded = [RankedPassage("p3", 1.0, ("t1", "t2")), RankedPassage("p1", 0.5, ("t7",))]
    fused = fuse_passages([base, expanded], k=3)
    assert [p.id for p in fused] == ["p1", "p3", "p2"]
    assert fused[0].chain == ("t7",) and fused[1].chain == ("t1", "t2") and fused[2].chain == ()
    assert fused[0].score == pytest.approx(1 / 61 + 1 / 62)
