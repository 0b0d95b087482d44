"""Any LangChain ``Embeddings`` (OpenAI, Ollama, HuggingFace, ...) as a gear-agent embedder,
given as an object or named ``provider:model`` (LangChain's ``init_embeddings``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from gear_agent.embedding.base import (
    Embedder,
    EmbeddingServiceError,
    normalise_rows,
    rows_of_one_length,
)
from gear_agent.errors import GearError


class EmbeddingConfigError(GearError, ValueError):
    """A ``provider:model`` embedding name that cannot be built (package missing, bad option)."""


def embedding_provider(name: str) -> tuple[str | None, str]:
    """``(provider, model)`` when ``name`` starts with a provider LangChain's
    ``init_embeddings`` knows (``openai:``, ``ollama:``, ``huggingface:``, ...), else
    ``(None, name)``: sentence-transformers names and local paths are left alone.

    Example:
        >>> embedding_provider("ollama:nomic-embed-text")
        ('ollama', 'nomic-embed-text')
        >>> embedding_provider("sentence-transformers/all-MiniLM-L6-v2")
        (None, 'sentence-transformers/all-MiniLM-L6-v2')
    """
    head, sep, rest = name.partition(":")
    if not sep or not rest:
        return None, name
    from langchain.embeddings.base import _BUILTIN_PROVIDERS

    provider = head.strip().lower().replace("-", "_")
    return (provider, rest.strip()) if provider in _BUILTIN_PROVIDERS else (None, name)


def embedder_from_name(name: str) -> LangChainEmbedder:
    """The LangChain embeddings ``name`` (``provider:model``) names, as an embedder whose
    name in the index is ``name`` itself.

    The provider's integration package must be installed; credentials come from its usual
    environment variables (``OPENAI_API_KEY``, ``OLLAMA_HOST``, ...). Nothing is sent until
    the first text is embedded.

    Raises:
        EmbeddingConfigError: Not a ``provider:model`` name LangChain knows, the provider's
            package is missing (named in the message), or the provider refuses the name.

    Example:
        >>> embedder_from_name("ollama:nomic-embed-text").name
        'ollama:nomic-embed-text'
    """
    provider, model = embedding_provider(name)
    if provider is None:
        raise EmbeddingConfigError(
            f"{name!r} is not a provider:model embedding name LangChain knows "
            "(e.g. openai:text-embedding-3-small, ollama:nomic-embed-text)"
        )
    from langchain.embeddings import init_embeddings

    try:
        embeddings = init_embeddings(model, provider=provider)
    except ImportError as exc:
        package = f"langchain-{provider.replace('_', '-')}"
        raise EmbeddingConfigError(
            f"GEAR_EMBEDDING_MODEL={name!r} needs the {package} package: pip install {package}"
        ) from exc
    except (ValueError, TypeError) as exc:  # the provider's own checks (missing key, bad name)
        first = " ".join(str(exc).split())[:300]
        raise EmbeddingConfigError(
            f"cannot build the embedding model {name!r}: {type(exc).__name__}: {first}"
        ) from exc
    return LangChainEmbedder(embeddings, name=name)


class LangChainEmbedder(Embedder):
    """Wraps a LangChain ``Embeddings``: ``embed_documents`` for every text, rows normalised.

    The index records ``name``; the model's ``model``/``model_name`` attribute by default.

    Example:
        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> embedder = LangChainEmbedder(DeterministicFakeEmbedding(size=8), name="fake-8")
        >>> embedder.embed(["a", "b"]).shape
        (2, 8)
    """

    def __init__(self, embeddings: Any, name: str | None = None) -> None:
        if not hasattr(embeddings, "embed_documents"):
            raise TypeError(f"{type(embeddings).__name__} is not a LangChain Embeddings")
        self.embeddings = embeddings
        self.name = name or _model_name(embeddings)
        self._dimension: int | None = None

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = int(self.embed(["dimension probe"]).shape[1])
        return self._dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        vectors = rows_of_one_length(self.embeddings.embed_documents(list(texts)), len(texts),
                                     f"the embedding model {self.name}")
        if vectors.ndim != 2:
            raise EmbeddingServiceError(
                f"{self.name}: embed_documents returned shape {vectors.shape} for {len(texts)} texts"
            )
        self._dimension = int(vectors.shape[1])
        return normalise_rows(vectors)


def _model_name(embeddings: Any) -> str:
    for attribute in ("model", "model_name", "model_id"):
        value = getattr(embeddings, attribute, None)
        if isinstance(value, str) and value:
            return value
    return type(embeddings).__name__
