"""SiReRAG's full build with a scripted chat model: propositions, aggregates, both trees'
summaries, incremental reruns, the dry-run estimate; and seeded, deterministic clustering."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from support.fakes import CountingEmbedder, ScriptedChatModel

from gear_agent.config import GearSettings
from gear_agent.ids import passage_id
from gear_agent.llm.client import LLMClient
from gear_agent.parsing.errors import ParseError
from gear_agent.sirerag import SiReRAGSettings
from gear_agent.sirerag.build import build_full
from gear_agent.sirerag.clustering import soft_clusters
from gear_agent.sirerag.cost import estimate_build_cost
from gear_agent.sirerag.extract import parse_propositions
from gear_agent.store.embedded.store import EmbeddedStore
from gear_agent.types import Passage

SETTINGS = SiReRAGSettings(sirerag_reduction_dim=2, sirerag_max_clusters=4, sirerag_max_cluster_size=4,
                           sirerag_stop_below=3, sirerag_max_levels=3, sirerag_seed=7,
                           sirerag_concurrency=2)
TOPICS = [
    ("Kestrel Observatory", "Oskar Brenner founded the Kestrel Observatory. Marela Voss worked at the Kestrel Observatory."),
    ("Oskar Brenner", "Oskar Brenner married Ilse Brenner. Oskar Brenner was born in Kiel."),
    ("Ilse Brenner", "Ilse Brenner painted Harbour Dusk. Ilse Brenner lived in Kiel."),
    ("Marela Voss", "Marela Voss discovered Comet Voss. Marela Voss studied in Leiden."),
    ("Leiden", "Leiden hosts Leiden University. Marela Voss studied at Leiden University."),
    ("Rome", "Rome is the capital of Italy. Rome lies on the Tiber."),
    ("Tiber", "The Tiber flows through Rome. The Tiber rises in Tuscany."),
    ("Tuscany", "Tuscany borders Umbria. Florence is the capital of Tuscany."),
]


def passages(items=TOPICS) -> list[Passage]:
    return [Passage(passage_id(t, x), t, x, "test") for t, x in items]


def scripted(prompt: str) -> str:
    if prompt.startswith("You break a passage into propositions"):
        body = prompt.rsplit("Passage: ", 1)[1].rsplit("\nReply:", 1)[0]
        props = []
        for sentence in filter(None, (s.strip() for s in body.split("."))):
            names = re.findall(r"[A-Z][a-z]+(?: [A-Z][a-z]+)*", sentence)
            props.append({"text": sentence + ".", "entities": names})
        return json.dumps({"propositions": props})
    if prompt.startswith("You write summaries"):
        heads = re.findall(r"^\[\d+\] (\S+ \S+)", prompt, re.M)
        return "Summary: " + "; ".join(heads)
    raise AssertionError(f"unexpected prompt: {prompt[:60]}")


@pytest.fixture
def store(tmp_path: Path) -> EmbeddedStore:
    store = EmbeddedStore.open(tmp_path / "ix", CountingEmbedder())
    store.passages.add(passages())
    return store


def client() -> tuple[LLMClient, ScriptedChatModel]:
    model = ScriptedChatModel(respond=scripted)
    return LLMClient(model), model


def test_full_build_makes_both_trees_with_provenance(store: EmbeddedStore) -> None:
    llm, model = client()
    report = build_full(store, llm, SETTINGS)
    assert report.extracted_passages == 8 and report.extraction_failures == 0
    assert report.propositions == 16
    trees = {(tree, kind) for tree, kind, _, _ in report.level_rows()}
    assert trees == {("relatedness", "aggregate"), ("relatedness", "summary"), ("similarity", "summary")}
    assert report.clusters_summarised > 0 and report.clusters_reused == 0
    assert report.input_tokens > 0 and report.output_tokens > 0
    assert len(model.calls) == 8 + report.clusters_summarised
    nodes = store.nodes
    every = {n.id: n for n in nodes.iterate()}
    assert sum(n for *_, n in report.level_rows()) == len(every)
    passage_ids = {p.id for p in passages()}
    for node in every.values():  # provenance from any node to its passages
        assert node.passage_ids and set(node.passage_ids) <= passage_ids
        assert nodes.passages_of([node.id])[node.id] == list(node.passage_ids)
        if node.kind == "summary":
            under = [p for c in node.children for p in (every[c].passage_ids if c in every else (c,))]
            assert list(node.passage_ids) == list(dict.fromkeys(under))
            assert node.level == 1 + max(every[c].level if c in every else 0 for c in node.children)
    similarity_level1 = [n for n in every.values() if n.tree == "similarity" and n.level == 1]
    covered = {c for n in similarity_level1 for c in n.children}
    assert covered == passage_ids  # soft clustering: every passage is in some cluster


def test_rerun_calls_no_llm_and_adding_a_passage_costs_its_own_extraction(store: EmbeddedStore) -> None:
    llm, _ = client()
    first = build_full(store, llm, SETTINGS)
    llm2, model2 = client()
    again = build_full(store, llm2, SETTINGS)
    assert model2.calls == [] and again.nodes_added == 0 and again.nodes_deleted == 0
    assert again.clusters_reused == first.clusters_summarised and again.levels == first.levels
    store.passages.add(passages([("Umbria", "Umbria borders Tuscany. Perugia is the capital of Umbria.")]))
    llm3, model3 = client()
    grown = build_full(store, llm3, SETTINGS)
    extraction_calls = [c for c in model3.calls if c.startswith("You break")]
    assert len(extraction_calls) == 1 and "Perugia" in extraction_calls[0]
    assert len(model3.calls) == 1 + grown.clusters_summarised
    assert grown.extracted_passages == 1 and grown.propositions == 18


def test_mode_switch_clears_the_other_pool(store: EmbeddedStore) -> None:
    from gear_agent.sirerag import build_ablation

    llm, _ = client()
    build_full(store, llm, SETTINGS)
    report = build_ablation(store)
    assert report.replaced and report.notes
    assert report.levels == {}  # the store holds no triples: the ablation has no aggregates


def test_dry_run_estimate_calls_nothing_and_counts_only_what_is_missing(store: EmbeddedStore) -> None:
    gear = GearSettings(llm_model="gpt-4o-mini")
    before = estimate_build_cost(store, gear, SETTINGS)
    assert before.extraction_calls == 8 and before.extraction_input > 8 * 100
    assert before.summary_calls > 0 and before.usd is not None and "total" in before.describe()
    llm, _ = client()
    build_full(store, llm, SETTINGS)
    after = estimate_build_cost(store, gear, SETTINGS)
    assert after.extraction_calls == 0 and after.extraction_input == 0


def test_proposition_replies_are_read_leniently_and_refused_clearly() -> None:
    found, dropped = parse_propositions(
        '```json\n{"propositions": [{"text": "A met B.", "entities": ["A", "B"]}, "C left.", {"x": 1}]}\n```', "p")
    assert [(p.text, p.entities) for p in found] == [("A met B.", ("a", "b")), ("C left.", ())]
    assert dropped == 1
    cut, _ = parse_propositions('{"propositions": [{"text": "A met B.", "entities": ["A"]}, {"text": "B le', "p")
    assert [p.text for p in cut] == ["A met B."]
    with pytest.raises(ParseError):
        parse_propositions("no json here", "p")


def test_unreadable_replies_are_recorded_and_left_for_the_next_run(store: EmbeddedStore) -> None:
    def flaky(prompt: str) -> str:
        return "I cannot do that" if "Tiber" in prompt.split("Passage: ")[-1][:40] else scripted(prompt)

    llm = LLMClient(ScriptedChatModel(respond=flaky))
    report = build_full(store, llm, SETTINGS)
    assert report.extraction_failures == 1 and report.notes
    llm2, model2 = client()
    build_full(store, llm2, SETTINGS)
    assert sum(c.startswith("You break") for c in model2.calls) == 1


def two_groups(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.vstack([rng.normal(0, 0.05, (6, 16)) + 1, rng.normal(0, 0.05, (6, 16)) - 1]).astype(np.float32)


def test_clustering_is_deterministic_for_a_seed_and_covers_every_row() -> None:
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(40, 16)).astype(np.float32)
    settings = SiReRAGSettings(sirerag_reduction_dim=4, sirerag_max_clusters=6,
                               sirerag_max_cluster_size=8, sirerag_seed=11)
    first = soft_clusters(vectors, settings)
    assert soft_clusters(vectors.copy(), settings) == first
    assert {i for c in first for i in c} == set(range(40))
    assert all(1 <= len(c) <= 8 for c in first)
    assert soft_clusters(two_groups(), SiReRAGSettings(sirerag_reduction_dim=2, sirerag_seed=5)) == [
        list(range(6)), list(range(6, 12))]


def test_tiny_inputs_make_one_cluster() -> None:
    assert soft_clusters(np.ones((2, 4), dtype=np.float32)) == [[0, 1]]
    assert soft_clusters(np.ones((0, 4), dtype=np.float32)) == []
