"""The SiReRAG node collection (``store.nodes``), once per backend: embedded,
the Elasticsearch fake and a live Elasticsearch (marker ``es``)."""

from __future__ import annotations

import numpy as np
import pytest
from support.fakes import make_passage, make_triple
from support.sirerag_corpus import BRENNER, ILSE, KESTREL, ROME, TRIPLES

from gear_agent.ids import node_id
from gear_agent.retrieval.search import QueryEncoder
from gear_agent.sirerag import SiReRAGRetriever, build_ablation
from gear_agent.store.base import Store, StoreError
from gear_agent.types import Node


@pytest.fixture
def filled(store: Store) -> Store:
    store.passages.add([KESTREL, BRENNER, ILSE, ROME])
    store.triples.add(TRIPLES)
    return store


def test_an_index_without_nodes_reads_as_empty(filled: Store) -> None:
    nodes = filled.nodes
    assert nodes.count() == 0 and list(nodes.iterate()) == [] and nodes.levels() == {}
    assert nodes.get_meta("mode") is None and nodes.meta_items("") == {}
    assert nodes.search(filled.embedder.embed_one("Oskar"), 3) == []
    assert nodes.remove(["n-1"]) == [] and nodes.clear() == 0


def test_ablation_build_stores_nodes_with_provenance_and_is_incremental(filled: Store) -> None:
    report = build_ablation(filled)
    assert report.propositions == 5 and report.nodes_added == 3 and report.nodes_deleted == 0
    assert report.level_rows() == [("relatedness", "aggregate", 0, 3)]
    nodes = filled.nodes
    stored = list(nodes.iterate())
    assert nodes.count() == 3 and nodes.get_meta("mode") == "ablation"
    provenance = nodes.passages_of([n.id for n in stored])
    for node in stored:
        assert provenance[node.id] == list(node.passage_ids)
        assert [p.id for p in filled.passages.get(provenance[node.id])] == list(node.passage_ids)
        assert nodes.get([node.id]) == [node]
    again = build_ablation(filled)
    assert (again.nodes_added, again.nodes_kept, again.nodes_deleted) == (0, 3, 0)
    extra = make_passage("Harbour at Dusk", "The Harbour at Dusk hangs in Kiel.")
    filled.passages.add([extra])
    filled.triples.add([make_triple(extra, "Harbour at Dusk", "hangs in", "Kiel")])
    grown = build_ablation(filled)
    assert (grown.nodes_added, grown.nodes_kept, grown.nodes_deleted) == (1, 3, 0)
    harbour = next(n for n in nodes.iterate() if n.entity == "harbour at dusk")
    # in reading order, which follows iter_triples: insertion order embedded, id order on ES
    assert sorted(nodes.passages_of([harbour.id])[harbour.id]) == sorted([ILSE.id, extra.id])
    assert [n.id for n in nodes.iterate()][-1] == harbour.id  # in the order stored


def test_deleting_a_passage_drops_it_from_every_provenance(filled: Store) -> None:
    build_ablation(filled)
    nodes = filled.nodes
    oskar = next(n for n in nodes.iterate() if n.entity == "oskar brenner")
    filled.passages.remove([BRENNER.id])
    assert nodes.passages_of([oskar.id])[oskar.id] == [KESTREL.id]
    filled.passages.remove([KESTREL.id])  # nodes left with no passage go with it
    assert [(n.entity, n.passage_ids) for n in nodes.iterate()] == [("ilse brenner", (ILSE.id,))]
    assert nodes.passages_of([oskar.id]) == {}
    assert nodes.count() == 1
    assert [h.id for h in nodes.search(filled.embedder.embed_one("Oskar Brenner"), 5)] == [
        n.id for n in nodes.iterate()]


def test_a_node_naming_an_unknown_passage_is_refused(filled: Store) -> None:
    bad = Node(node_id("summary", "similarity", 1, "x"), "summary", "similarity", 1, "x", ("p-nope",))
    with pytest.raises(StoreError, match="p-nope.*not stored"):
        filled.nodes.add([bad])
    assert filled.nodes.count() == 0


def test_meta_values_clear_and_delete(filled: Store) -> None:
    nodes = filled.nodes
    nodes.set_meta({"mode": "full", "propositions:p1": "[1]", "propositions:p2": "[2]"})
    nodes.set_meta({"mode": "ablation"})
    assert nodes.get_meta("mode") == "ablation"
    assert nodes.meta_items("propositions:") == {"propositions:p1": "[1]", "propositions:p2": "[2]"}
    build_ablation(filled)
    first = next(nodes.iterate())
    assert nodes.remove([first.id, "n-unknown", first.id]) == [first.id]
    assert nodes.clear() == 2 and nodes.count() == 0


def test_retriever_counts_a_node_as_its_passages_once_each(filled: Store) -> None:
    encode = QueryEncoder(filled.embedder)
    build_ablation(filled)
    retriever = SiReRAGRetriever(filled, encode)
    pool = retriever.pool("Oskar Brenner spouse", 4)
    assert any(item.is_node for item in pool)
    assert [i.score for i in pool] == sorted((i.score for i in pool), reverse=True)
    ranked = retriever.retrieve("Oskar Brenner spouse", 3)
    expected: list[str] = []
    for item in pool:
        expected.extend(p for p in item.passages if p not in expected)
    assert [p.id for p in ranked] == expected[:3]


def test_node_search_matches_an_exact_cosine(filled: Store) -> None:
    build_ablation(filled)
    nodes = filled.nodes
    stored = list(nodes.iterate())
    q = filled.embedder.embed_one("Ilse Brenner painter")
    scores = nodes.vectors([n.id for n in stored]) @ q
    assert nodes.search(q, 1)[0].id == stored[int(np.argmax(scores))].id
    assert nodes.search(q, 1)[0].score == pytest.approx(float(scores.max()), abs=1e-4)
    passages = nodes.passage_vectors([KESTREL.id])
    assert passages.shape == (1, filled.dimension)
    with pytest.raises(KeyError):
        nodes.vectors(["n-unknown"])


def test_the_ppr_graph_is_cached_outside_the_cluster_and_reused(filled: Store) -> None:
    from gear_agent.expansion.ppr import PPRRetriever
    from gear_agent.store.derived_files import PPR_GRAPH_FILE

    encode = QueryEncoder(filled.embedder)
    first = PPRRetriever(filled, encode).retrieve("Who was Oskar Brenner married to?", 3)
    cache = filled.derived_dir / PPR_GRAPH_FILE
    assert cache.is_file()  # a local file, beside the embedded index or under GEAR_ES_CACHE_DIR
    again = PPRRetriever(filled, encode)
    assert [p.id for p in again.retrieve("Who was Oskar Brenner married to?", 3)] == [p.id for p in first]
    assert BRENNER.id in [p.id for p in first]
