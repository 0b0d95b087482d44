"""Any LLM-free retriever as the agent's base (``GEAR_BASE_RETRIEVER``), with filters; the
default is ppr (the replayed rows of both dev sets, docs/quality.md), and
tripleLink/passageLink keep a plain search."""

from __future__ import annotations

import json

import pytest
from support.fakes import client, scripted
from support.tiny_corpus import QUESTION, build_store, make_settings, pid

from gear_agent.agent import nodes
from gear_agent.agent.graph import build_graph
from gear_agent.agent.syncge import SyncGERetriever
from gear_agent.config import RetrievalSettings
from gear_agent.embedding.hashing import HashingEmbedder
from gear_agent.errors import UnknownNameError
from gear_agent.filters import parse_where
from gear_agent.open_index import OpenIndex
from gear_agent.parts import LLM_FREE, index_parts, make_llm_free
from gear_agent.registry import RETRIEVERS
from gear_agent.retrieval.search import QueryEncoder

READ = json.dumps({"triples": [["Rainbow Bridge", "located in", "Folsom"]]})
YES = json.dumps({"answerable": True, "answer": "Sacramento County", "reason": None})


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return build_store(tmp_path_factory.mktemp("base") / "index", HashingEmbedder(128))


def _runtime(store, **settings) -> OpenIndex:
    embedder = HashingEmbedder(128)
    return OpenIndex(make_settings(**settings), embedder, store, QueryEncoder(embedder))


def test_the_llm_free_rows_are_the_tables_rows_without_an_llm() -> None:
    assert list(LLM_FREE) == [n for n, spec in RETRIEVERS.items() if not spec.needs_llm]
    assert all(RETRIEVERS[name] is spec for name, spec in LLM_FREE.items())


@pytest.mark.parametrize("name", ["ppr", "hybrid+naive_ge", "hybrid+naive_ge+ppr", "bm25"])
def test_the_retrieve_node_uses_the_configured_retriever(store, name: str) -> None:
    runtime = _runtime(store, base_retriever=name)
    update = nodes.make_retrieve(index_parts(runtime), runtime.settings)({"query": QUESTION})
    expected = make_llm_free(name, runtime).retrieve(QUESTION, runtime.settings.base_k)
    assert [p["id"] for p in update["base"]] == [p.id for p in expected]
    assert [tuple(p["chain"]) for p in update["base"]] == [p.chain for p in expected]


def test_the_default_base_is_ppr(store) -> None:
    assert RetrievalSettings().base_retriever == "ppr"
    runtime = _runtime(store, base_retriever=RetrievalSettings().base_retriever)
    base = index_parts(runtime).base().retrieve(QUESTION, 3)
    assert [p.id for p in base] == [p.id for p in make_llm_free("ppr", runtime).retrieve(
        QUESTION, 3)]
    assert runtime.settings.link_search_mode == "hybrid"


def test_a_filter_applies_to_any_base(store) -> None:
    runtime = _runtime(store, base_retriever="ppr")
    where = ["source=test"]
    update = nodes.make_retrieve(index_parts(runtime), runtime.settings)({"query": QUESTION, "where": where})
    assert update["base"]
    assert index_parts(runtime).base().retrieve(
        QUESTION, 3, parse_where(["source=elsewhere"])) == []


def test_link_mode_follows_a_plain_base_and_is_hybrid_otherwise(store) -> None:
    assert _runtime(store, base_retriever="dense").settings.link_search_mode == "dense"
    assert _runtime(store, base_retriever="ppr").settings.link_search_mode == "hybrid"
    assert _runtime(store, base_retriever="ppr", link_mode="bm25").settings.link_search_mode == (
        "bm25")


def test_the_agent_and_syncge_run_over_a_ppr_base(store) -> None:
    runtime = _runtime(store, base_retriever="ppr")
    agent = build_graph(index_parts(runtime), client(scripted([READ, YES, "Sacramento County"])), runtime.settings).compile()
    result = agent.invoke({"question": QUESTION})
    assert result["answer"] == "Sacramento County" and result["passages"]
    syncge = SyncGERetriever(index_parts(runtime), client(scripted([READ])), settings=runtime.settings)
    ranked = syncge.retrieve(QUESTION, 5)
    assert pid("Folsom, California") in [p.id for p in ranked]


def test_an_llm_or_unknown_base_fails_when_the_agent_is_built(store) -> None:
    for name in ("gear", "no-such-retriever"):
        runtime = _runtime(store, base_retriever=name)
        with pytest.raises(UnknownNameError, match="not a retriever without an LLM"):
            build_graph(index_parts(runtime), client(scripted([])), runtime.settings)
