"""Test doubles for index tests: a deterministic bag-of-words embedder (no model download)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from gear_agent.embedding.base import Embedder, normalise_rows
from gear_agent.text.tokenizer import tokenize


class FakeBagOfWordsEmbedder(Embedder):
    """Hashes each token into one of ``dimension`` buckets; texts sharing words are similar."""

    def __init__(self, dimension: int = 64, name: str = "fake-bag-of-words") -> None:
        self.name = name
        self._dimension = dimension
        self.calls: list[int] = []

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(len(texts))
        matrix = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in tokenize(text):
                bucket = int(hashlib.md5(token.encode()).hexdigest(), 16) % self._dimension
                matrix[row, bucket] += 1.0
        return normalise_rows(matrix)

    @property
    def texts_embedded(self) -> int:
        return sum(self.calls)
