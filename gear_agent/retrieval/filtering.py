"""Filters applied to retrieval: check that a filter matches something, keep what passes.

Base retrieval applies a filter inside the store, before ranking (``Collection.bm25_search`` and
``Collection.vector_search`` take ``where``). Lists that do not come from a store search (a beam
search's or PPR's passages) keep only the passages that pass, asking the store through
:meth:`~gear_agent.store.collections.Passages.filter_ids` (an index lookup, not a scan).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from gear_agent.filters import FilterError, Where, WhereInput, parse_where
from gear_agent.retrieval.base import RankedPassage
from gear_agent.sources import path_aware_where
from gear_agent.store.base import Store


class NothingMatchesError(FilterError):
    """No stored passage passes the filter, so no retriever can return anything."""


def checked_where(store: Store, where: WhereInput | Where | None) -> Where | None:
    """``where`` read into a :class:`~gear_agent.filters.Where` (None without conditions),
    its ``source`` tests path-aware (:func:`~gear_agent.sources.path_aware_where`), after
    checking that at least one stored passage passes it.

    Raises:
        FilterError: ``where`` cannot be read.
        NothingMatchesError: no stored passage passes it (the message gives the count).
    """
    parsed = path_aware_where(parse_where(where))
    if parsed is None:
        return None
    if store.passages.count(parsed) == 0:
        total = store.passages.count()
        raise NothingMatchesError(
            f"no passage passes the filter {parsed}: 0 of {total} passages match; "
            "check the key names and values"
        )
    return parsed


def keep_passing(
    store: Store, ranked: Sequence[RankedPassage], where: Where | None
) -> list[RankedPassage]:
    """The passages of ``ranked`` that pass ``where``, in their order (all of them without one)."""
    if where is None:
        return list(ranked)
    passing = set(store.passages.filter_ids([p.id for p in ranked], where))
    return [p for p in ranked if p.id in passing]


def keep_top_passing(
    store: Store,
    ranked_top: Callable[[int], list[RankedPassage]],
    k: int,
    where: Where | None,
) -> list[RankedPassage]:
    """The top ``k`` passing passages of a ranking that scores every passage (PPR does).

    ``ranked_top(n)`` gives the ranking's first ``n``; it is asked for a few times ``k``
    first, and for the whole ranking only when too few of those pass.
    """
    if where is None:
        return ranked_top(k)
    total = store.passages.count()
    n = min(total, max(8 * k, 200))
    while True:
        kept = keep_passing(store, ranked_top(n), where)
        if len(kept) >= k or n >= total:
            return kept[:k]
        n = total
