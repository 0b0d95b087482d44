"""Lucene's BM25: its constants, idf and tf saturation, and the top-k selection the stores share.

Lucene (8 and later, so Elasticsearch 7+) scores a term ``t`` in document ``d``
as ``idf(t) * tf / (tf + k1 * (1 - b + b * |d| / avgdl))`` with
``idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))``; the ``(k1 + 1)`` factor of
Robertson's original is dropped, which changes no ranking. A query's score is
the sum over its terms; a term repeated in the query counts as often as it
appears (Lucene merges duplicate SHOULD clauses by summing their boosts).
Elasticsearch stores document lengths lossily (one byte), so its scores may
differ in the last digits; rankings agree except near ties.

The embedded store scores from its postings (:mod:`gear_agent.store.embedded.postings`); the
in-memory reference they are tested against, ``BM25Index``, lives in the tests
(``tests/support/bm25_reference.py``).
"""

from __future__ import annotations

import numpy as np

K1 = 1.2
B = 0.75


def lucene_idf(doc_freq: np.ndarray, n_docs: int) -> np.ndarray:
    """Lucene's BM25 idf: ``ln(1 + (N - df + 0.5) / (df + 0.5))``."""
    return np.log1p((n_docs - doc_freq + 0.5) / (doc_freq + 0.5))


def lucene_tf(tf: np.ndarray, doc_len: np.ndarray, avg_len: float, k1: float, b: float) -> np.ndarray:
    """Lucene's BM25 term-frequency saturation: ``tf / (tf + k1 * (1 - b + b * dl / avgdl))``."""
    return tf / (tf + k1 * (1.0 - b + b * doc_len / max(avg_len, 1e-9)))


def top_k(scores: np.ndarray, k: int, positive_only: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Indices and values of the ``k`` largest scores, best first, ties by lower index."""
    if positive_only:
        candidates = np.flatnonzero(scores > 0)
    else:
        candidates = np.arange(len(scores))
    if len(candidates) == 0 or k <= 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
    if len(candidates) > k:
        values = scores[candidates]
        kth_best = np.partition(values, len(values) - k)[len(values) - k]
        candidates = candidates[values >= kth_best]  # keeps every tie with the k-th
    order = np.lexsort((candidates, -scores[candidates]))
    chosen = candidates[order][:k]
    return chosen, scores[chosen]
