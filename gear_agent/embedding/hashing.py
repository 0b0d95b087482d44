"""A model-free stand-in embedder: words hashed into signed buckets.

Not for real retrieval. It exists so that benchmarks can measure the index and the
search code without the encoder (``GEAR_EMBEDDING_MODEL=hashing-384``), and so that
tests get deterministic vectors with no model to load. Texts that share words get
similar vectors; word order and meaning are ignored.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from gear_agent.embedding.base import Embedder, normalise_rows

NAME_PATTERN = re.compile(r"^hashing-(\d+)$")
"""Model names that select this embedder: ``hashing-<dimension>``."""

_TOKEN = re.compile(r"\w+")


class HashingEmbedder(Embedder):
    """Bag of words hashed (blake2b) into ``dimension`` signed buckets, L2-normalised.

    Deterministic across processes and machines (no ``hash()`` randomisation).

    Example:
        >>> embedder = HashingEmbedder(64)
        >>> embedder.name, embedder.embed(["Paris is in France"]).shape
        ('hashing-64', (1, 64))
    """

    def __init__(self, dimension: int = 384, name: str | None = None) -> None:
        if dimension < 1:
            raise ValueError(f"dimension must be at least 1, got {dimension}")
        self._dimension = dimension
        self.name = name or f"hashing-{dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        matrix = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in _TOKEN.findall(text.lower()):
                digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
                bucket = int.from_bytes(digest[:4], "little") % self._dimension
                matrix[row, bucket] += 1.0 if digest[4] & 1 else -1.0
        return normalise_rows(matrix)
