"""The pure selections behind the ``rerank`` and ``shortlist`` beam scorers."""

from typing import get_args

import numpy as np

from gear_agent.config import BeamScorer
from gear_agent.expansion.scorers import best_of_step, best_per_beam


def test_best_per_beam_keeps_each_beams_best_by_score_ties_by_position():
    picked = best_per_beam([np.array([0.2, 0.9, 0.9, 0.1]), np.array([]), np.array([0.5])], 2)
    assert [p.tolist() for p in picked] == [[1, 2], [], [0]]


def test_best_of_step_ranks_the_pool_after_the_rank_penalty():
    scores = [np.array([0.9, 0.88, 0.1]), np.array([0.8])]
    # beam 0: 0.9 x 1, 0.88 x 0.5 = 0.44, 0.1 x 0.25; beam 1: 0.8 x 1
    halve = lambda n: 0.5**n  # noqa: E731
    assert [p.tolist() for p in best_of_step(scores, 2, halve)] == [[0], [0]]
    no_penalty = lambda n: 1.0  # noqa: E731
    assert [p.tolist() for p in best_of_step(scores, 2, no_penalty)] == [[0, 1], []]
    assert [p.tolist() for p in best_of_step(scores, 10, halve)] == [[0, 1, 2], [0]]


def test_best_of_step_breaks_ties_by_earlier_beam():
    picked = best_of_step([np.array([0.5]), np.array([0.5])], 1, lambda n: 1.0)
    assert [p.tolist() for p in picked] == [[0], []]


def test_shortlist_is_a_known_scorer():
    assert "shortlist" in get_args(BeamScorer)
