"""``provider:model`` embedding names through LangChain's ``init_embeddings`` (built offline)."""

from __future__ import annotations

import pytest

from gear_agent.config import GearSettings
from gear_agent.embedding import make_embedder
from gear_agent.embedding.hashing import HashingEmbedder
from gear_agent.embedding.langchain import (
    EmbeddingConfigError,
    LangChainEmbedder,
    embedder_from_name,
    embedding_provider,
)
from gear_agent.errors import GearError


def test_provider_names_go_through_init_embeddings() -> None:
    OllamaEmbeddings = pytest.importorskip("langchain_ollama").OllamaEmbeddings

    embedder = make_embedder(GearSettings(embedding_model="ollama:nomic-embed-text"))
    assert isinstance(embedder, LangChainEmbedder)
    assert isinstance(embedder.embeddings, OllamaEmbeddings)
    assert embedder.embeddings.model == "nomic-embed-text"
    assert embedder.name == "ollama:nomic-embed-text"  # what the index records


def test_openai_embeddings_read_the_usual_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-never-sent")
    embedder = embedder_from_name("openai:text-embedding-3-small")
    assert embedder.embeddings.model == "text-embedding-3-small"


def test_other_names_are_left_to_the_other_embedders() -> None:
    assert embedding_provider("sentence-transformers/all-MiniLM-L6-v2")[0] is None
    assert embedding_provider("nomic:embed")[0] is None  # not a provider LangChain knows
    assert isinstance(make_embedder(GearSettings(embedding_model="hashing-64")), HashingEmbedder)


def test_a_missing_integration_package_is_named() -> None:
    with pytest.raises(EmbeddingConfigError, match="pip install langchain-cohere") as caught:
        embedder_from_name("cohere:embed-english-v3.0")
    assert isinstance(caught.value, GearError)
    with pytest.raises(EmbeddingConfigError, match="not a provider:model"):
        embedder_from_name("all-MiniLM-L6-v2")
