"""Synonym pairs of the PPR graph: phrases whose embedding cosine reaches a threshold.

Two searches, chosen by the number of synonym-eligible phrases (:data:`EXACT_MAX`):

* **exact** (small graphs, MuSiQue's 16k phrases): a blocked matrix product of the new
  phrases against all phrases, thresholded block by block; every pair is found, with no
  per-phrase cap. Cost grows with ``new x all`` (phrases^2 on a first build).
* **approximate** (large graphs): the phrases go into a usearch HNSW index
  (:func:`gear_agent.store.ann.new_index`, the store's own ANN settings, int8), added as
  they arrive; each new phrase asks it for its :data:`NEIGHBOURS` nearest phrases. The
  index's own (int8) similarity screens them: only candidates within
  :data:`SCREEN_MARGIN` of the threshold are re-scored with the exact float32 cosine, which
  decides. The int8 estimate is within 0.02 of the exact cosine (measured on 505k
  candidate pairs of the 20k synthetic corpus), so the screen loses no pair, and it spares
  the exact re-scoring of about 96% of the candidates (most of a build's time before). A phrase keeps at most
  :data:`NEIGHBOURS` synonyms found from its own side (HippoRAG 2 caps at 101 as well);
  pairs between two new phrases are found from both sides and kept once.

Why usearch: it is the store's ANN already (``benchmarks/ann_candidates.py`` chose it over
faiss and hnswlib), it adds incrementally and saves to one file.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

EXACT_MAX = 20_000
"""Up to this many eligible phrases the search is exact (seconds); above it, approximate."""
NEIGHBOURS = 100
"""Candidates per new phrase in the approximate search (HippoRAG 2 keeps up to 101)."""
SCREEN_MARGIN = 0.05
"""Candidates whose int8 cosine estimate is below ``threshold - SCREEN_MARGIN`` are not
re-scored (the estimate's error is under 0.02)."""
RESCORE_PAIRS = 65_536
"""Candidate pairs re-scored per numpy call (their vectors are gathered: pairs x dim floats)."""
BLOCK_ROWS = 512
"""Phrases per block of the exact search; a block holds ``rows x phrases`` floats."""


def exact_pairs(
    vectors: np.ndarray, eligible: np.ndarray, first_new_row: int, threshold: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair (new phrase, any phrase) with cosine >= ``threshold``, each pair once.

    Args:
        vectors: Unit phrase vectors, one row per phrase.
        eligible: Which rows take part.
        first_new_row: Rows from here on are new; pairs of two old rows are not searched.
        threshold: Inclusive cosine threshold.

    Returns:
        ``(row_a, row_b, cosine)`` arrays.
    """
    rows_all = np.flatnonzero(eligible)
    old = rows_all[rows_all < first_new_row]
    new = rows_all[rows_all >= first_new_row]
    found_a, found_b, found_c = [], [], []
    for start in range(0, len(new), BLOCK_ROWS):
        rows = new[start : start + BLOCK_ROWS]
        candidates = np.concatenate([old, new[start:]])
        similarity = vectors[rows] @ vectors[candidates].T
        q, c = np.nonzero(similarity >= threshold)
        a, b = rows[q], candidates[c]
        keep = (b < first_new_row) | (b > a)  # not itself, and a new pair once
        found_a.append(a[keep])
        found_b.append(b[keep])
        found_c.append(similarity[q[keep], c[keep]])
    return _joined(found_a, np.int64), _joined(found_b, np.int64), _joined(found_c, np.float32)


def _joined(parts: list[np.ndarray], dtype: type) -> np.ndarray:
    return np.concatenate(parts).astype(dtype) if parts else np.empty(0, dtype=dtype)


class PhraseANN:
    """An HNSW index of phrase rows (key = phrase row), grown as phrases arrive.

    Example:
        >>> ann = PhraseANN(384)  # doctest: +SKIP
        >>> ann.add(vectors, rows)  # doctest: +SKIP
        >>> ann.pairs(vectors, rows, 0.8)  # doctest: +SKIP
    """

    def __init__(self, dimension: int) -> None:
        from gear_agent.store.ann import new_index

        self.index = new_index(dimension)

    def __len__(self) -> int:
        return len(self.index)

    def add(self, vectors: np.ndarray, rows: np.ndarray) -> None:
        """Add the phrase rows ``rows`` (their vectors are ``vectors[rows]``).

        One thread: HNSW inserts made by several threads at once link the graph in the
        order the threads happen to run, so two builds of the same commit found different
        synonym pairs and ranked differently (a rebuilt graph cache changed PPR answers,
        ``benchmarks/damage_matrix.py``); inserted by one thread in row order, the graph is
        a function of the commit.
        """
        if len(rows):
            self.index.add(
                np.asarray(rows, dtype=np.uint64),
                np.ascontiguousarray(vectors[rows]),
                threads=1,
            )

    def pairs(
        self, vectors: np.ndarray, rows: np.ndarray, threshold: float
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Pairs (row in ``rows``, any indexed row) with exact cosine >= ``threshold``.

        The rows must be in the index already. A pair may come twice (once from each
        side); the graph keeps it once.
        """
        from gear_agent.store.ann import threads

        if not len(rows) or not len(self.index):
            empty = np.empty(0, dtype=np.int64)
            return empty, empty, np.empty(0, dtype=np.float32)
        count = min(NEIGHBOURS + 1, len(self.index))
        matches = self.index.search(
            np.ascontiguousarray(vectors[rows]), count, threads=threads()
        )
        keys = np.asarray(matches.keys, dtype=np.int64).reshape(len(rows), -1)
        counts = np.asarray(matches.counts, dtype=np.int64).reshape(-1)
        estimate = (1.0 - np.asarray(matches.distances, dtype=np.float64).reshape(keys.shape))
        estimate /= self._unit_similarity()
        valid = np.arange(keys.shape[1])[None, :] < counts[:, None]
        valid &= estimate >= threshold - SCREEN_MARGIN
        a = np.repeat(np.asarray(rows, dtype=np.int64), keys.shape[1])[valid.ravel()]
        b = keys.ravel()[valid.ravel()]
        keep = a != b
        a, b = a[keep], b[keep]
        cosine = np.empty(len(a), dtype=np.float32)
        for start in range(0, len(a), RESCORE_PAIRS):  # bounded memory: pairs x dimension
            part = slice(start, start + RESCORE_PAIRS)
            cosine[part] = np.einsum("ij,ij->i", vectors[a[part]], vectors[b[part]])
        hit = cosine >= threshold
        return a[hit], b[hit], cosine[hit]

    def _unit_similarity(self) -> float:
        """``1 - distance`` this kind of index reports for two equal unit vectors: the
        scale of its similarity estimate (int8 inner products come scaled by 127^2),
        found by asking a two-vector index of the same kind, not assumed."""
        unit = getattr(self, "_unit", None)
        if unit is None:
            from usearch.index import Index

            probe = Index(ndim=self.index.ndim, metric=self.index.metric, dtype=self.index.dtype)
            first = np.zeros((2, self.index.ndim), dtype=np.float32)
            first[0, 0] = first[1, 1] = 1.0
            probe.add(np.arange(2, dtype=np.uint64), first)
            found = probe.search(first[0], 1)
            unit = self._unit = float(1.0 - np.asarray(found.distances).ravel()[0])
        return unit

    def save(self, path: Path) -> None:
        self.index.save(str(path))

    @classmethod
    def restore(cls, path: Path, dimension: int) -> PhraseANN:
        """The index saved at ``path``; ValueError when it is not one of ``dimension``."""
        from usearch.index import Index

        ann = cls.__new__(cls)
        index = Index.restore(str(path))
        if index is None or index.ndim != dimension:
            raise ValueError(f"{path} is not a phrase index of dimension {dimension}")
        ann.index = index
        return ann
