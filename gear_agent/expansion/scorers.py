"""Scores of a triple sequence against a query, for the beam search (GEAR, section 3.3).

``s(q, [t1, ..., tn])`` is a cosine similarity between the query and one vector
for the whole sequence. Two ways to get that vector, chosen by name:

* ``concat`` — the paper's: encode the concatenated triple texts with the
  embedding model (one encoder call per candidate sequence);
* ``sum`` — the normalised sum of the triples' stored embeddings (no encoder
  call; about two orders of magnitude faster, see ``../shared/README.md``);
* ``rerank`` — ``sum`` for every candidate, then ``concat`` for the best few of each
  beam (``beam_rerank``), all of one step in one encoder call, encodings cached
  by text (:class:`EncodingCache`); the others drop out of that step. The first step needs
  no encoder: a one-triple sequence's text is the triple's text, whose stored vector is
  its encoding.
* ``shortlist`` — ``sum`` for every candidate and the rank penalty within each beam, as
  ``sum`` would rank the step's pool; then ``concat`` for the best ``beam_shortlist``
  sequences of that pool over all beams (twice the beam width by default), in one encoder
  call, cached by text; the others drop out. Beams with weak candidates spend no encoder
  time, strong beams get more than a fixed few: the same R@15 as ``concat`` on the MuSiQue
  dev questions with 20 texts per question against 241 (``docs/ppr.md``).

``concat``, ``rerank`` and ``shortlist`` encode with the beam search's embedder, which may
be the int8 ONNX Runtime copy of the model (``beam_encoder``,
:func:`gear_agent.embedding.make_sequence_encoder`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from gear_agent.embedding.base import Embedder, normalise_rows

SequenceScorer = Callable[[np.ndarray, Sequence[Sequence[str]], np.ndarray, Sequence[str]], np.ndarray]
"""``scorer(query_vector, sequences_as_texts, summed_vectors, joined_texts) -> scores``."""


def sequence_text(triple_texts: Sequence[str]) -> str:
    """The text a sequence is encoded as under ``concat``: triple texts joined by '; '."""
    return "; ".join(triple_texts)


def score_sum(query: np.ndarray, summed: np.ndarray) -> np.ndarray:
    """Cosine of the query with each row of summed triple vectors (rows normalised here)."""
    return normalise_rows(summed) @ query


def score_concat(query: np.ndarray, texts: Sequence[str], embedder: Embedder) -> np.ndarray:
    """Cosine of the query with the encoding of each concatenated sequence text (the paper's)."""
    if not texts:
        return np.zeros(0, dtype=np.float32)
    return embedder.embed(list(texts)) @ query


class EncodingCache:
    """Encodings of sequence texts, the most recent ``size`` kept; misses go to the embedder
    in one call.

    Example:
        >>> cache = EncodingCache(embedder)  # doctest: +SKIP
        >>> cache.encode(["a; b", "a; c"]).shape  # doctest: +SKIP
        (2, 384)
    """

    def __init__(self, embedder: Embedder, size: int = 4096) -> None:
        self.embedder, self.size = embedder, size
        self._vectors: dict[str, np.ndarray] = {}

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if missing:
            self._vectors.update(zip(missing, self.embedder.embed(missing)))
            while len(self._vectors) > self.size:
                self._vectors.pop(next(iter(self._vectors)))
        if not texts:
            return np.zeros((0, self.embedder.dimension), dtype=np.float32)
        return np.stack([self._vectors[t] for t in texts])


def best_per_beam(scores: Sequence[np.ndarray], keep: int) -> list[np.ndarray]:
    """Indices of each beam's best ``keep`` candidates by score, best first (``rerank``).

    Example:
        >>> [i.tolist() for i in best_per_beam([np.array([.1, .9, .5]), np.array([.3])], 2)]
        [[1, 2], [0]]
    """
    return [np.lexsort((np.arange(len(s)), -s))[:keep] for s in scores]


def best_of_step(
    scores: Sequence[np.ndarray], keep: int, penalty: Callable[[int], float]
) -> list[np.ndarray]:
    """Indices, per beam and best first, of the ``keep`` best candidates of the whole step
    after the rank penalty within each beam (``shortlist``): the pool's top as ``sum``
    ranks it (ties: earlier beam, then better rank in its beam).

    Example:
        >>> picked = best_of_step([np.array([.9, .8, .7]), np.array([.85])], 3, lambda n: 1 - n / 10)
        >>> [i.tolist() for i in picked]
        [[0, 1], [0]]
    """
    pool: list[tuple[float, int, int, int]] = []
    orders = best_per_beam(scores, max((len(s) for s in scores), default=0))
    for b, order in enumerate(orders):
        pool += [(-float(scores[b][i]) * penalty(n), b, n, int(i)) for n, i in enumerate(order)]
    pool.sort()
    picked: list[list[int]] = [[] for _ in scores]
    for _, b, _, i in pool[:keep]:  # sorted by rank within each beam, so best first
        picked[b].append(i)
    return [np.array(p, dtype=np.int64) for p in picked]
