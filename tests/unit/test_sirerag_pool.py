"""SiReRAG's LLM-free pool: aggregates by shared entity, nodes in the store with their
provenance, and the retriever that counts a node as its passages."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from support.fakes import CountingEmbedder

from gear_agent.ids import node_id, passage_id, triple_id
from gear_agent.retrieval.search import QueryEncoder
from gear_agent.sirerag import SiReRAGRetriever, SiReRAGSettings, build_ablation
from gear_agent.sirerag.aggregates import group_by_entity
from gear_agent.sirerag.propositions import Proposition, from_triples
from gear_agent.store.base import StoreError
from gear_agent.store.embedded import EmbeddedStore
from gear_agent.store.nodes import NodesNotSupportedError
from gear_agent.types import Node, Passage, Triple


def passage(title: str, text: str) -> Passage:
    return Passage(passage_id(title, text), title, text, "test")


def triple(p: Passage, s: str, r: str, o: str) -> Triple:
    return Triple(triple_id(p.id, s, r, o), s, r, o, p.id)


KESTREL = passage("Kestrel Observatory", "Oskar Brenner founded the Kestrel Observatory in 1923.")
BRENNER = passage("Oskar Brenner", "Oskar Brenner was married to Ilse Brenner, a painter.")
ILSE = passage("Ilse Brenner", "Ilse Brenner painted the Harbour at Dusk.")
ROME = passage("Rome", "Rome is the capital of Italy.")
TRIPLES = [
    triple(KESTREL, "Oskar Brenner", "founded", "Kestrel Observatory"),
    triple(KESTREL, "Kestrel Observatory", "founded in", "1923"),
    triple(BRENNER, "Oskar  Brenner", "spouse", "Ilse Brenner"),
    triple(ILSE, "ilse brenner", "painted", "Harbour at Dusk"),
    triple(ROME, "Rome", "capital of", "Italy"),
]


def test_aggregates_group_propositions_by_shared_entity_in_reading_order() -> None:
    props = from_triples(TRIPLES)
    nodes = {n.entity: n for n in group_by_entity(props)}
    # entities named by at least two propositions; rome, italy, 1923 ... only once
    assert set(nodes) == {"oskar brenner", "kestrel observatory", "ilse brenner"}
    oskar = nodes["oskar brenner"]
    assert oskar.text == "Oskar Brenner founded Kestrel Observatory\nOskar  Brenner spouse Ilse Brenner"
    assert oskar.passage_ids == (KESTREL.id, BRENNER.id)
    assert nodes["kestrel observatory"].passage_ids == (KESTREL.id,)
    assert nodes["ilse brenner"].text.splitlines() == [
        "Oskar  Brenner spouse Ilse Brenner", "ilse brenner painted Harbour at Dusk"]
    assert all(n.kind == "aggregate" and n.level == 0 and n.tree == "relatedness" for n in nodes.values())
    assert oskar.id == node_id("aggregate", "relatedness", 0, oskar.text)


def test_aggregate_thresholds_and_identical_groups_kept_once() -> None:
    props = [Proposition("A met B", ("a", "b"), "p1"), Proposition("A saw B", ("a", "b"), "p1"),
             Proposition("A left", ("a",), "p2")]
    nodes = group_by_entity(props)
    assert [(n.entity, n.passage_ids) for n in nodes] == [("a", ("p1", "p2")), ("b", ("p1",))]
    assert [n.entity for n in group_by_entity(props, min_passages=2)] == ["a"]
    assert group_by_entity(props, min_propositions=4) == []
    same = [Proposition("A met B", ("a", "b"), "p1"), Proposition("B met A", ("b", "a"), "p2")]
    assert [n.entity for n in group_by_entity(same)] == ["a"]  # b's text is the same node


@pytest.fixture
def store(tmp_path: Path) -> EmbeddedStore:
    store = EmbeddedStore.open(tmp_path / "ix", CountingEmbedder())
    store.add_passages([KESTREL, BRENNER, ILSE, ROME])
    store.add_triples(TRIPLES)
    return store


def test_ablation_build_stores_nodes_with_provenance_and_is_incremental(store: EmbeddedStore) -> None:
    report = build_ablation(store)
    assert report.propositions == 5 and report.nodes_added == 3 and report.nodes_deleted == 0
    assert report.level_rows() == [("relatedness", "aggregate", 0, 3)]
    nodes = store.node_store()
    stored = list(nodes.iter_nodes())
    provenance = nodes.passages_of([n.id for n in stored])
    for node in stored:  # provenance from any node to its passages
        assert provenance[node.id] == list(node.passage_ids)
        assert [p.id for p in store.get_passages(provenance[node.id])] == list(node.passage_ids)
        assert nodes.get_nodes([node.id]) == [node]
    again = build_ablation(store)
    assert (again.nodes_added, again.nodes_kept, again.nodes_deleted) == (0, 3, 0)
    extra = passage("Harbour at Dusk", "The Harbour at Dusk hangs in Kiel.")
    store.add_passages([extra])
    store.add_triples([triple(extra, "Harbour at Dusk", "hangs in", "Kiel")])
    grown = build_ablation(store)
    # only the new aggregate is embedded (harbour at dusk now has two propositions)
    assert (grown.nodes_added, grown.nodes_kept, grown.nodes_deleted) == (1, 3, 0)
    harbour = next(n for n in nodes.iter_nodes() if n.entity == "harbour at dusk")
    assert nodes.passages_of([harbour.id])[harbour.id] == [ILSE.id, extra.id]


def test_deleting_a_passage_drops_it_from_every_provenance(store: EmbeddedStore) -> None:
    build_ablation(store)
    nodes = store.node_store()
    oskar = next(n for n in nodes.iter_nodes() if n.entity == "oskar brenner")
    store.delete_passages([BRENNER.id])
    assert nodes.passages_of([oskar.id])[oskar.id] == [KESTREL.id]
    store.delete_passages([KESTREL.id])  # nodes left with no passage go with it
    assert [(n.entity, n.passage_ids) for n in nodes.iter_nodes()] == [("ilse brenner", (ILSE.id,))]
    assert nodes.passages_of([oskar.id]) == {}
    assert nodes.count() == 1
    assert [h.id for h in nodes.search(store.embedder.embed_one("Oskar Brenner"), 5)] == [
        n.id for n in nodes.iter_nodes()]


def test_a_node_naming_an_unknown_passage_is_refused(store: EmbeddedStore) -> None:
    bad = Node(node_id("summary", "similarity", 1, "x"), "summary", "similarity", 1, "x", ("p-nope",))
    with pytest.raises(StoreError, match="p-nope.*not stored"):
        store.node_store().add_nodes([bad])
    assert store.node_store().count() == 0


def test_retriever_counts_a_node_as_its_passages_once_each(store: EmbeddedStore) -> None:
    encode = QueryEncoder(store.embedder)
    plain = SiReRAGRetriever(store, encode).retrieve("Oskar Brenner spouse", 4)
    assert len(plain) == 4 and len({p.id for p in plain}) == 4  # no nodes: the dense list
    build_ablation(store)
    retriever = SiReRAGRetriever(store, encode)
    pool = retriever.pool("Oskar Brenner spouse", 4)
    assert any(item.is_node for item in pool)
    assert [i.score for i in pool] == sorted((i.score for i in pool), reverse=True)
    ranked = retriever.retrieve("Oskar Brenner spouse", 3)
    expected: list[str] = []
    for item in pool:
        expected.extend(p for p in item.passages if p not in expected)
    assert [p.id for p in ranked] == expected[:3]


def test_node_search_matches_an_exact_cosine(store: EmbeddedStore) -> None:
    build_ablation(store)
    nodes = store.node_store()
    stored = list(nodes.iter_nodes())
    q = store.embedder.embed_one("Ilse Brenner painter")
    scores = nodes.vectors([n.id for n in stored]) @ q
    best = stored[int(np.argmax(scores))].id
    assert nodes.search(q, 1)[0].id == best


def test_backends_without_nodes_say_so() -> None:
    from support.fakes import FakeStore

    from gear_agent.store.nodes import node_store_of

    with pytest.raises(NodesNotSupportedError, match="does not store SiReRAG nodes.*GEAR_BACKEND=embedded"):
        node_store_of(FakeStore())


def test_settings_are_typed_defaults() -> None:
    assert SiReRAGSettings().min_propositions == 2


def test_the_pool_records_the_commit_it_reflects(tmp_path) -> None:
    from support.tiny_corpus import build_store

    from gear_agent.embedding.hashing import HashingEmbedder
    from gear_agent.ids import passage_id
    from gear_agent.sirerag.build import GENERATION_KEY, build_ablation
    from gear_agent.types import Passage

    store = build_store(tmp_path / "index", HashingEmbedder(64))
    at = store.generation()
    build_ablation(store)
    nodes = store.node_store()
    assert nodes.get_meta(GENERATION_KEY) == str(at)
    late = Passage(passage_id("Late", "Added after the build."), "Late", "Added after the build.")
    store.add_passages([late])
    assert store.changes_since(int(nodes.get_meta(GENERATION_KEY))).passages_added == (late.id,)
