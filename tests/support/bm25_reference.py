"""The in-memory BM25 reference the embedded store's postings are tested against: Lucene's
BM25 (:mod:`gear_agent.store.bm25`) over a fixed list of tokenised documents, as a sparse
term x document matrix. It produced the ``../shared`` BM25 row; it is not product code."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
from scipy import sparse

from gear_agent.store.bm25 import K1, B, lucene_idf, lucene_tf, top_k


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
