"""SiReRAG's pool follows the store's change feed (one freshness rule): added passages are
placed in the trees and found through the ``sirerag`` retriever, deleted ones are gone."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support.fakes import CountingEmbedder, ScriptedChatModel, make_passage, make_triple
from support.sirerag_corpus import BRENNER, ILSE, KESTREL, ROME, TRIPLES

from gear_agent.llm.client import LLMClient
from gear_agent.sirerag import SiReRAGRetriever, SiReRAGSettings, build_ablation
from gear_agent.sirerag.build import build_full
from gear_agent.sirerag.freshness import SiReRAGPool, update_pool
from gear_agent.sirerag.pool_meta import PLACED_KEY, STAMP_KEY
from gear_agent.store.changes import Stamp
from gear_agent.store.embedded.store import EmbeddedStore

SETTINGS = SiReRAGSettings(sirerag_reduction_dim=2, sirerag_max_clusters=3, sirerag_max_cluster_size=4,
                           sirerag_stop_below=3, sirerag_max_levels=2, sirerag_seed=7,
                           sirerag_concurrency=2)
LATE = make_passage("Harbour at Dusk", "Harbour at Dusk was painted by Ilse Brenner in Kiel.")
LATE_TRIPLE = make_triple(LATE, "Harbour at Dusk", "painted by", "Ilse Brenner")


def scripted(prompt: str) -> str:
    if prompt.startswith("You break a passage into propositions"):
        body = prompt.rsplit("Passage: ", 1)[1].rsplit("\nReply:", 1)[0]
        props = [{"text": s + ".", "entities": re.findall(r"[A-Z][a-z]+(?: [A-Z][a-z]+)*", s)}
                 for s in filter(None, (s.strip() for s in body.split(".")))]
        return json.dumps({"propositions": props})
    return "Summary: " + "; ".join(re.findall(r"^\[\d+\] (\S+ \S+)", prompt, re.M))


@pytest.fixture
def store(tmp_path: Path) -> EmbeddedStore:
    store = EmbeddedStore.open(tmp_path / "ix", CountingEmbedder())
    store.passages.add([KESTREL, BRENNER, ILSE, ROME])
    store.triples.add(TRIPLES)
    return store


def embedder(store: EmbeddedStore):  # noqa: ANN201 - the query encoder
    return lambda text: store.embedder.embed([text])[0]


def node_passages(retriever: SiReRAGRetriever, query: str) -> set[str]:
    """Passages the pool reaches through its nodes (not the passage half) for ``query``."""
    return {p for item in retriever.pool(query, 10) if item.is_node for p in item.passages}


def test_an_added_passage_is_placed_under_its_entities_aggregates_and_found(store) -> None:
    build_ablation(store)
    retriever = SiReRAGRetriever(store, embedder(store))
    store.passages.add([LATE])
    store.triples.add([LATE_TRIPLE])
    found = [p.id for p in retriever.retrieve("Who painted the Harbour at Dusk?", 5)]
    assert LATE.id in found
    assert LATE.id in node_passages(retriever, "Ilse Brenner painted Harbour at Dusk")  # via an aggregate
    assert retriever.freshness.stamp == store.stamp()
    # the write path recomputes the aggregates exactly (no placements left) and saves the stamp
    update = update_pool(store)
    assert update is not None and not update.rebuilt
    nodes = store.nodes
    assert json.loads(nodes.get_meta(PLACED_KEY)) == {}
    ilse = next(n for n in nodes.iterate() if n.entity == "ilse brenner")
    assert LATE.id in ilse.passage_ids and "Harbour at Dusk painted by Ilse Brenner" in ilse.text
    assert Stamp.from_dict(json.loads(nodes.get_meta(STAMP_KEY))).index_id == store.index_id()


def test_a_deleted_passage_is_gone_from_the_pool(store) -> None:
    build_ablation(store)
    store.passages.add([LATE])
    store.triples.add([LATE_TRIPLE])
    retriever = SiReRAGRetriever(store, embedder(store))
    assert LATE.id in [p.id for p in retriever.retrieve("Harbour at Dusk Ilse Brenner", 5)]
    store.passages.remove([LATE.id, ILSE.id])
    for query in ("Harbour at Dusk Ilse Brenner", "Ilse Brenner painted the Harbour at Dusk."):
        found = [p.id for p in retriever.retrieve(query, 4)]
        assert LATE.id not in found and ILSE.id not in found
    assert all(LATE.id not in ps for ps in retriever.freshness.placed.values())


def test_a_full_pool_places_new_passages_in_the_nearest_summary_and_marks_it(store) -> None:
    build_full(store, LLMClient(ScriptedChatModel(respond=scripted)), SETTINGS)
    nodes = store.nodes
    summaries = {n.id for n in nodes.iterate() if n.tree == "similarity" and n.level == 1}
    assert summaries
    store.passages.add([LATE])
    update = update_pool(store, SETTINGS)  # the write path: no LLM, placements saved
    assert update is not None and update.placed == 1 and update.refresh >= 1
    saved = json.loads(nodes.get_meta(PLACED_KEY))
    assert any(LATE.id in ps and node in summaries for node, ps in saved.items())
    retriever = SiReRAGRetriever(store, embedder(store))  # another process: reads the placements
    assert LATE.id in node_passages(retriever, LATE.content)
    assert LATE.id in [p.id for p in retriever.retrieve(LATE.content, 3)]
    store.passages.remove([LATE.id])
    assert LATE.id not in node_passages(retriever, LATE.content)
    assert LATE.id not in [p.id for p in retriever.retrieve(LATE.content, 5)]
    update_pool(store, SETTINGS)
    assert all(LATE.id not in ps for ps in json.loads(nodes.get_meta(PLACED_KEY)).values())
    # a full build takes every passage into its trees: the placements it supersedes are cleared
    store.passages.add([LATE])
    update_pool(store, SETTINGS)
    build_full(store, LLMClient(ScriptedChatModel(respond=scripted)), SETTINGS)
    pool = SiReRAGPool(store, persist=False)
    assert pool.placed == {} and pool.refresh == set() and pool.stamp is not None


def test_a_pool_of_an_unknown_stamp_is_rebuilt(store) -> None:
    build_full(store, LLMClient(ScriptedChatModel(respond=scripted)), SETTINGS)
    store.passages.add([LATE])
    nodes = store.nodes
    nodes.set_meta({STAMP_KEY: json.dumps(Stamp("another-index", 2, "x").as_dict())})
    update = update_pool(store, SETTINGS)
    assert update is not None and update.rebuilt and update.placed == 1  # the one passage under no node
    assert update_pool(store, SETTINGS).placed == 0  # fresh now: nothing to do


def test_an_index_without_a_pool_has_nothing_to_update(store) -> None:
    update = update_pool(store)
    assert update is not None and update == type(update)()
    assert store.nodes.get_meta(STAMP_KEY) is None
