"""What graph expansion asks Elasticsearch per question (the fake records every request):
the triples it walks are kept in the process (``gear_agent.store.elasticsearch.graph_cache``), made by
the first expansion and brought up to date by the change feed, so a question after the first
asks the cluster only for its base retrieval; and the answers are those of the requests they
replace."""

from __future__ import annotations

import pytest
from support.fakes import make_passage, make_triple

from gear_agent.config import GearSettings
from gear_agent.embedding.hashing import HashingEmbedder
from gear_agent.open_index import OpenIndex
from gear_agent.registry import make_retriever
from gear_agent.retrieval.search import QueryEncoder

QUESTIONS = ["Which company is based in City 2?", "Who founded Company 7?", "Person 3 founded what?"]


@pytest.fixture
def fake(tmp_path):
    pytest.importorskip("elasticsearch", reason="the elasticsearch client is not installed")
    from es_fake import FakeElasticsearch

    from gear_agent.store.elasticsearch.store import ElasticsearchStore

    server = FakeElasticsearch()
    settings = GearSettings(backend="elasticsearch", es_index_prefix="b", es_cache_dir=tmp_path)
    embedder = HashingEmbedder(64)

    def open_store():
        return ElasticsearchStore(settings, embedder, client=server.client())

    return server, settings, embedder, open_store


def _fill(store, people=range(30)):
    passages = [make_passage(f"Person {i}", f"Person {i} founded Company {i} in City {i % 4}.") for i in people]
    store.passages.add(passages)
    store.triples.add([make_triple(p, f"Person {i}", "founded", f"Company {i}") for i, p in zip(people, passages)]
                      + [make_triple(p, f"Company {i}", "based in", f"City {i % 4}") for i, p in zip(people, passages)])
    return passages


def _naive(store, settings, embedder):
    return make_retriever("hybrid+naive_ge", OpenIndex(settings, embedder, store, QueryEncoder(embedder)))


def test_a_question_after_the_first_asks_only_for_its_base_retrieval(fake) -> None:
    server, settings, embedder, open_store = fake
    store = open_store()
    _fill(store)
    retriever = _naive(store, settings, embedder)
    assert retriever.retrieve(QUESTIONS[0], 15)  # the first expansion reads the triples once
    start = len(server.requests)
    for question in QUESTIONS:
        assert retriever.retrieve(question, 15)
    asked = [(r.method, r.path) for r in server.requests[start:]]
    assert not [a for a in asked if "/b-triples/" in a[1]]  # no start triples, beam step, vectors
    assert asked.count(("GET", "/b-changes/_doc/generation")) == len(QUESTIONS)  # one commit each
    assert asked == [("GET", "/b-changes/_doc/generation"), ("POST", "/_msearch")] * len(QUESTIONS)  # BM25 + kNN


def test_ppr_asks_its_four_searches_in_one_request(fake) -> None:
    server, settings, embedder, open_store = fake
    store = open_store()
    _fill(store)
    retriever = make_retriever("ppr", OpenIndex(settings, embedder, store, QueryEncoder(embedder)))
    retriever.retrieve(QUESTIONS[0], 5)  # builds the graph
    start = len(server.requests)
    found = retriever.retrieve(QUESTIONS[1], 5)
    asked = [(r.method, r.path) for r in server.requests[start:]]
    assert found and asked.count(("POST", "/_msearch")) == 1
    assert ("POST", "/b-triples/_search") not in asked and ("POST", "/b-passages/_search") not in asked


def _ppr_rankings(server, settings, embedder, store):
    retriever = make_retriever("ppr", OpenIndex(settings, embedder, store, QueryEncoder(embedder)))
    retriever.retrieve(QUESTIONS[0], 5)  # builds the graph
    start = len(server.requests)
    found = [[(p.id, round(p.score, 6), p.chain) for p in retriever.retrieve(question, 5)] for question in QUESTIONS]
    return found, server.requests[start:]  # (scores to 6 decimals: the cluster's cosines are float32)


def test_ppr_on_a_small_index_scans_the_kept_triples_for_its_seeds(fake, monkeypatch) -> None:
    """Triple vectors within TRIPLE_SCAN_BYTES: the seed triples and their lowest cosine are an
    exact scan of the triples kept in the process (made for it), so the question's one search
    request holds no triple search; the rankings are those of the cluster's kNN searches (the
    same passages, chains and order; scores to 6 decimals, the cluster's being float32)."""
    from gear_agent.store.elasticsearch import store as es_store

    server, settings, embedder, open_store = fake
    store = open_store()
    _fill(store)
    found, asked = _ppr_rankings(server, settings, embedder, store)
    assert [(r.method, r.path) for r in asked] == [("GET", "/b-changes/_doc/generation"), ("POST", "/_msearch")] * 3
    assert not [r for r in asked if "b-triples" in str(r.body)] and all(found)
    assert store._expansion_cache is not None  # made by the first question, kept up to date since
    monkeypatch.setattr(es_store, "TRIPLE_SCAN_BYTES", 0)  # another process: the cluster answers
    remote, asked = _ppr_rankings(server, settings, embedder, open_store())
    assert [r for r in asked if "b-triples" in str(r.body)] and remote == found


def test_ppr_alone_reads_its_seed_triples_with_their_search(fake, monkeypatch) -> None:
    """Above TRIPLE_SCAN_BYTES, a process that keeps no expansion triples asks two requests a
    question: the generation and one ``_msearch`` whose seed search brings the seeds'
    documents, where an ``_mget`` of them followed; the rankings are those of the ``_mget``."""
    from gear_agent.store.elasticsearch import store as es_store

    server, settings, embedder, open_store = fake
    monkeypatch.setattr(es_store, "TRIPLE_SCAN_BYTES", 0)
    store = open_store()
    _fill(store)
    found, asked = _ppr_rankings(server, settings, embedder, store)
    assert [(r.method, r.path) for r in asked] == [("GET", "/b-changes/_doc/generation"), ("POST", "/_msearch")] * 3
    assert store._expansion_cache is None and all(found)
    other = open_store()  # another process, whose seed searches bring no documents
    monkeypatch.setattr(other, "_keeps_seed_documents", lambda at: False)
    remote, asked = _ppr_rankings(server, settings, embedder, other)
    assert remote == found and ("POST", "/b-triples/_mget") in [(r.method, r.path) for r in asked]


def test_the_kept_triples_answer_as_the_requests_they_replace(fake, monkeypatch) -> None:
    server, settings, embedder, open_store = fake
    store = open_store()
    _fill(store)
    vector = embedder.embed_one(QUESTIONS[0])
    passages = [h.id for h in store.passages.vector_search(vector, 15)]
    with monkeypatch.context() as patch:  # as a writing store reads: from the cluster
        patch.setattr(store, "_expansion", lambda build=True: None)
        remote = store.triples.of_passages(passages)
        remote_next = store.triples.neighbours_many([t for ts in remote for t in ts], vector, 5)
        remote_vectors = store.triples.vectors(remote[0])
    assert store._expansion_cache is None
    assert store.triples.of_passages(passages) == remote
    assert store.triples.neighbours_many([t for ts in remote for t in ts], vector, 5) == remote_next
    assert (store.triples.vectors(remote[0]) == remote_vectors).all()
    assert store._expansion_cache is not None and len(store._expansion_cache) == store.triples.count()


def test_another_process_writing_is_followed_through_the_change_feed(fake) -> None:
    server, settings, embedder, open_store = fake
    reader, writer = open_store(), open_store()
    _fill(writer, range(20))
    retriever = _naive(reader, settings, embedder)
    retriever.retrieve(QUESTIONS[1], 15)
    cache = reader._expansion_cache
    assert cache is not None and len(cache) == 40
    added = _fill(writer, range(20, 25))
    gone = writer.passages.ids_of_source(added[0].source)[:1] or [added[0].id]
    writer.passages.remove(gone)
    start = len(server.requests)
    found = retriever.retrieve("Who founded Company 22?", 15)
    walked = [r for r in server.requests[start:] if r.path.endswith("/_pit") or "pit" in str(r.body)]
    assert not walked  # brought up to date by the feed, not read again
    assert reader._expansion_cache is cache and len(cache) == 48
    assert reader.triples.of_passages([gone[0]]) == [[]]
    fresh = _naive(open_store(), settings, embedder)
    assert [p.id for p in found] == [p.id for p in fresh.retrieve("Who founded Company 22?", 15)]


def test_searches_asked_together_answer_as_each_alone(fake) -> None:
    from gear_agent.store.multi_search import Search, answer_one

    server, settings, embedder, open_store = fake
    store = open_store()
    _fill(store)
    vector = embedder.embed_one(QUESTIONS[0])
    searches = [Search.bm25("passage", "Company City", 5), Search.dense("triple", vector, 7),
                Search.lowest("passage", vector), Search.dense("passage", vector, 3, {"title": "Person 4"}),
                Search.bm25("triple", "founded", 4, ["title=Person 2"]), Search.dense("passage", vector, 0)]
    with store.snapshot():
        together = store.search_many(searches)

    def rounded(found):  # the triple search is a scan of the kept triples: float32 cosines
        return [[(h.id, round(h.score, 6)) for h in hits] for hits in found]

    assert rounded(together) == rounded([answer_one(store, s) for s in searches])
    assert together[2] and together[2][0].score == store.passages.lowest_similarity(vector)


def test_a_later_process_loads_the_saved_triples_and_takes_in_the_changes_since(fake) -> None:
    server, settings, embedder, open_store = fake
    first = open_store()
    _fill(first, range(20))
    first.triples.of_passages(["any"])  # the first expansion reads every triple and saves them
    assert (first.derived_dir / "expansion-triples.json").exists()
    _fill(first, range(20, 23))  # a commit the saved copy does not have
    later = open_store()
    passages = later.passages.ids()
    start = len(server.requests)
    vector = embedder.embed_one("Company 21")
    ids = later.triples.of_passages(passages)
    assert not [r for r in server.requests[start:] if r.path.endswith("triples/_pit")]  # no walk
    assert len(later._expansion_cache) == 46
    rebuilt = open_store()
    (rebuilt.derived_dir / "expansion-triples.json").unlink()
    assert rebuilt.triples.of_passages(passages) == ids
    tid = ids[-1][0]
    assert later.triples.neighbours_many([tid], vector, 5) == rebuilt.triples.neighbours_many([tid], vector, 5)
    assert (later.triples.vectors([tid]) == rebuilt.triples.vectors([tid])).all()


def test_a_large_passage_search_is_an_exact_scan_of_kept_vectors_that_follow_the_feed(fake) -> None:
    from gear_agent.store.multi_search import Search

    server, settings, embedder, open_store = fake
    reader, writer = open_store(), open_store()
    _fill(writer, range(20))
    vector = embedder.embed_one("Company City")
    searches = [Search.dense("passage", vector, 200), Search.lowest("passage", vector)]
    with reader.snapshot():
        kept, lowest = reader.search_many(searches)
    remote = reader.passages.vector_search(vector, 200)
    assert sorted((round(h.score, 5), h.id) for h in kept) == sorted((round(h.score, 5), h.id) for h in remote)
    assert [round(h.score, 5) for h in kept] == sorted((round(h.score, 5) for h in kept), reverse=True)
    assert abs(lowest[0].score - min(h.score for h in remote)) < 1e-5
    added = _fill(writer, range(20, 22))
    writer.passages.remove([added[0].id])
    start = len(server.requests)
    with reader.snapshot():
        kept, _ = reader.search_many(searches)
    assert {h.id for h in kept} == {h.id for h in reader.passages.vector_search(vector, 200)}
    assert not [r for r in server.requests[start:] if r.path.endswith("passages/_pit")]  # the feed, no walk


def test_after_another_process_deletes_ppr_reads_the_feed_once_and_walks_nothing(fake) -> None:
    """The PPR graph, the passage vectors and the kept triples each bring themselves up to date
    from the same changes, read once; the title edges read no passage (the removed ones are
    dropped); and the ranking is that of a process that builds everything from scratch."""
    server, settings, embedder, open_store = fake
    reader, writer = open_store(), open_store()
    passages = _fill(writer, range(24))
    retriever = make_retriever("ppr", OpenIndex(settings, embedder, reader, QueryEncoder(embedder)))
    retriever.retrieve(QUESTIONS[1], 5)
    before = reader.generation()
    writer.passages.remove([p.id for p in passages[::4]])
    start = len(server.requests)
    found = retriever.retrieve(QUESTIONS[1], 5)
    asked = server.requests[start:]
    probe = open_store()
    start = len(server.requests)
    assert probe.changes_since(before).passages_removed
    one_read = [(r.method, r.path) for r in server.requests[start:] if "/b-changes/_search" in r.path]
    assert [(r.method, r.path) for r in asked if "/b-changes/_search" in r.path] == one_read
    assert not [r for r in asked if r.path.endswith("/_pit") and "b-passages" in r.path]  # no walk
    fresh = make_retriever("ppr", OpenIndex(settings, embedder, open_store(), QueryEncoder(embedder)))
    assert [(p.id, round(p.score, 9)) for p in found] == [
        (p.id, round(p.score, 9)) for p in fresh.retrieve(QUESTIONS[1], 5)]
