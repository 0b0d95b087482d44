"""BM25 on Elasticsearch with exact document lengths, as the embedded store scores.

Lucene keeps each document's length in one byte (``SmallFloat.intToByte4``: exact up to
a few dozen tokens, then buckets), so Elasticsearch's BM25 scores are slightly off for
longer texts and near ties swap; the embedded store uses the exact lengths. With
``GEAR_ES_EXACT_BM25`` the backend asks the cluster for ``k + EXTRA`` hits, then scores
them again from their term vectors (``_mtermvectors``: each document's terms and
frequencies, whose sum is its exact length, the terms' document frequencies and the
field's document count and total length) and the query's terms (``_analyze`` with the
field's own analyzer), by the formula of :mod:`gear_agent.store.bm25`. The order is then
the embedded store's, except where a document outside the cluster's ``k + EXTRA`` would
have entered the top ``k`` (a length error that large does not occur) and between exactly
equal scores (the embedded store breaks those by insertion order, this by ``_seq_no``, the
order of the last write on the index's one shard: the same order unless a document was
written again, as marking a passage extracted does).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from gear_agent.store.bm25 import K1, B, lucene_idf, lucene_tf
from gear_agent.types import Hit

EXTRA = 50
"""Candidates asked beyond ``k``, among which the exact top ``k`` is chosen."""


def candidates(k: int) -> int:
    """How many hits to ask the cluster for, to rescore down to ``k``."""
    return k + EXTRA


def query_terms(analyzed: dict[str, Any]) -> Counter[str]:
    """The terms of an ``_analyze`` answer, counted (a repeated term counts as often)."""
    return Counter(token["token"] for token in analyzed.get("tokens", []))


def rescore(terms: Counter[str], vectors: dict[str, Any], field: str, k: int,
            order: dict[str, int] | None = None) -> list[Hit]:
    """The top ``k`` of the documents of an ``_mtermvectors`` answer by exact BM25; equal
    scores by ``order`` (each id's ``_seq_no``: the order written, on one shard), then id.

    Example:
        >>> doc = {"_id": "a", "term_vectors": {"f": {
        ...     "field_statistics": {"doc_count": 2, "sum_ttf": 4},
        ...     "terms": {"x": {"term_freq": 1, "doc_freq": 1}, "y": {"term_freq": 1}}}}}
        >>> [h.id for h in rescore(Counter({"x": 1}), {"docs": [doc]}, "f", 1)]
        ['a']
    """
    scored: list[Hit] = []
    for doc in vectors.get("docs", []):
        vector = (doc.get("term_vectors") or {}).get(field)
        if not vector:
            continue
        stats = vector["field_statistics"]
        n_docs, total = int(stats["doc_count"]), float(stats["sum_ttf"])
        doc_terms = vector.get("terms") or {}
        length = np.float64(sum(t["term_freq"] for t in doc_terms.values()))
        score = np.float64(0.0)
        for term, boost in terms.items():
            found = doc_terms.get(term)
            if found is None:
                continue
            idf = float(lucene_idf(np.float64(found["doc_freq"]), n_docs))
            score += boost * idf * lucene_tf(np.float64(found["term_freq"]), length, total / n_docs, K1, B)
        if score > 0:
            scored.append(Hit(doc["_id"], float(score)))
    order = order or {}
    scored.sort(key=lambda hit: (-hit.score, order.get(hit.id, 0), hit.id))
    return scored[:k]


def termvectors_request(field: str, ids: list[str]) -> dict[str, Any]:
    """The ``_mtermvectors`` keywords for ``ids``: terms, their frequencies and statistics."""
    return {"ids": ids, "fields": [field], "term_statistics": True, "field_statistics": True,
            "positions": False, "offsets": False, "payloads": False, "realtime": True}
