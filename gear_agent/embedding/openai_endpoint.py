"""Embeddings from any OpenAI-compatible ``/v1/embeddings`` endpoint."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gear_agent.embedding.base import (
    Embedder,
    EmbeddingServiceError,
    normalise_rows,
    rows_of_one_length,
)


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
        self.base_url = base_url
        self.batch_size = batch_size
        self._client = OpenAI(base_url=base_url, api_key=api_key or "not-needed", max_retries=3)
        self._dimension: int | None = None

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = int(self.embed(["dimension probe"]).shape[1])
        return self._dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` through the endpoint.

        Raises:
            EmbeddingServiceError: the endpoint cannot be reached, answers an error, or
                returns vectors of mixed lengths (one line naming the endpoint).
        """
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            response = self._create(batch)
            ordered = sorted(response.data, key=lambda item: item.index)
            rows.extend(item.embedding for item in ordered)
        if not rows:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        matrix = normalise_rows(rows_of_one_length(rows, len(texts), f"the embedding endpoint {self.base_url}"))
        self._dimension = matrix.shape[1]
        return matrix

    def _create(self, batch: list[str]):  # noqa: ANN202 - openai's CreateEmbeddingResponse
        import openai

        where = f"the embedding endpoint {self.base_url} (model {self.name!r})"
        try:
            return self._client.embeddings.create(model=self.name, input=batch)
        except openai.APIConnectionError as exc:
            raise EmbeddingServiceError(f"{where} cannot be reached ({type(exc).__name__}: {exc}); is the "
                                        "server running, and is GEAR_EMBEDDING_BASE_URL right?") from None
        except openai.APIStatusError as exc:
            raise EmbeddingServiceError(f"{where} answered HTTP {exc.status_code}: {str(exc)[:200]}") from None
        except openai.APIError as exc:
            raise EmbeddingServiceError(f"{where} failed: {type(exc).__name__}: {str(exc)[:200]}") from None
