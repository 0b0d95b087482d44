"""The change feed on every backend (embedded, the Elasticsearch fake, a live cluster with
marker ``es``): derived state brought up to date from it equals state built from scratch,
and a reader inside a snapshot sees one commit while another store object writes."""

from __future__ import annotations

from typing import Any

import pytest
from support.fakes import make_passage, make_triple

from gear_agent.embedding.base import Embedder
from gear_agent.expansion.ppr import PPRRetriever
from gear_agent.expansion.ppr_graph import PPRGraph
from gear_agent.retrieval.search import QueryEncoder
from gear_agent.store.base import Store, StoreError
from gear_agent.store.changes import Stamp
from gear_agent.types import Passage, Triple

QUERIES = ("Where was Person 3 born?", "Who founded Company 7?", "City 2 river", "Person 11 spouse")


def _corpus(start: int, count: int) -> tuple[list[Passage], list[Triple]]:
    """``count`` passages, each with three triples linking people, companies and cities (so
    that the graph has shared phrases across passages)."""
    passages, triples = [], []
    for i in range(start, start + count):
        p = make_passage(f"Person {i}", f"Person {i} was born in City {i % 5} and founded Company {i}. "
                         f"Person {i} married Person {(i + 3) % (start + count)}.")
        passages.append(p)
        triples += [make_triple(p, f"Person {i}", "born in", f"City {i % 5}"),
                    make_triple(p, f"Person {i}", "founded", f"Company {i}"),
                    make_triple(p, f"Person {i}", "spouse", f"Person {(i + 3) % (start + count)}")]
    return passages, triples


def _ranking(store: Store, graph: PPRGraph) -> list[list[tuple[str, float]]]:
    retriever = PPRRetriever(store, QueryEncoder(store.embedder), graph=graph, graph_path=None)
    return [[(p.id, round(p.score, 9)) for p in retriever.retrieve(q, 10)] for q in QUERIES]


def test_the_ppr_graph_brought_up_to_date_ranks_as_one_built_from_scratch(backend: Any, embedder: Embedder) -> None:
    store = backend.open(embedder)  # the writer; the rankings read through ``reader``
    reader = backend.open(embedder)  # (a retriever updates the graph after its store's commits)
    passages, triples = _corpus(0, 12)
    store.passages.add(passages)
    store.triples.add(triples)
    graph = PPRGraph.build(reader, embedder)
    more, more_triples = _corpus(12, 6)
    store.passages.add(more)
    store.triples.add(more_triples)
    added = graph.update(reader)
    assert not added.rebuilt and (added.passages, added.triples) == (6, 18)  # from the feed
    assert _ranking(reader, graph) == _ranking(reader, PPRGraph.build(reader, embedder))
    store.passages.remove([passages[3].id, more[0].id])
    removed = graph.update(reader)
    assert not removed.rebuilt and removed.embedded == 0  # taken out in place, from the feed
    assert (removed.passages_removed, removed.triples_removed) == (2, 6)
    assert graph.generation == reader.generation()
    scratch = PPRGraph.build(reader, embedder)
    assert _ranking(reader, graph) == _ranking(reader, scratch)
    assert graph.edge_kinds() == scratch.edge_kinds()  # the same graph, numbered otherwise
    # adds and deletes in one change: the deleted passage comes back, another goes
    store.passages.add([passages[3]])
    store.triples.add([t for t in triples if t.passage_id == passages[3].id])
    store.passages.remove([passages[5].id])
    mixed = graph.update(reader)
    assert not mixed.rebuilt and (mixed.passages, mixed.passages_removed) == (1, 1)
    scratch = PPRGraph.build(reader, embedder)
    assert _ranking(reader, graph) == _ranking(reader, scratch)
    assert graph.edge_kinds() == scratch.edge_kinds()


def test_a_reader_in_a_snapshot_sees_one_commit_while_another_writes(
    backend: Any, embedder: Embedder
) -> None:
    writer = backend.open(embedder)
    passages, triples = _corpus(0, 6)
    writer.passages.add(passages)
    writer.triples.add(triples)
    reader = backend.open(embedder)
    retriever = PPRRetriever(reader, QueryEncoder(embedder), graph_path=None)
    first = retriever.retrieve("Who founded Company 6?", 3)
    late = make_passage("Company 6", "Company 6 was founded by Person 6 in City 1.")
    with reader.snapshot():
        generation = reader.generation()
        writer.passages.add([late])
        writer.triples.add([make_triple(late, "Person 6", "founded", "Company 6")])
        assert reader.generation() == generation  # the commit the snapshot began at
        assert reader.changes_since(generation).empty
        assert [p.id for p in retriever.retrieve("Who founded Company 6?", 3)] == [p.id for p in first]
        assert retriever.graph.generation == generation
    assert reader.generation() == writer.generation() > generation
    changes = reader.changes_since(generation)
    assert changes.complete and changes.passages_added == (late.id,) and len(changes.triples_added) == 1
    assert late.id in [p.id for p in retriever.retrieve("Who founded Company 6?", 3)]
    assert retriever.graph.generation == reader.generation()


def test_an_id_deleted_then_added_again_is_in_both_lists(store: Store) -> None:
    p = make_passage("Echo", "Echo was a nymph.")
    t = make_triple(p, "Echo", "is a", "nymph")
    store.passages.add([p])
    store.triples.add([t])
    mark = store.generation()
    store.passages.remove([p.id])
    store.passages.add([p])
    changes = store.changes_since(mark)
    assert changes.complete
    assert changes.passages_removed == (p.id,) and changes.passages_added == (p.id,)
    assert changes.triples_removed == (t.id,) and changes.triples_added == ()
    # added after the mark, then removed: in neither list
    q = make_passage("Narcissus", "Narcissus loved his reflection.")
    store.passages.add([q])
    store.passages.remove([q.id])
    later = store.changes_since(mark)
    assert q.id not in later.passages_added and q.id not in later.passages_removed


# ---- Elasticsearch only: an index made before the feed, the writer lock ---------------


@pytest.fixture
def fake_es():
    pytest.importorskip("elasticsearch", reason="the elasticsearch client is not installed")
    from es_fake import FakeElasticsearch

    return FakeElasticsearch()


def _es_store(server, tmp_path, embedder: Embedder, **kwargs) -> Store:
    from gear_agent.config import GearSettings
    from gear_agent.store.elasticsearch.store import ElasticsearchStore

    settings = GearSettings(backend="elasticsearch", es_index_prefix="old", es_cache_dir=tmp_path / "cache")
    return ElasticsearchStore(settings, embedder, client=server.client(), sleep=lambda _s: None, **kwargs)


def test_an_index_made_before_the_feed_answers_incomplete_then_gets_one(fake_es, tmp_path, embedder) -> None:
    passages, triples = _corpus(0, 4)
    store = _es_store(fake_es, tmp_path, embedder)
    store.passages.add(passages)
    store.triples.add(triples)
    graph = PPRGraph.build(store, embedder)
    # what an older gear-agent left: no changes index, no generation field on the documents
    del fake_es.indices["old-changes"]
    for name in ("old-passages", "old-triples"):
        index = fake_es.indices[name]
        del index.mappings["properties"]["generation"]
        for doc in index.live.values():
            doc.pop("generation")
        index.refresh()
    old = _es_store(fake_es, tmp_path, embedder, create=False).generation()
    graph.stamp = Stamp(graph.stamp.index_id, old)  # the graph as of the old index's last write
    reader = _es_store(fake_es, tmp_path, embedder, create=False)
    assert not reader.changes_since(old).complete  # no feed: rebuild, as before
    upgraded = _es_store(fake_es, tmp_path, embedder)  # opening to write starts the feed
    assert upgraded.generation() == old and upgraded.changes_since(old).complete
    assert not upgraded.changes_since(old - 1).complete  # before the feed began
    late, late_triples = _corpus(4, 2)
    upgraded.passages.add(late)
    upgraded.triples.add(late_triples)
    upgraded.passages.remove([passages[0].id])
    changes = upgraded.changes_since(old)
    assert changes.complete and set(changes.passages_added) == {p.id for p in late}
    assert changes.passages_removed == (passages[0].id,) and len(changes.triples_removed) == 3
    graph.update(upgraded)
    assert _ranking(upgraded, graph) == _ranking(upgraded, PPRGraph.build(upgraded, embedder))


def test_one_writer_at_a_time_and_a_dead_writers_lock_is_taken_over(fake_es, embedder) -> None:
    from gear_agent.store.elasticsearch.changes import ChangeFeed

    now = [1000.0]
    client = fake_es.client()
    fake_es.indices["x-changes"] = None  # made below by the store-free feed
    del fake_es.indices["x-changes"]
    client.indices.create(index="x-changes")
    first = ChangeFeed(client, "x-changes", clock=lambda: now[0], sleep=lambda _s: None)
    first.open(lambda: 0)
    second = ChangeFeed(client, "x-changes", clock=lambda: now[0], sleep=lambda _s: None, lock_wait_s=1.0)
    second.open(lambda: 0)
    with first.writing() as generation:
        assert generation == 1
        first.wrote()
        with pytest.raises(StoreError, match="being written by"):
            with second.writing():
                pass
    assert second.published() == 1
    with second.writing() as generation:
        assert generation == 2  # nothing written: not published
    held = first.writing()
    held.__enter__()  # a writer that dies holding the lock
    now[0] += 1000.0
    with second.writing() as generation:
        assert generation == 2
        second.wrote()
    assert first.published() == 2


def test_a_writer_that_lost_its_lock_stops_instead_of_publishing(fake_es) -> None:
    from gear_agent.store.elasticsearch.changes import ChangeFeed

    now = [0.0]
    client = fake_es.client()
    client.indices.create(index="y-changes")
    slow = ChangeFeed(client, "y-changes", clock=lambda: now[0], sleep=lambda _s: None)
    slow.open(lambda: 0)
    other = ChangeFeed(client, "y-changes", clock=lambda: now[0], sleep=lambda _s: None)
    other.open(lambda: 0)
    with pytest.raises(StoreError, match="lost its lock"):
        with slow.writing():
            slow.wrote()
            now[0] += 1000.0  # silent for longer than the lock lives
            with other.writing():
                other.wrote()
            slow.wrote()  # renewing finds the lock taken
    assert other.published() == 1
