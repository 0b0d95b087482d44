"""``ElasticsearchStore.bulk_load`` against a real cluster: the bulk settings while the block
runs, the indices' own values back afterwards, everything searchable when it returns, and
searches inside the block (a count, a walk, a delete's look-up) see what it wrote."""

from __future__ import annotations

import uuid

import pytest

pytest.importorskip("elasticsearch")

from support.tiny_corpus import CORPUS  # noqa: E402

from gear_agent.config import GearSettings  # noqa: E402
from gear_agent.embedding.hashing import HashingEmbedder  # noqa: E402
from gear_agent.ids import passage_id, triple_id  # noqa: E402
from gear_agent.store.elasticsearch.store import ElasticsearchStore  # noqa: E402
from gear_agent.types import Passage, Triple  # noqa: E402

PASSAGES = [Passage(passage_id(t, text), t, text, "test") for t, (text, _) in CORPUS.items()]
TRIPLES = [Triple(triple_id(p.id, *spo), *spo, p.id) for p in PASSAGES for spo in CORPUS[p.title][1]]

pytestmark = pytest.mark.es


def _index_settings(store: ElasticsearchStore, name: str) -> dict:
    body = store._client.indices.get_settings(index=name, flat_settings=True).body
    settings = body[name]["settings"]
    return {k: settings.get(f"index.{k}") for k in ("refresh_interval", "number_of_replicas")}


def test_bulk_load_sets_and_restores_the_index_settings_and_refreshes_once(es_url: str) -> None:
    settings = GearSettings(backend="elasticsearch", es_url=es_url,
                            es_index_prefix=f"bulk-{uuid.uuid4().hex[:8]}")
    store = ElasticsearchStore(settings, HashingEmbedder(64))
    try:
        store._client.indices.put_settings(index=store.indices.triples, settings={"index": {"refresh_interval": "7s"}})
        before = {name: _index_settings(store, name) for name in store.indices}
        with store.bulk_load():
            assert {name: _index_settings(store, name) for name in store.indices} == {
                name: {"refresh_interval": "-1", "number_of_replicas": "0"} for name in store.indices
            }
            store.passages.add(PASSAGES)
            store.triples.add(TRIPLES)
            assert len(store.triples.get([t.id for t in TRIPLES])) == len(TRIPLES)  # reads by id see them
            assert store.triples.count() == len(TRIPLES)  # a search refreshes what was written first
            assert len(list(store.triples.iterate())) == len(TRIPLES)
            store.triples.add([])
        assert {name: _index_settings(store, name) for name in store.indices} == before
        assert store.passages.count() == len(PASSAGES)  # searchable once the block returns
        assert store.triples.count() == len(TRIPLES)
        gone = PASSAGES[0].id
        with store.bulk_load():
            store.passages.add([])  # nothing new
            assert store.passages.remove([gone]) == [gone]
        assert not [t for t in store.triples.iterate() if t.passage_id == gone]
    finally:
        for name in store.indices:
            store._client.indices.delete(index=name, ignore_unavailable=True)
        store.close()
