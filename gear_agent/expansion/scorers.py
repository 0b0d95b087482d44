"""Scores of a triple sequence against a query, for the beam search (GEAR, section 3.3).

``s(q, [t1, ..., tn])`` is a cosine similarity between the query and one vector
for the whole sequence. Two ways to get that vector, chosen by name:

* ``concat`` — the paper's: encode the concatenated triple texts with the
  embedding model (one encoder call per candidate sequence);
* ``sum`` — the normalised sum of the triples' stored embeddings (no encoder
  call; about two orders of magnitude faster, see ``../shared/README.md``);
* ``rerank`` — ``sum`` for every candidate, then ``concat`` for the best few of each
  beam (``BeamSettings.rerank``), all of one step in one encoder call, encodings cached
  by text (:class:`EncodingCache`); the others drop out of that step. The first step needs
  no encoder: a one-triple sequence's text is the triple's text, whose stored vector is
  its encoding.
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


SCORERS = ("sum", "concat", "rerank")


def check_scorer(name: str) -> str:
    """``name`` if it is a known scorer; else a ValueError listing the valid names."""
    if name not in SCORERS:
        raise ValueError(f"unknown sequence scorer {name!r}; choose one of {', '.join(SCORERS)}")
    return name
