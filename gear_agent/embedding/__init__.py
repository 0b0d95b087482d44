"""Embedding models: a local sentence-transformers model or an OpenAI-compatible endpoint."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gear_agent.embedding.base import Embedder, normalise_rows

if TYPE_CHECKING:
    from gear_agent.config import GearSettings

__all__ = ["Embedder", "make_embedder", "normalise_rows"]


def make_embedder(settings: GearSettings) -> Embedder:
    """The embedder the settings name: an endpoint when ``embedding_base_url`` is set."""
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
