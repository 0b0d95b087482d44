"""The page's health panel reads the index's row of the backend table: ``gear check``'s items
and the size on the embedded index, the cluster's own check on Elasticsearch (no size)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

pytest.importorskip("langserve", reason="the serve extra is not installed (pip install gear-agent[serve])")

from fastapi.testclient import TestClient  # noqa: E402
from support.fakes import StreamingChatModel  # noqa: E402
from support.tiny_corpus import CORPUS, make_settings  # noqa: E402

from gear_agent.agent.graph import build_agent  # noqa: E402
from gear_agent.embedding.hashing import HashingEmbedder  # noqa: E402
from gear_agent.ids import passage_id, triple_id  # noqa: E402
from gear_agent.open_index import OpenIndex  # noqa: E402
from gear_agent.retrieval.search import QueryEncoder  # noqa: E402
from gear_agent.serve.app import create_app  # noqa: E402
from gear_agent.store import open_store  # noqa: E402
from gear_agent.types import Passage, Triple  # noqa: E402


def health_of(settings) -> dict:  # noqa: ANN001
    embedder = HashingEmbedder(64)
    store = open_store(settings, embedder, create=True)
    passages = [Passage(passage_id(t, text), t, text, "test") for t, (text, _) in CORPUS.items()]
    store.passages.add(passages)
    store.triples.add([Triple(triple_id(p.id, *spo), *spo, p.id) for p in passages for spo in CORPUS[p.title][1]])
    store.passages.mark_extracted([p.id for p in passages])
    runtime = OpenIndex(settings, embedder, store, QueryEncoder(embedder))
    agent = build_agent(settings, index=runtime, chat_model=StreamingChatModel(respond=lambda prompt: "{}"))
    try:
        return TestClient(create_app(agent, settings, index=runtime), base_url="http://127.0.0.1").get("/ui/api/health").json()
    finally:
        store.close()


def test_the_embedded_index_shows_gear_checks_items_and_its_size(tmp_path: Path) -> None:
    health = health_of(make_settings(index_dir=tmp_path / "index"))
    assert health["backend"] == "embedded" and health["ok"] is True and health["size_bytes"] > 0
    assert health["passages"] == len(CORPUS) and "sqlite integrity_check" in {i["name"] for i in health["items"]}


@pytest.mark.es
def test_an_elasticsearch_index_shows_the_clusters_check(es_url: str) -> None:
    prefix = f"health-{uuid.uuid4().hex[:8]}"
    settings = make_settings(backend="elasticsearch", es_url=es_url, es_index_prefix=prefix)
    health = health_of(settings)
    assert health["backend"] == "elasticsearch" and health["ok"] is True and health["size_bytes"] is None
    assert health["passages"] == len(CORPUS) and health["items"], health
