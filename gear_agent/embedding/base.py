"""What an embedding model must offer: a name, a dimension, normalised vectors.

Progress: an embedder may report each encoder batch to the callback that
:func:`embedding_progress` installs for the current context (the CLI draws it as a bar);
outside such a block nothing is reported and nothing changes for an embedder that does
not report. Stores and the PPR graph call :meth:`Embedder.embed` as before, so their
embedding is seen batch by batch without passing a callback through them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache

import numpy as np

from gear_agent.errors import GearError
from gear_agent.text.token_chunking import TokenCounter

EmbedProgress = Callable[[int, int], None]
"""Called as ``progress(done, total)``: ``done`` of the ``total`` texts of one
:meth:`Embedder.embed` call are embedded (once with 0 at the start, then per batch)."""

_PROGRESS: ContextVar[EmbedProgress | None] = ContextVar("gear_embedding_progress", default=None)


@contextmanager
def embedding_progress(callback: EmbedProgress | None) -> Iterator[None]:
    """Report embedding progress to ``callback`` within the block (this thread and the
    asyncio tasks it starts; None silences an outer callback).

    Example:
        >>> seen = []
        >>> with embedding_progress(lambda done, total: seen.append((done, total))):
        ...     report_embedding(0, 2); report_embedding(2, 2)
        >>> seen
        [(0, 2), (2, 2)]
    """
    token = _PROGRESS.set(callback)
    try:
        yield
    finally:
        _PROGRESS.reset(token)


def current_embedding_progress() -> EmbedProgress | None:
    """The callback :func:`embedding_progress` installed here, or None."""
    return _PROGRESS.get()


def report_embedding(done: int, total: int) -> None:
    """Tell the installed callback (if any) that ``done`` of ``total`` texts are embedded."""
    callback = _PROGRESS.get()
    if callback is not None:
        callback(done, total)


class EmbeddingServiceError(GearError, RuntimeError):
    """An embedding endpoint or model failed: unreachable, an error status, or vectors that
    are not one row per text of one length; the message names the endpoint."""


class EmbeddingUnavailableError(GearError, RuntimeError):
    """Text was to be embedded by an embedder that only names a model (see
    :class:`NamedEmbedder`)."""


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

    def tokenizer(self) -> TokenCounter | None:
        """The encoder's own tokenizer and how many tokens it reads, for chunking
        (:mod:`gear_agent.text.token_chunking`); None where the model has none to offer
        (then chunks are counted in words)."""
        return None


class NamedEmbedder(Embedder):
    """An embedder that names a model and its dimension but loads nothing and embeds
    nothing: it opens an index to read, export or delete from without loading the model.

    Example:
        >>> embedder = NamedEmbedder("sentence-transformers/all-MiniLM-L6-v2", 384)
        >>> embedder.dimension
        384
        >>> try:
        ...     embedder.embed(["x"])
        ... except EmbeddingUnavailableError as exc:
        ...     print(type(exc).__name__)
        EmbeddingUnavailableError
    """

    def __init__(self, name: str, dimension: int) -> None:
        self.name = name
        self._dimension = int(dimension)

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros((0, self._dimension), dtype=np.float32)
        raise EmbeddingUnavailableError(
            f"this command opened the index without its embedding model ({self.name}), "
            "so it cannot embed text"
        )


def normalise_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), as float32."""
    matrix = np.asarray(matrix, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix[None, :]
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return matrix / norms


def rows_of_one_length(rows: Sequence[Sequence[float]], texts: int, where: str) -> np.ndarray:
    """``rows`` as a float32 matrix, refused in one line unless there is one row per text
    and every row has the same length.

    Raises:
        EmbeddingServiceError: rows of mixed lengths, or not one per text.
    """
    lengths = sorted({len(r) for r in rows})
    if len(lengths) > 1:
        raise EmbeddingServiceError(f"{where} returned vectors of mixed lengths "
                                    f"({', '.join(map(str, lengths[:5]))}) for one batch; nothing was stored")
    if len(rows) != texts:
        raise EmbeddingServiceError(f"{where} returned {len(rows)} vectors for {texts} texts; nothing was stored")
    try:
        return np.asarray(rows, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise EmbeddingServiceError(f"{where} returned vectors that are not numbers ({exc})") from None


class QueryEncoder:
    """Embeds queries, remembering recent ones so a query is encoded once per run."""

    def __init__(self, embedder: Embedder, cache_size: int = 1024) -> None:
        self.embedder = embedder
        self._cached: Callable[[str], np.ndarray] = lru_cache(maxsize=cache_size)(embedder.embed_one)

    def __call__(self, query: str) -> np.ndarray:
        return self._cached(query)
