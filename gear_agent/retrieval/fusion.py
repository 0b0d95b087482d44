"""Reciprocal Rank Fusion (Cormack et al., 2009), the one merge every part of GEAR uses.

A document's fused score is ``sum over lists of 1 / (k + rank)`` with 1-based
ranks and ``k`` the ``rrf_k`` setting (60, as the paper); documents missing from a list get nothing from it.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

from gear_agent.config import RetrievalSettings

Id = TypeVar("Id", bound=Hashable)


def rrf_constant(k: int | None = None) -> int:
    """``k``, or the ``rrf_k`` setting's default when None: the one place a signature that
    leaves the RRF constant out gets its value.

    Example:
        >>> rrf_constant(), rrf_constant(10)
        (60, 10)
    """
    return RetrievalSettings.default_of("rrf_k") if k is None else k


def rrf(ranked_lists: Sequence[Sequence[Id]], k: int | None = None) -> list[tuple[Id, float]]:
    """Fuse ranked lists of ids into one, best first, with their RRF scores.

    An id repeated within one list counts at its first (best) rank only. Ties
    are broken by first appearance (list order, then rank), so the result is
    deterministic. ``k`` is the ``rrf_k`` setting's default (60) when None.

    Example:
        >>> rrf([["a", "b"], ["b", "c"]], k=60)
        [('b', 0.03252247488101534), ('a', 0.01639344262295082), ('c', 0.016129032258064516)]
    """
    k = rrf_constant(k)
    if k < 0:
        raise ValueError(f"RRF constant k must be >= 0, got {k}")
    scores: dict[Id, float] = {}
    for ranked in ranked_lists:
        seen: set[Id] = set()
        rank = 0
        for item in ranked:
            if item in seen:
                continue
            seen.add(item)
            rank += 1
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    order = {item: position for position, item in enumerate(scores)}
    return sorted(scores.items(), key=lambda pair: (-pair[1], order[pair[0]]))
