"""Embeddings from any OpenAI-compatible ``/v1/embeddings`` endpoint."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gear_agent.embedding.base import Embedder, normalise_rows


class OpenAIEndpointEmbedder(Embedder):
    """Embeds through ``POST {base_url}/embeddings`` with the ``openai`` client, in batches.

    Example:
        >>> embedder = OpenAIEndpointEmbedder("text-embedding-3-small",
        ...     base_url="http://localhost:8000/v1")  # doctest: +SKIP
    """

    def __init__(
        self, model: str, base_url: str, api_key: str | None = None, batch_size: int = 64
    ) -> None:
        from openai import OpenAI

        self.name = model
        self.batch_size = batch_size
        self._client = OpenAI(base_url=base_url, api_key=api_key or "not-needed", max_retries=3)
        self._dimension: int | None = None

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = int(self.embed(["dimension probe"]).shape[1])
        return self._dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            response = self._client.embeddings.create(model=self.name, input=batch)
            ordered = sorted(response.data, key=lambda item: item.index)
            rows.extend(item.embedding for item in ordered)
        if not rows:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        matrix = normalise_rows(np.asarray(rows, dtype=np.float32))
        self._dimension = matrix.shape[1]
        return matrix
