"""An Elasticsearch index made before metadata existed (schema 1) is upgraded in place."""

import copy

import pytest

from gear_agent.ids import passage_id
from gear_agent.types import Passage

pytest.importorskip("elasticsearch", reason="the elasticsearch client is not installed")


def test_a_schema_1_index_gains_the_metadata_fields_and_keeps_its_documents(embedder):
    from es_fake import FakeElasticsearch

    from gear_agent.store.elasticsearch.mappings import (
        METADATA_FIELDS,
        index_mappings,
        index_settings,
    )
    from gear_agent.store.elasticsearch.store import ElasticsearchSettings, ElasticsearchStore

    server = FakeElasticsearch()
    client = server.client()
    for collection, name in (("passage", "old-passages"), ("triple", "old-triples")):
        mappings = copy.deepcopy(index_mappings(collection, embedder.name, embedder.dimension))
        mappings["_meta"]["gear_agent"]["schema_version"] = 1
        for field in METADATA_FIELDS:
            mappings["properties"].pop(field, None)
        client.indices.create(index=name, settings=index_settings(), mappings=mappings)
    vector = [float(x) for x in embedder.embed_one("Old passage\nwritten before metadata")]
    old_id = passage_id("Old passage", "written before metadata")
    client.bulk(refresh=True, operations=[{"create": {"_index": "old-passages", "_id": old_id}}, {
        "id": old_id, "title": "Old passage", "text": "written before metadata",
        "content": "Old passage\nwritten before metadata", "source": "old.txt", "extracted": False,
        "vector": vector}])
    settings = ElasticsearchSettings(es_index_prefix="old")
    store = ElasticsearchStore(settings, embedder, client=client, sleep=lambda _s: None)
    meta = client.indices.get_mapping(index="old-passages")["old-passages"]["mappings"]
    assert meta["_meta"]["gear_agent"]["schema_version"] == 2 and "meta" in meta["properties"]
    new = Passage(passage_id("New", "with metadata"), "New", "with metadata", "new.txt", {"year": 2024})
    store.passages.add([new])
    assert store.passages.get([old_id])[0].metadata == {}
    assert [h.id for h in store.passages.bm25_search("metadata", 5, where={"year": 2024})] == [new.id]
    assert store.passages.count() == 2
    again = ElasticsearchStore(settings, embedder, client=server.client(), sleep=lambda _s: None)
    assert again.passages.count(where={"source": "old.txt"}) == 1
