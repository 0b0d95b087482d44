"""`gear-sirerag`: the GEAR agent with SiReRAG's pool as its base retriever; other names
keep the configured base retrieval."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.fakes import client, scripted
from support.tiny_corpus import QUESTION, make_runtime

from gear_agent.agent.gear_retriever import GearRetriever
from gear_agent.parts import index_parts
from gear_agent.registry import RETRIEVERS, make_retriever
from gear_agent.sirerag import SiReRAGRetriever, build_ablation

READ = json.dumps({"triples": [["Rainbow Bridge", "located in", "Folsom"]]})
YES = json.dumps({"answerable": True, "answer": "Sacramento County", "reason": None})


@pytest.fixture
def runtime(tmp_path: Path):
    runtime = make_runtime(tmp_path / "index")
    build_ablation(runtime.store)
    assert runtime.store.nodes.count() > 0
    return runtime


def base_update(retriever: GearRetriever) -> list[str]:
    for update in retriever.agent.stream({"question": QUESTION, "top_k": 5}, stream_mode="updates"):
        if "retrieve" in update:
            return [p["id"] for p in update["retrieve"]["base"]]
    raise AssertionError("no retrieve update")


def test_gear_sirerag_retrieves_from_the_pool(runtime, monkeypatch) -> None:
    real = SiReRAGRetriever.retrieve
    asked: list[tuple[str, int]] = []

    def recorded(self, query: str, k: int, where=None):
        asked.append((query, k))
        return list(reversed(real(self, query, k, where)))  # an order the hybrid base never gives here

    monkeypatch.setattr(SiReRAGRetriever, "retrieve", recorded)
    agent = make_retriever("gear-sirerag", runtime, client(scripted([READ, YES, "Sacramento County"])))
    assert agent.name == "gear-sirerag" and RETRIEVERS["gear-sirerag"].needs_llm
    expected = list(reversed(real(SiReRAGRetriever(runtime.store, runtime.encode), QUESTION, runtime.settings.base_k)))
    assert base_update(agent) == [p.id for p in expected]
    assert asked == [(QUESTION, runtime.settings.base_k)]
    assert [p.id for p in expected] != [p.id for p in index_parts(runtime).base().retrieve(QUESTION, runtime.settings.base_k)]


def test_other_agent_names_keep_the_configured_base(runtime) -> None:
    agent = make_retriever("gear-ppr", runtime, client(scripted([READ, YES, "Sacramento County"])))
    expected = index_parts(runtime).base().retrieve(QUESTION, runtime.settings.base_k)
    assert base_update(agent) == [p.id for p in expected]
