"""The whole GEAR loop on a tiny index with scripted chat replies."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.fakes import INPUT_TOKENS, OUTPUT_TOKENS, client, scripted
from support.tiny_corpus import QUESTION, make_runtime, make_settings, pid

from gear_agent.agent.graph import build_agent, build_graph
from gear_agent.errors import GearError
from gear_agent.parts import index_parts

READ_1 = json.dumps(
    {
        "triples": [
            ["Rainbow Bridge", "spans", "American River"],
            ["Rainbow Bridge", "located in", "Folsom"],
        ]
    }
)
READ_2 = json.dumps({"triples": [["Folsom", "located in", "Sacramento County"]]})
NOT_YET = json.dumps({"answerable": False, "answer": None, "reason": "the county of Folsom"})
YES = json.dumps({"answerable": True, "answer": "Sacramento County", "reason": None})


def run(tmp_path: Path, replies: list, *, use_async: bool = False, **settings):
    runtime = make_runtime(tmp_path / "index", make_settings(**settings))
    model = scripted(replies)
    agent = build_graph(index_parts(runtime), client(model), runtime.settings).compile()
    if use_async:
        return asyncio.run(agent.ainvoke({"question": QUESTION})), model
    return agent.invoke({"question": QUESTION}), model


def titles(result: dict) -> list[str]:
    return [p["title"] for p in result["passages"]]


def calls(result: dict) -> dict[str, int]:
    return {node: c["calls"] for node, c in result["tokens"]["by_node"].items()}


@pytest.mark.parametrize("use_async", [False, True])
def test_answerable_at_iteration_one(tmp_path: Path, use_async: bool) -> None:
    replies = [
        json.dumps(
            {
                "triples": [
                    ["Rainbow Bridge", "located in", "Folsom"],
                    ["Folsom", "located in", "Sacramento County"],
                ]
            }
        ),
        YES,
        "Sacramento County",
    ]
    # The scripted reader knows the county before a passage shows it: grounding off here.
    result, model = run(tmp_path, replies, use_async=use_async, ground_triples=False)
    assert result["stop_reason"] == "answerable"
    assert result["iterations"] == 1
    assert result["queries"] == [QUESTION]
    assert result["answer"] == "Sacramento County"
    assert result["gist_memory"] == [
        ["Rainbow Bridge", "located in", "Folsom"],
        ["Folsom", "located in", "Sacramento County"],
    ]
    assert calls(result) == {"read": 1, "reason": 1, "answer": 1}
    assert result["tokens"]["input"] == 3 * INPUT_TOKENS
    assert result["tokens"]["output"] == 3 * OUTPUT_TOKENS
    # Both gold passages lead; the chains show the memory triples that reached them.
    assert set(titles(result)[:2]) == {"Folsom, California", "Rainbow Bridge (Folsom)"}
    by_title = {p["title"]: p for p in result["passages"]}
    assert by_title["Folsom, California"]["chain"] == [
        ["Folsom", "located in", "Sacramento County"]
    ]
    assert by_title["Folsom, California"]["id"] == pid("Folsom, California")
    scores = [p["score"] for p in result["passages"]]
    assert scores == sorted(scores, reverse=True) and len(scores) == 5
    assert len(model.prompts) == 3
    assert "Memory (facts found so far)" not in model.prompts[0]  # plain reader at iteration 1


@pytest.mark.parametrize("use_async", [False, True])
def test_never_answerable_stops_at_max_iterations(tmp_path: Path, use_async: bool) -> None:
    replies = [
        READ_1,
        NOT_YET,
        "county of Folsom",
        READ_2,
        NOT_YET,
        "Query: Folsom county seat",
        '{"triples": []}',
        NOT_YET,
        "Sacramento County",
    ]
    result, model = run(tmp_path, replies, use_async=use_async, max_iterations=3)
    assert result["stop_reason"] == "max_iterations"
    assert result["iterations"] == 3
    assert result["queries"] == [QUESTION, "county of Folsom", "Folsom county seat"]
    assert result["gist_memory"] == [
        ["Rainbow Bridge", "spans", "American River"],
        ["Rainbow Bridge", "located in", "Folsom"],
        ["Folsom", "located in", "Sacramento County"],
    ]
    assert calls(result) == {"read": 3, "reason": 3, "rewrite": 2, "answer": 1}
    assert result["tokens"]["input"] == 9 * INPUT_TOKENS
    assert result["tokens"]["output"] == 9 * OUTPUT_TOKENS
    assert result["answer"] == "Sacramento County"
    assert set(titles(result)[:2]) == {"Rainbow Bridge (Folsom)", "Folsom, California"}
    # Reads after the first one show the memory.
    assert "Memory (facts found so far)" in model.prompts[3]
    assert '["Rainbow Bridge", "located in", "Folsom"]' in model.prompts[3]


def test_malformed_reader_output_is_recorded_and_the_rest_kept(tmp_path: Path) -> None:
    reader = (
        'Sure! {"triples": [["Rainbow Bridge", "located in"], '
        '["Folsom", "located in", "Sacramento County"], {"head": "Folsom"}]}'
    )
    result, _ = run(tmp_path, [reader, YES, "Sacramento County"], ground_triples=False)
    assert result["gist_memory"] == [["Folsom", "located in", "Sacramento County"]]
    assert [d["node"] for d in result["dropped"]] == ["read", "read"]
    assert all(d["iteration"] == 1 for d in result["dropped"])
    assert "Rainbow Bridge" in result["dropped"][0]["item"]
    assert result["stop_reason"] == "answerable"


def test_reader_prose_without_triples_gives_empty_memory(tmp_path: Path) -> None:
    result, _ = run(
        tmp_path, ["I could not find anything useful.", NOT_YET], max_iterations=1, answer=False
    )
    assert result["gist_memory"] == []
    assert result["stop_reason"] == "max_iterations"
    assert result["answer"] is None
    assert "answer" not in result["tokens"]["by_node"]
    assert len(result["passages"]) == 3  # the base list alone (base_k=3)


@pytest.mark.parametrize("use_async", [False, True])
def test_llm_error_then_successful_retry(tmp_path: Path, use_async: bool) -> None:
    replies = [TimeoutError("slow"), READ_2, YES, "Sacramento County"]
    result, model = run(tmp_path, replies, use_async=use_async, ground_triples=False)
    assert len(model.prompts) == 4
    assert model.prompts[0] == model.prompts[1]  # the same read, retried
    assert result["dropped"] == []
    assert result["gist_memory"] == [["Folsom", "located in", "Sacramento County"]]
    assert calls(result) == {"read": 1, "reason": 1, "answer": 1}  # the failure cost nothing
    assert result["tokens"]["input"] == 3 * INPUT_TOKENS


def test_failed_read_after_retries_is_skipped_and_recorded(tmp_path: Path) -> None:
    replies = [TimeoutError("a"), TimeoutError("b"), TimeoutError("c"), NOT_YET]
    result, _ = run(tmp_path, replies, max_iterations=1, answer=False)
    assert result["gist_memory"] == []
    assert len(result["dropped"]) == 1
    assert result["dropped"][0]["node"] == "read"
    assert "after 3 attempts" in result["dropped"][0]["error"]
    assert result["stop_reason"] == "max_iterations"


def test_reasoner_error_is_fatal(tmp_path: Path) -> None:
    from gear_agent.llm.errors import LLMCallError

    with pytest.raises(LLMCallError, match="node='reason'"):
        run(tmp_path, [READ_1, ValueError("bad request")])


@pytest.mark.parametrize("question", ["", "   \n", "x" * 51, 123, None])
def test_bad_questions_are_refused_before_any_work(tmp_path: Path, question: str) -> None:
    runtime = make_runtime(tmp_path / "index", make_settings(max_question_chars=50))
    model = scripted([])
    agent = build_graph(index_parts(runtime), client(model), runtime.settings).compile()
    with pytest.raises(GearError, match="question"):
        agent.invoke({"question": question})
    assert model.prompts == []


def test_stream_updates_follow_the_loop(tmp_path: Path) -> None:
    runtime = make_runtime(tmp_path / "index")
    model = scripted([READ_1, NOT_YET, "county of Folsom", READ_2, YES, "Sacramento County"])
    agent = build_graph(index_parts(runtime), client(model), runtime.settings).compile()
    nodes = [next(iter(u)) for u in agent.stream({"question": QUESTION}, stream_mode="updates")]
    loop = ["retrieve", "read", "link", "expand", "reason"]
    assert nodes == ["start", *loop, "rewrite", *loop, "finalize", "answer"]

    async def astream() -> list[str]:
        model2 = scripted([READ_1, NOT_YET, "county of Folsom", READ_2, YES, "Sacramento County"])
        agent2 = build_graph(index_parts(runtime), client(model2), runtime.settings).compile()
        return [next(iter(u)) async for u in agent2.astream({"question": QUESTION})]

    assert asyncio.run(astream()) == nodes


def test_per_run_overrides(tmp_path: Path) -> None:
    runtime = make_runtime(tmp_path / "index")
    agent = build_graph(index_parts(runtime), client(scripted([READ_1, NOT_YET, "x"])), runtime.settings).compile()
    result = agent.invoke({"question": QUESTION, "max_iterations": 1, "top_k": 2})
    assert result["stop_reason"] == "max_iterations"
    assert len(result["passages"]) == 2


def test_build_agent_with_checkpointer(tmp_path: Path) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    runtime = make_runtime(tmp_path / "index")
    agent = build_agent(
        index=runtime,
        chat_model=scripted([READ_2, YES, "Sacramento County"]),
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "t1"}}
    result = agent.invoke({"question": QUESTION}, config)
    assert result["answer"] == "Sacramento County"
    snapshot = agent.get_state(config)
    assert snapshot.values["stop_reason"] == "answerable"
    assert snapshot.next == ()


def test_a_thread_takes_a_second_question_afresh(tmp_path: Path) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    runtime = make_runtime(tmp_path / "index")
    replies = [READ_2, YES, "Sacramento County", READ_1, YES, "Folsom"]
    agent = build_agent(index=runtime, chat_model=scripted(replies), checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    agent.invoke({"question": QUESTION}, config)
    second = agent.invoke({"question": "Where is the Rainbow Bridge?"}, config)
    assert second["queries"] == ["Where is the Rainbow Bridge?"]
    assert second["gist_memory"] == json.loads(READ_1)["triples"]
    assert calls(second) == {"read": 1, "reason": 1, "answer": 1}
    assert second["answer"] == "Folsom"


def test_ppr_expansion_without_the_module_is_a_clear_error(tmp_path: Path) -> None:
    import importlib.util

    if importlib.util.find_spec("gear_agent.expansion.ppr") is not None:
        pytest.skip("gear_agent.expansion.ppr exists")
    with pytest.raises(GearError, match="GEAR_EXPANSION=beam"):
        run(tmp_path, [READ_1, YES, "x"], expansion="ppr")


def test_top_level_import_is_light() -> None:
    import subprocess
    import sys

    code = (
        "import sys, gear_agent; "
        "heavy = [m for m in sys.modules if m.split('.')[0] in ('langgraph', 'numpy', 'langchain_core')]; "
        "print(len(heavy)); assert callable(gear_agent.build_agent)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "0"


def test_build_agent_without_a_model_fails_before_opening_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gear_agent.llm.errors import LLMConfigError

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(LLMConfigError, match="OPENAI_API_KEY"):
        build_agent(make_settings(index_dir=tmp_path / "missing"))
    assert not (tmp_path / "missing").exists()


def test_reader_triples_not_in_the_passages_shown_are_dropped(tmp_path: Path) -> None:
    """An injected or invented triple (its entities are in no passage shown) does not reach
    the memory; it is recorded in ``dropped`` with the reason."""
    reader = json.dumps({"triples": [["Rainbow Bridge", "located in", "Folsom"],
                                     ["Eiffel Tower", "located in", "Sacramento County"],
                                     ["rainbow-bridge", "spans", "the american river"]]})
    result, model = run(tmp_path, [reader, NOT_YET], max_iterations=1, answer=False)
    assert result["gist_memory"] == [["Rainbow Bridge", "located in", "Folsom"],
                                     ["rainbow-bridge", "spans", "the american river"]]
    assert result["dropped"] == [{"iteration": 1, "node": "read",
                                  "item": ["Eiffel Tower", "located in", "Sacramento County"],
                                  "reason": "subject or object not found in the passages shown"}]
    off, _ = run(tmp_path / "off", [reader, NOT_YET], max_iterations=1, answer=False,
                 ground_triples=False)
    assert len(off["gist_memory"]) == 3 and off["dropped"] == []
