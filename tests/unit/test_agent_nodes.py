"""Each GEAR node on its own, over the tiny index, with hand-checked expectations."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from support.fakes import INPUT_TOKENS, client, scripted
from support.tiny_corpus import QUESTION, make_runtime, pid

from gear_agent.agent import nodes
from gear_agent.agent.graph import route_after_reason
from gear_agent.agent.state import merge_memory
from gear_agent.expansion.beam import TripleBeamSearch, beams_to_passages
from gear_agent.ids import triple_id
from gear_agent.parts import index_parts
from gear_agent.retrieval.fusion import rrf


@pytest.fixture
def runtime(tmp_path: Path):
    return make_runtime(tmp_path / "index")


def test_merge_memory_is_case_insensitive_and_keeps_order() -> None:
    left = [["Folsom", "located in", "Sacramento County"]]
    right = [["folsom", "Located  in", "sacramento county"], ["A", "b", "C"], ["a", "B", "c"]]
    merged = merge_memory(left, right)
    assert merged == [["Folsom", "located in", "Sacramento County"], ["A", "b", "C"]]
    assert left == [["Folsom", "located in", "Sacramento County"]]  # not changed
    assert merge_memory(None, None) == []


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ({"answerable": True, "iteration": 1}, "finalize"),
        ({"answerable": False, "iteration": 3}, "finalize"),
        ({"answerable": False, "iteration": 2}, "rewrite"),
        ({"answerable": False, "iteration": 1, "max_iterations": 1}, "finalize"),
    ],
)
def test_router_after_reason(state: dict, expected: str) -> None:
    assert route_after_reason(state, 3) == expected


def test_every_plain_node_names_the_runtime_that_langgraph_fills_in(runtime) -> None:
    """LangGraph passes a node its ``Runtime[GearContext]`` when the node names a ``runtime``
    parameter; the LLM nodes take theirs from ``get_runtime()`` (test_agent_chat: the run's
    model reaches every LLM node under invoke, ainvoke, stream and astream)."""
    parts, settings = index_parts(runtime), runtime.settings
    plain = [nodes.make_start(runtime.store, settings), nodes.make_retrieve(parts, settings),
             nodes.make_link(parts, settings), nodes.make_expand(parts, settings, "beam"),
             nodes.make_finalize(parts, settings)]
    assert all("runtime" in inspect.signature(node).parameters for node in plain)


def test_stop_reason() -> None:
    assert nodes.stop_reason_of({"answerable": True, "iteration": 4}, 4) == "answerable"
    assert nodes.stop_reason_of({"answerable": False, "iteration": 4}, 4) == "max_iterations"
    assert nodes.stop_reason_of({"answerable": False, "iteration": 2}, 4) is None


def test_start_sets_up_iteration_one(runtime) -> None:
    update = nodes.make_start(runtime.store, runtime.settings)({"question": f"  {QUESTION} "})
    assert update["question"] == update["query"] == QUESTION
    assert update["queries"].value == [QUESTION]  # Overwrite: a new run on a thread starts afresh
    assert update["gist_memory"].value == [] and update["retrieved"].value == []
    assert update["iteration"] == 1


def test_retrieve_is_hybrid_base_retrieval(runtime) -> None:
    update = nodes.make_retrieve(index_parts(runtime), runtime.settings)({"query": "Folsom Sacramento County"})
    store, k = runtime.store, runtime.settings.base_k
    lexical = [h.id for h in store.passages.bm25_search("Folsom Sacramento County", k)]
    dense = [
        h.id for h in store.passages.vector_search(runtime.encode("Folsom Sacramento County"), k)
    ]
    expected = [i for i, _ in rrf([lexical, dense])[:k]]
    assert [p["id"] for p in update["base"]] == expected
    assert update["base"][0]["id"] == pid("Folsom, California")
    assert all(p["chain"] == [] for p in update["base"])


def test_read_turns_the_reply_into_proximal_triples(runtime) -> None:
    model = scripted(['{"triples": [["Folsom", "located in", "Sacramento County"], ["x", "y"]]}'])
    read = nodes.make_read(runtime.store, runtime.settings, client(model))
    state = {
        "question": QUESTION,
        "iteration": 2,
        "gist_memory": [["A", "b", "c"]],
        "base": [{"id": pid("Folsom, California"), "score": 1.0, "chain": []}],
    }
    update = read.invoke(state)
    assert update["proximal"] == [["Folsom", "located in", "Sacramento County"]]
    assert update["dropped"] == [{"iteration": 2, "node": "read", "item": "['x', 'y']"}]
    assert update["tokens"]["by_node"]["read"]["input"] == INPUT_TOKENS
    assert "Folsom is a city in Sacramento County" in model.prompts[0]
    assert '["A", "b", "c"]' in model.prompts[0]  # memory shown after iteration 1


def test_link_finds_the_indexed_triple_and_fills_memory(runtime) -> None:
    proximal = [
        ["Folsom", "located in", "Sacramento County"],
        ["Folsom", "is in", "Sacramento County"],
    ]
    update = nodes.make_link(index_parts(runtime), runtime.settings)({"proximal": proximal})
    expected = triple_id(pid("Folsom, California"), "Folsom", "located in", "Sacramento County")
    assert update["linked"] == [expected]  # both link to the same triple: kept once
    assert update["gist_memory"] == proximal


def test_expand_fuses_base_and_beam_passages(runtime) -> None:
    start = triple_id(pid("Rainbow Bridge (Folsom)"), "Rainbow Bridge", "located in", "Folsom")
    base = [{"id": pid("American River"), "score": 1.0, "chain": []}]
    state = {"query": "county of Folsom", "linked": [start], "base": base}
    update = nodes.make_expand(index_parts(runtime), runtime.settings, "beam")(state)
    (fused,) = update["retrieved"]
    beam = TripleBeamSearch(runtime.store, runtime.embedder, runtime.settings, llm_in_loop=True)
    expanded = beams_to_passages(
        runtime.store, beam.run(runtime.encode("county of Folsom"), [start])
    )
    assert [p["id"] for p in fused] == [
        i for i, _ in rrf([[pid("American River")], [p.id for p in expanded]])
    ]
    chained = [p for p in fused if p["chain"]]
    assert chained and all(p["chain"][0] == start for p in chained)


def test_finalize_orders_by_rrf_of_iteration_lists(runtime) -> None:
    a, b, c = pid("American River"), pid("Folsom, California"), pid("Placer County")
    t = triple_id(b, "Folsom", "located in", "Sacramento County")
    state = {
        "iteration": 2,
        "answerable": True,
        "gist_memory": [],
        "retrieved": [
            [{"id": a, "score": 1.0, "chain": []}, {"id": b, "score": 0.5, "chain": []}],
            [{"id": b, "score": 1.0, "chain": [t]}, {"id": c, "score": 0.5, "chain": []}],
        ],
    }
    update = nodes.make_finalize(index_parts(runtime), runtime.settings)(state)
    assert [p["id"] for p in update["passages"]] == [b, a, c]
    assert [p["score"] for p in update["passages"]] == pytest.approx(
        [1 / 61 + 1 / 62, 1 / 61, 1 / 62]
    )
    assert update["passages"][0]["chain"] == [["Folsom", "located in", "Sacramento County"]]
    assert update["passages"][0]["title"] == "Folsom, California"
    assert update["stop_reason"] == "answerable" and update["iterations"] == 2


def test_finalize_passage_links_memory_triples(runtime) -> None:
    state = {
        "iteration": 1,
        "max_iterations": 1,
        "gist_memory": [["Folsom", "located in", "Sacramento County"]],
        "retrieved": [],
    }
    update = nodes.make_finalize(index_parts(runtime), runtime.settings)(state)
    assert update["passages"][0]["id"] == pid("Folsom, California")
    assert update["stop_reason"] == "max_iterations"


def test_reason_reads_the_verdict_and_tolerates_nonsense(runtime) -> None:
    good = nodes.make_reason(runtime.settings, client(scripted(['{"answerable": true, "answer": "X"}'])))
    assert good.invoke({"question": "q", "gist_memory": [["a", "b", "c"]]})["answer"] == "X"
    bad = nodes.make_reason(runtime.settings, client(scripted(["Hmm, hard to say."])))
    update = bad.invoke({"question": "q", "gist_memory": [], "iteration": 1})
    assert update["answerable"] is False
    assert update["dropped"][0]["node"] == "reason"


def test_rewrite_sets_the_next_query(runtime) -> None:
    model = scripted(['Query: "county of Folsom"'])
    rewrite = nodes.make_rewrite(runtime.settings, client(model))
    update = rewrite.invoke(
        {"question": QUESTION, "gist_memory": [], "reason": "Folsom's county", "iteration": 1}
    )
    assert update["query"] == "county of Folsom"
    assert update["queries"] == ["county of Folsom"]
    assert update["iteration"] == 2
    assert "What is missing: Folsom's county" in model.prompts[0]
