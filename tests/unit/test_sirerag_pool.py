"""SiReRAG's LLM-free pool: aggregates by shared entity, nodes in the store with their
provenance, and the retriever that counts a node as its passages."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.fakes import CountingEmbedder
from support.sirerag_corpus import BRENNER, ILSE, KESTREL, ROME, TRIPLES

from gear_agent.ids import node_id, passage_id
from gear_agent.sirerag import SiReRAGSettings
from gear_agent.sirerag.aggregates import group_by_entity
from gear_agent.sirerag.propositions import Proposition, from_triples
from gear_agent.store.embedded.store import EmbeddedStore
from gear_agent.store.nodes import NodesNotSupportedError
from gear_agent.types import Passage


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
    store.passages.add([KESTREL, BRENNER, ILSE, ROME])
    store.triples.add(TRIPLES)
    return store


def test_backends_without_nodes_say_so() -> None:
    from support.fakes import FakeStore

    from gear_agent.store.backends import node_store_of

    with pytest.raises(NodesNotSupportedError, match="does not store SiReRAG nodes.*GEAR_BACKEND=embedded"):
        node_store_of(FakeStore())


def test_settings_are_a_section_of_gear_settings(monkeypatch) -> None:
    from gear_agent.config import GearSettings

    assert SiReRAGSettings().sirerag_min_propositions == 2
    assert issubclass(GearSettings, SiReRAGSettings)
    monkeypatch.setenv("GEAR_SIRERAG_SEED", "7")
    assert GearSettings().sirerag_seed == 7
    with pytest.raises(ValueError, match="sirerag_min_passages"):
        SiReRAGSettings(sirerag_min_passages=0)


def test_the_old_setting_names_still_build_with_a_warning() -> None:
    with pytest.warns(DeprecationWarning, match=r"SiReRAGSettings\(min_propositions, seed=...\) is now"):
        old = SiReRAGSettings(min_propositions=3, seed=5)
    assert old == SiReRAGSettings(sirerag_min_propositions=3, sirerag_seed=5)
    from gear_agent.sirerag import clustering

    with pytest.warns(DeprecationWarning, match="ClusterSettings"):
        assert clustering.ClusterSettings is SiReRAGSettings


def test_the_pool_records_the_commit_it_reflects(tmp_path) -> None:
    from support.tiny_corpus import build_store

    from gear_agent.embedding.hashing import HashingEmbedder
    from gear_agent.sirerag.build import GENERATION_KEY, build_ablation

    store = build_store(tmp_path / "index", HashingEmbedder(64))
    at = store.generation()
    build_ablation(store)
    nodes = store.nodes
    assert nodes.get_meta(GENERATION_KEY) == str(at)
    late = Passage(passage_id("Late", "Added after the build."), "Late", "Added after the build.")
    store.passages.add([late])
    assert store.changes_since(int(nodes.get_meta(GENERATION_KEY))).passages_added == (late.id,)
