"""Lucene's BM25 over a fixed list of tokenised documents, as sparse matrices.

Lucene (8 and later, so Elasticsearch 7+) scores a term ``t`` in document ``d``
as ``idf(t) * tf / (tf + k1 * (1 - b + b * |d| / avgdl))`` with
``idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))``; the ``(k1 + 1)`` factor of
Robertson's original is dropped, which changes no ranking. A query's score is
the sum over its terms; a term repeated in the query counts as often as it
appears (Lucene merges duplicate SHOULD clauses by summing their boosts).
Elasticsearch stores document lengths lossily (one byte), so its scores may
differ in the last digits; rankings agree except near ties.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
from scipy import sparse

K1 = 1.2
B = 0.75


def lucene_idf(doc_freq: np.ndarray, n_docs: int) -> np.ndarray:
    """Lucene's BM25 idf: ``ln(1 + (N - df + 0.5) / (df + 0.5))``."""
    return np.log1p((n_docs - doc_freq + 0.5) / (doc_freq + 0.5))


def lucene_tf(tf: np.ndarray, doc_len: np.ndarray, avg_len: float, k1: float, b: float) -> np.ndarray:
    """Lucene's BM25 term-frequency saturation: ``tf / (tf + k1 * (1 - b + b * dl / avgdl))``."""
    return tf / (tf + k1 * (1.0 - b + b * doc_len / max(avg_len, 1e-9)))


class BM25Index:
    """A term x document matrix of BM25 weights; a query is a sum of its terms' rows.

    Example:
        >>> index = BM25Index([["paris", "france"], ["berlin", "germany"]])
        >>> index.search(["berlin"], k=1)[0].tolist()
        [1]
    """

    def __init__(self, documents: Sequence[Sequence[str]], k1: float = K1, b: float = B) -> None:
        self.k1, self.b = k1, b
        self.n_docs = len(documents)
        vocabulary: dict[str, int] = {}
        rows: list[int] = []
        cols: list[int] = []
        tfs: list[int] = []
        doc_len = np.zeros(self.n_docs, dtype=np.float64)
        for doc_index, tokens in enumerate(documents):
            doc_len[doc_index] = len(tokens)
            for term, tf in Counter(tokens).items():
                rows.append(vocabulary.setdefault(term, len(vocabulary)))
                cols.append(doc_index)
                tfs.append(tf)
        self.vocabulary = vocabulary
        row_arr = np.asarray(rows, dtype=np.int64)
        col_arr = np.asarray(cols, dtype=np.int64)
        tf_arr = np.asarray(tfs, dtype=np.float64)
        avg_len = float(doc_len.mean()) if self.n_docs else 0.0
        doc_freq = np.bincount(row_arr, minlength=len(vocabulary)).astype(np.float64)
        weights = lucene_idf(doc_freq, self.n_docs)[row_arr] * lucene_tf(
            tf_arr, doc_len[col_arr], avg_len, k1, b
        )
        self._matrix = sparse.csr_matrix(
            (weights.astype(np.float32), (row_arr, col_arr)), shape=(len(vocabulary), self.n_docs)
        )

    def scores(self, query_tokens: Sequence[str]) -> np.ndarray:
        """BM25 score of every document for the query (zeros where no term matches)."""
        counts = Counter(t for t in query_tokens if t in self.vocabulary)
        if not counts or self.n_docs == 0:
            return np.zeros(self.n_docs, dtype=np.float32)
        term_rows = [self.vocabulary[t] for t in counts]
        boosts = np.asarray([counts[t] for t in counts], dtype=np.float32)
        return np.asarray(boosts @ self._matrix[term_rows]).ravel()

    def search(self, query_tokens: Sequence[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        """Indices and scores of the top ``k`` documents with a positive score, best first.

        Ties are broken by document order (lower index first), as Lucene breaks them by doc id.
        """
        scores = self.scores(query_tokens)
        return top_k(scores, k, positive_only=True)


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
