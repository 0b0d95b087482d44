"""SyncGE, the agent as a retriever, the registry names, and the LangChain adapter."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.fakes import INPUT_TOKENS, OUTPUT_TOKENS, client, scripted
from support.tiny_corpus import QUESTION, make_runtime, pid

from gear_agent.agent.gear_retriever import GearRetriever
from gear_agent.agent.graph import build_graph
from gear_agent.agent.langchain_retriever import GearLangChainRetriever
from gear_agent.agent.syncge import SyncGERetriever
from gear_agent.errors import GearError
from gear_agent.expansion.beam import TripleBeamSearch, beams_to_passages
from gear_agent.ids import triple_id
from gear_agent.parts import index_parts
from gear_agent.retrieval.base import Outcome
from gear_agent.retrieval.fusion import rrf
from gear_agent.retrieval.search import SearchRetriever

READ = json.dumps({"triples": [["Rainbow Bridge", "located in", "Folsom"]]})
YES = json.dumps({"answerable": True, "answer": "Sacramento County", "reason": None})


@pytest.fixture
def runtime(tmp_path: Path):
    return make_runtime(tmp_path / "index")


def test_syncge_is_base_plus_beam_from_linked_triples(runtime) -> None:
    syncge = SyncGERetriever(index_parts(runtime), client(scripted([READ])), settings=runtime.settings)
    ranked = syncge.retrieve(QUESTION, k=6)
    base = SearchRetriever(runtime.store, runtime.encode).retrieve(QUESTION, runtime.settings.base_k)
    start = triple_id(pid("Rainbow Bridge (Folsom)"), "Rainbow Bridge", "located in", "Folsom")
    beam = TripleBeamSearch(runtime.store, runtime.embedder, runtime.settings, llm_in_loop=True)
    expanded = beams_to_passages(runtime.store, beam.run(runtime.encode(QUESTION), [start]))
    expected = rrf([[p.id for p in base], [p.id for p in expanded]])[:6]
    assert [p.id for p in ranked] == [i for i, _ in expected]
    assert pid("Folsom, California") in [p.id for p in ranked]
    assert any(p.chain and p.chain[0] == start for p in ranked)


def test_syncge_arun_reports_tokens(runtime) -> None:
    syncge = SyncGERetriever(index_parts(runtime), client(scripted([READ])), settings=runtime.settings)
    outcome = asyncio.run(syncge.arun(QUESTION, 5))
    assert isinstance(outcome, Outcome)
    assert 3 <= len(outcome.passage_ids) <= 5  # base_k=3 plus what the beams reach
    assert (outcome.input_tokens, outcome.output_tokens, outcome.iterations) == (
        INPUT_TOKENS,
        OUTPUT_TOKENS,
        1,
    )


def test_syncge_refuses_an_empty_question(runtime) -> None:
    with pytest.raises(GearError):
        SyncGERetriever(index_parts(runtime), client(scripted([])), settings=runtime.settings).retrieve("  ", 5)


def test_gear_retriever_arun_gives_answer_tokens_iterations(runtime) -> None:
    gear = GearRetriever(index_parts(runtime), client(scripted([READ, YES, "Sacramento County"])), settings=runtime.settings)
    outcome = asyncio.run(gear.arun(QUESTION, 4))
    assert outcome.answer == "Sacramento County"
    assert outcome.iterations == 1
    assert outcome.input_tokens == 3 * INPUT_TOKENS
    assert outcome.output_tokens == 3 * OUTPUT_TOKENS
    assert len(outcome.passage_ids) == 4


def test_the_table_builds_the_llm_retrievers(runtime, monkeypatch) -> None:
    pytest.importorskip("langchain_openai")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    from gear_agent.registry import RETRIEVERS, make_retriever

    assert {"syncge", "syncge-ppr", "syncge-fused", "gear", "gear-ppr", "gear-fused"} <= set(RETRIEVERS)
    for name, expansion in (("syncge", "beam"), ("syncge-ppr", "ppr"), ("syncge-fused", "both")):
        built = make_retriever(name, runtime)
        assert isinstance(built, SyncGERetriever)
        assert (built.name, built.expansion) == (name, expansion)
    for name, expansion in (("gear", "beam"), ("gear-ppr", "ppr"), ("gear-fused", "both")):
        built = make_retriever(name, runtime)
        assert isinstance(built, GearRetriever)
        assert (built.name, built.expansion) == (name, expansion)


def test_a_name_means_the_same_whatever_the_expansion_setting(runtime, monkeypatch) -> None:
    pytest.importorskip("langchain_openai")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    from gear_agent.registry import make_retriever

    for expansion in ("ppr", "both", "beam"):
        settings = runtime.settings.model_copy(update={"expansion": expansion})
        other = type(runtime)(settings, runtime.embedder, runtime.store, runtime.encode)
        assert make_retriever("syncge", other).expansion == "beam"
        assert make_retriever("gear-ppr", other).expansion == "ppr"


def test_gear_retriever_keeps_the_chains(runtime) -> None:
    gear = GearRetriever(index_parts(runtime), client(scripted([READ, YES, "Sacramento County"])), settings=runtime.settings)
    ranked = gear.retrieve(QUESTION, 4)
    stored = {t.id for t in runtime.store.triples.iterate()}
    chained = [p for p in ranked if p.chain]
    assert chained and all(t in stored for p in chained for t in p.chain)


def test_the_agents_ranking_and_its_records_are_one_list(runtime) -> None:
    """``ranked`` (what GearRetriever returns) and ``passages`` (the output's records, read
    once by finalize) hold the same passages, scores and chains, in the same order."""
    agent = build_graph(index_parts(runtime), client(scripted([READ, YES, "Sacramento County"])),
                        runtime.settings).compile()
    state = agent.invoke({"question": QUESTION, "top_k": 4}, output_keys=["ranked", "passages"])
    assert len(state["ranked"]) == 4 and any(p["chain"] for p in state["ranked"])
    assert [(p["id"], p["score"], p["chain"]) for p in state["ranked"]] == [
        (r["id"], r["score"], r["chain_ids"]) for r in state["passages"]]


def test_langchain_adapter_over_the_agent(runtime) -> None:
    agent = build_graph(index_parts(runtime), client(scripted([READ, YES, "Sacramento County"])), runtime.settings).compile()
    docs = GearLangChainRetriever(agent=agent, k=3).invoke(QUESTION)
    assert len(docs) == 3
    assert {"id", "title", "source", "score", "chain", "chain_ids"} <= set(docs[0].metadata)
    by_id = {d.metadata["id"]: d for d in docs}
    assert by_id[pid("Rainbow Bridge (Folsom)")].page_content.startswith("The Rainbow Bridge")


def test_langchain_adapter_over_a_retriever(runtime) -> None:
    syncge = SyncGERetriever(index_parts(runtime), client(scripted([READ, READ])), settings=runtime.settings)
    adapter = GearLangChainRetriever(retriever=syncge, store=runtime.store, k=4)
    docs = adapter.invoke(QUESTION)
    assert [d.metadata["id"] for d in docs] == [p.id for p in syncge.retrieve(QUESTION, 4)]
    chained = [d for d in docs if d.metadata["chain"]]
    assert chained and all(len(t) == 3 for d in chained for t in d.metadata["chain"])


def test_langchain_adapter_needs_one_source() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        GearLangChainRetriever()


def test_gear_eval_gets_answers_tokens_and_iterations(runtime) -> None:
    from gear_agent.evaluation.dataset import Question
    from gear_agent.evaluation.runner import evaluate

    gear = GearRetriever(index_parts(runtime), client(scripted([READ, YES, "Sacramento County"])), settings=runtime.settings)
    gold = (pid("Rainbow Bridge (Folsom)"), pid("Folsom, California"))
    question = Question("q1", QUESTION, ("Sacramento County",), gold)
    row = evaluate(gear, [question], ks=(5,))
    assert row.errors == 0
    assert row.em == 1.0
    assert row.recall[5] == 1.0
    assert row.iterations_per_question == 1
    assert row.tokens_per_question == 3 * (INPUT_TOKENS + OUTPUT_TOKENS)


def test_auto_scorer_is_shortlist_with_an_llm_and_sum_without(runtime) -> None:
    assert runtime.settings.beam_scorer == "auto"
    assert runtime.settings.scorer_for(llm_in_loop=True) == "shortlist"
    assert runtime.settings.scorer_for(llm_in_loop=False) == "sum"
    chosen = runtime.settings.model_copy(update={"beam_scorer": "concat"})
    assert chosen.scorer_for(llm_in_loop=True) == chosen.scorer_for(llm_in_loop=False) == "concat"
