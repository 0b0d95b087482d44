"""Embedding models: a local sentence-transformers model (the default), an OpenAI-compatible
endpoint, or any LangChain embeddings integration named ``provider:model``."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from gear_agent.embedding.base import Embedder, normalise_rows

if TYPE_CHECKING:
    from gear_agent.config import EmbeddingSettings, GearSettings
    from gear_agent.text.token_chunking import TokenCounter

__all__ = [
    "Embedder", "embedder_name", "encoder_tokenizer", "make_embedder", "make_sequence_encoder",
    "normalise_rows",
]


def embedder_name(settings: EmbeddingSettings) -> str:
    """The name :func:`make_embedder` would give its embedder (the name an index records),
    without loading a model.

    Example:
        >>> from gear_agent.config import GearSettings
        >>> embedder_name(GearSettings(embedding_model="all-MiniLM-L6-v2"))
        'sentence-transformers/all-MiniLM-L6-v2'
    """
    from gear_agent.embedding.hashing import NAME_PATTERN
    from gear_agent.embedding.sentence_transformer import canonical_model_name

    if settings.embedding_base_url:
        return settings.embedding_model
    stand_in = NAME_PATTERN.match(settings.embedding_model)
    if stand_in:
        return f"hashing-{int(stand_in.group(1))}"
    return canonical_model_name(settings.embedding_model)


def encoder_tokenizer(settings: EmbeddingSettings) -> TokenCounter | None:
    """The tokenizer of the encoder :func:`make_embedder` would load, read from the local
    model folder without loading the model (chunking runs before the model loads); None for
    an endpoint, a LangChain provider, a stand-in ``hashing-*`` embedder or a model without
    a local folder (then chunks are counted in words)."""
    from gear_agent.embedding.hashing import NAME_PATTERN
    from gear_agent.embedding.langchain import embedding_provider
    from gear_agent.embedding.sentence_transformer import EmbeddingModelError, resolve_model_path
    from gear_agent.embedding.tokenizer import load_encoder_tokenizer

    model = settings.embedding_model
    if settings.embedding_base_url or NAME_PATTERN.match(model) or embedding_provider(model)[0]:
        return None
    try:
        path = Path(resolve_model_path(model))
    except EmbeddingModelError:
        return None  # loading the model says so, with the fix
    return load_encoder_tokenizer(path, embedder_name(settings)) if path.is_dir() else None


def make_embedder(settings: EmbeddingSettings) -> Embedder:
    """The embedder the settings name: an endpoint when ``embedding_base_url`` is set,
    the model-free :class:`~gear_agent.embedding.hashing.HashingEmbedder` for
    ``hashing-<dimension>`` (benchmarks), LangChain's ``init_embeddings`` for a
    ``provider:model`` name (``openai:text-embedding-3-small``, ``ollama:nomic-embed-text``;
    its integration package must be installed), else a sentence-transformers model."""
    from gear_agent.embedding.hashing import NAME_PATTERN, HashingEmbedder
    from gear_agent.embedding.langchain import embedder_from_name, embedding_provider

    stand_in = NAME_PATTERN.match(settings.embedding_model)
    if stand_in and not settings.embedding_base_url:
        return HashingEmbedder(int(stand_in.group(1)))
    if not settings.embedding_base_url and embedding_provider(settings.embedding_model)[0]:
        return embedder_from_name(settings.embedding_model)
    if settings.embedding_base_url:
        from gear_agent.embedding.openai_endpoint import OpenAIEndpointEmbedder

        return OpenAIEndpointEmbedder(
            settings.embedding_model,
            base_url=settings.embedding_base_url,
            api_key=settings.embedding_api_key,
            batch_size=settings.embedding_batch_size,
        )
    from gear_agent.embedding.sentence_transformer import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(
        settings.embedding_model,
        batch_size=settings.embedding_batch_size,
        device=settings.embedding_device,
    )


def make_sequence_encoder(settings: GearSettings, embedder: Embedder) -> Embedder:
    """The encoder of the beam search's sequence texts (``concat``, ``rerank``, ``shortlist``).

    ``embedder`` itself unless ``beam_encoder`` is ``int8``, the scorer encodes sequences, and
    the model runs on the CPU (on a GPU the model itself is fast: ``embedding_device``); then
    the int8 ONNX Runtime copy of the local sentence-transformers model
    (:mod:`gear_agent.embedding.onnx_int8`). Where that cannot be had (ONNX Runtime missing,
    not a local sentence-transformers model) one warning line says why, and ``embedder`` is
    used: the scores are the float model's, only slower.
    """
    if settings.beam_encoder != "int8" or settings.beam_scorer == "sum":
        return embedder
    if not settings.embedding_device.startswith("cpu"):
        return embedder
    from gear_agent.embedding.onnx_int8 import INSTALL_HINT, Int8OnnxEmbedder, int8_available
    from gear_agent.embedding.sentence_transformer import (
        EmbeddingModelError,
        SentenceTransformerEmbedder,
    )

    folder = getattr(embedder, "folder", None)
    if not isinstance(embedder, SentenceTransformerEmbedder) or folder is None:
        reason = f"{embedder.name} is not a local sentence-transformers model"
    elif not int8_available():
        reason = f"ONNX Runtime is not installed ({INSTALL_HINT})"
    else:
        try:
            return Int8OnnxEmbedder(folder, embedder.name)
        except EmbeddingModelError as exc:
            reason = str(exc)
    warnings.warn(
        f"beam_encoder=int8: {reason}; sequence texts use the embedding model", stacklevel=2
    )
    return embedder
