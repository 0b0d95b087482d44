"""Components take an index's parts and their settings section; the composition roots
read the parts off an OpenIndex once (``index_parts``) and hand the same parts to every
retriever; the old calls with an OpenIndex still work, with a DeprecationWarning."""

from __future__ import annotations

import json

import pytest
from support.fakes import client, scripted
from support.tiny_corpus import QUESTION, make_runtime, make_settings

from gear_agent.agent.gear_retriever import GearRetriever
from gear_agent.agent.graph import build_graph
from gear_agent.agent.syncge import SyncGERetriever
from gear_agent.parts import IndexParts, index_parts, make_llm_free
from gear_agent.registry import make_retriever

READ = json.dumps({"triples": [["Rainbow Bridge", "located in", "Folsom"]]})
YES = json.dumps({"answerable": True, "answer": "Sacramento County", "reason": None})


@pytest.fixture(scope="module")
def runtime(tmp_path_factory):
    return make_runtime(tmp_path_factory.mktemp("parts") / "index")


def _ids(result: dict) -> list[str]:
    return [p["id"] for p in result["passages"]]


def test_the_parts_are_built_once_per_parts(runtime) -> None:
    parts = index_parts(runtime)
    assert isinstance(parts, IndexParts)
    assert (parts.store, parts.encode, parts.settings) == (runtime.store, runtime.encode, runtime.settings)
    assert parts.ppr() is parts.ppr()
    assert parts.sequence_encoder() is parts.sequence_encoder()
    assert parts.base() is parts.base()
    expected = make_llm_free("hybrid", runtime).retrieve(QUESTION, 3)
    assert [p.id for p in parts.base().retrieve(QUESTION, 3)] == [p.id for p in expected]


def test_retrievers_over_the_same_parts_share_one_ppr_graph(runtime) -> None:
    parts = index_parts(runtime)
    ppr, hipporag = make_retriever("ppr", parts), make_retriever("hipporag", parts)
    assert ppr is parts.ppr() and hipporag.ppr is ppr
    assert index_parts(runtime).ppr() is not ppr  # other parts, their own graph


def test_the_base_retriever_is_the_one_named(runtime) -> None:
    parts = index_parts(runtime, "bm25")
    expected = make_llm_free("bm25", runtime).retrieve(QUESTION, 3)
    assert [p.id for p in parts.base().retrieve(QUESTION, 3)] == [p.id for p in expected]


def test_parts_without_settings_are_refused(runtime) -> None:
    parts = index_parts(runtime)
    with pytest.raises(TypeError, match="needs settings"):
        build_graph(parts, client(scripted([])))
    with pytest.raises(TypeError, match="needs settings"):
        SyncGERetriever(parts, client(scripted([])))
    with pytest.raises(TypeError, match="needs settings"):
        GearRetriever(parts, client(scripted([])))


def test_the_old_build_graph_call_warns_and_runs_the_same_loop(runtime) -> None:
    new = build_graph(index_parts(runtime), client(scripted([READ, YES, "Sacramento County"])),
                      runtime.settings).compile()
    with pytest.warns(DeprecationWarning, match="index_parts"):
        old = build_graph(runtime, client(scripted([READ, YES, "Sacramento County"]))).compile()
    assert _ids(old.invoke({"question": QUESTION})) == _ids(new.invoke({"question": QUESTION}))


def test_the_old_build_graph_call_with_other_settings_uses_them(runtime) -> None:
    other = make_settings(base_retriever="bm25", top_k=2, index_dir=runtime.settings.index_dir)
    with pytest.warns(DeprecationWarning):
        old = build_graph(runtime, client(scripted([READ, YES, "Sacramento County"])), other)
    new = build_graph(index_parts(runtime, settings=other), client(scripted([READ, YES, "Sacramento County"])),
                      other)
    first, second = old.compile().invoke({"question": QUESTION}), new.compile().invoke({"question": QUESTION})
    assert len(first["passages"]) == 2 and _ids(first) == _ids(second)


def test_the_old_retriever_calls_warn_and_rank_the_same(runtime) -> None:
    settings = runtime.settings
    with pytest.warns(DeprecationWarning, match="SyncGERetriever"):
        old = SyncGERetriever(runtime, client(scripted([READ])), "ppr", "syncge-ppr")
    new = SyncGERetriever(index_parts(runtime), client(scripted([READ])), "ppr", "syncge-ppr",
                          settings=settings)
    assert (old.name, old.expansion, old.settings) == ("syncge-ppr", "ppr", settings)
    assert [p.id for p in old.retrieve(QUESTION, 5)] == [p.id for p in new.retrieve(QUESTION, 5)]
    with pytest.warns(DeprecationWarning, match="GearRetriever"):
        gear = GearRetriever(runtime, client(scripted([READ, YES, "Sacramento County"])))
    same = GearRetriever(index_parts(runtime), client(scripted([READ, YES, "Sacramento County"])),
                         settings=settings)
    assert [p.id for p in gear.retrieve(QUESTION, 4)] == [p.id for p in same.retrieve(QUESTION, 4)]


def test_under_its_own_settings_an_index_is_itself(runtime) -> None:
    assert runtime.under(runtime.settings) is runtime
    other = runtime.under(make_settings(top_k=2))
    assert other is not runtime and (other.store, other.encode) == (runtime.store, runtime.encode)


def test_parts_under_other_settings_use_them(runtime) -> None:
    other = make_settings(base_retriever="bm25", top_k=2, index_dir=runtime.settings.index_dir)
    parts = index_parts(runtime, settings=other)
    assert parts.settings is other and parts.store is runtime.store
    expected = make_llm_free("bm25", runtime).retrieve(QUESTION, 3)
    assert [p.id for p in parts.base().retrieve(QUESTION, 3)] == [p.id for p in expected]
