"""What an embedding model must offer: a name, a dimension, normalised vectors."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np


class Embedder(ABC):
    """Turns texts into L2-normalised float32 vectors, in batches."""

    #: Canonical model name, recorded in an index's manifest.
    name: str

    @property
    @abstractmethod
    def dimension(self) -> int:
        """Length of every vector."""

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts; returns an array of shape ``(len(texts), dimension)``, rows of norm 1."""

    def embed_one(self, text: str) -> np.ndarray:
        """Embed a single text; returns a vector of shape ``(dimension,)``."""
        return self.embed([text])[0]


def normalise_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), as float32."""
    matrix = np.asarray(matrix, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix[None, :]
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return matrix / norms
