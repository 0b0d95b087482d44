"""Neighbours on a real cluster: a beam step's ``neighbours_many`` (one ``_msearch``) gives
what ``neighbours`` gives for each triple, and the triple documents the store keeps from
them are forgotten once another process writes (the store generation moved)."""

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

pytestmark = pytest.mark.es

PASSAGES = [Passage(passage_id(t, text), t, text, "test") for t, (text, _) in CORPUS.items()]
TRIPLES = [Triple(triple_id(p.id, *spo), *spo, p.id) for p in PASSAGES for spo in CORPUS[p.title][1]]


@pytest.fixture
def settings(es_url: str):
    settings = GearSettings(backend="elasticsearch", es_url=es_url, es_index_prefix=f"nb-{uuid.uuid4().hex[:8]}")
    yield settings
    store = ElasticsearchStore(settings, HashingEmbedder(64))
    for name in store.indices:
        store._client.indices.delete(index=name, ignore_unavailable=True)
    store.close()


def test_neighbours_many_is_neighbours_of_each(settings: GearSettings) -> None:
    embedder = HashingEmbedder(64)
    with ElasticsearchStore(settings, embedder) as store:
        store.passages.add(PASSAGES)
        store.triples.add(TRIPLES)
        query = embedder.embed(["bridge river county"])[0]
        ids = [t.id for t in TRIPLES] + ["unknown"]
        for vector in (query, None):
            assert store.triples.neighbours_many(ids, vector, 5) == [store.triples.neighbours(t, vector, 5) for t in ids]
        assert any(store.triples.neighbours_many(ids, query, 5))


def test_a_deletion_by_another_store_is_seen_by_the_next_neighbours_and_reads(settings: GearSettings) -> None:
    embedder = HashingEmbedder(64)
    with ElasticsearchStore(settings, embedder) as first, ElasticsearchStore(settings, embedder) as second:
        first.passages.add(PASSAGES)
        first.triples.add(TRIPLES)
        query = embedder.embed(["bridge river county"])[0]
        start, found = next((t.id, n) for t in TRIPLES if (n := first.triples.neighbours(t.id, query, 20)))
        gone = next(t for t in TRIPLES if t.id == found[0])
        assert first.triples.get([gone.id])  # kept from the search
        assert second.passages.remove([gone.passage_id]) == [gone.passage_id]
        after = first.triples.neighbours(start, query, 20)
        assert gone.id not in after
        assert first.triples.get([gone.id]) == []
        with pytest.raises(KeyError):
            first.triples.vectors([gone.id])


def test_seed_searches_answer_alike_from_the_cluster_with_documents_and_from_the_kept_triples(
    settings: GearSettings, monkeypatch
) -> None:
    """``ppr``'s two triple searches in one ``search_many``: asked of the cluster with the seeds'
    documents brought along (kept, so the ``get`` after reads nothing), and answered by an exact
    scan of the kept triples on a small index: the same ids, cosines within 1e-6 (the cluster's
    are float32 ``(1 + cos) / 2``)."""
    from gear_agent.store.elasticsearch import store as es_store
    from gear_agent.store.multi_search import Search

    embedder = HashingEmbedder(64)
    with ElasticsearchStore(settings, embedder) as writer:
        writer.passages.add(PASSAGES)
        writer.triples.add(TRIPLES)
    query = embedder.embed(["bridge river county"])[0]
    searches = [Search.dense("triple", query, 5), Search.lowest("triple", query)]

    with monkeypatch.context() as patch, ElasticsearchStore(settings, embedder) as remote:
        patch.setattr(es_store, "TRIPLE_SCAN_BYTES", 0)
        with remote.snapshot():
            asked = remote.search_many(searches)
            seeds = [h.id for h in asked[0]]
            kept = remote._recent_triples.found(seeds)
            assert set(seeds) <= set(kept) and [t.id for t in remote.triples.get(seeds)] == seeds
        assert remote._expansion_cache is None
    with ElasticsearchStore(settings, embedder) as local, local.snapshot():
        scanned = local.search_many(searches)
        assert local._expansion_cache is not None and len(local._expansion_cache) == len(TRIPLES)
    assert [[h.id for h in hits] for hits in scanned] == [[h.id for h in hits] for hits in asked]
    assert [h.score for hits in scanned for h in hits] == pytest.approx([h.score for hits in asked for h in hits], abs=1e-6)
    assert len(asked[0]) == 5
