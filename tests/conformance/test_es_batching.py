"""What graph expansion asks Elasticsearch per question (the fake records every request):
NaiveGE's start triples in one search, a beam step in one ``_msearch``, the vectors and
documents of what those brought back answered without another request."""

from __future__ import annotations

import pytest
from support.fakes import make_passage, make_triple

from gear_agent.config import GearSettings
from gear_agent.embedding.hashing import HashingEmbedder
from gear_agent.open_index import OpenIndex
from gear_agent.registry import make_retriever
from gear_agent.retrieval.search import QueryEncoder


def test_naive_ge_asks_for_all_base_passages_triples_in_one_search(tmp_path) -> None:
    pytest.importorskip("elasticsearch", reason="the elasticsearch client is not installed")
    from es_fake import FakeElasticsearch

    from gear_agent.store.elasticsearch.store import ElasticsearchStore

    server = FakeElasticsearch()
    settings = GearSettings(backend="elasticsearch", es_index_prefix="b", es_cache_dir=tmp_path)
    embedder = HashingEmbedder(64)
    store = ElasticsearchStore(settings, embedder, client=server.client())
    passages = [make_passage(f"Person {i}", f"Person {i} founded Company {i} in City {i % 4}.") for i in range(30)]
    store.passages.add(passages)
    store.triples.add([make_triple(p, f"Person {i}", "founded", f"Company {i}") for i, p in enumerate(passages)]
                      + [make_triple(p, f"Company {i}", "based in", f"City {i % 4}") for i, p in enumerate(passages)])
    retriever = make_retriever("hybrid+naive_ge", OpenIndex(settings, embedder, store, QueryEncoder(embedder)))
    start = len(server.requests)
    found = retriever.retrieve("Which company is based in City 2?", 15)
    asked = [(r.method, r.path) for r in server.requests[start:]]
    assert found
    of_passages = [r for r in server.requests[start:] if "passage_id" in str(r.body)]
    assert len(of_passages) == 1  # the 15 base passages' triples: one terms search
    assert ("POST", "/b-triples/_mget") not in asked  # vectors and documents came with the hits
    assert asked.count(("GET", "/b-changes/_doc/generation")) == 1  # one commit per question
    beam_steps = asked.count(("POST", "/b-triples/_msearch"))
    assert 1 <= beam_steps and len(asked) == 4 + beam_steps  # generation, bm25, kNN, start triples
