"""The JSON Lines tracer on the GEAR loop: a parseable LangSmith-style run tree, rotation,
and `gear trace show`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.fakes import INPUT_TOKENS, OUTPUT_TOKENS, scripted
from support.tiny_corpus import QUESTION, make_runtime, make_settings
from typer.testing import CliRunner

from gear_agent.agent.graph import build_agent
from gear_agent.cli import trace_cmd
from gear_agent.tracing.jsonl_tracer import FILE_NAME, JsonlTracer
from gear_agent.tracing.reader import TraceError, build_tree, read_runs, roots

READ_1 = json.dumps({"triples": [["Rainbow Bridge", "located in", "Folsom"]]})
READ_2 = json.dumps({"triples": [["Folsom", "located in", "Sacramento County"]]})
NOT_YET = json.dumps({"answerable": False, "answer": None, "reason": "the county of Folsom"})
YES = json.dumps({"answerable": True, "answer": "Sacramento County", "reason": None})
TWO_HOPS = [READ_1, NOT_YET, "county of Folsom", READ_2, YES, "Sacramento County"]
NODES = ["start", "retrieve", "read", "link", "expand", "reason", "rewrite",
         "retrieve", "read", "link", "expand", "reason", "finalize", "answer"]
LLM_NODES = ["read", "reason", "rewrite", "read", "reason", "answer"]


@pytest.fixture(scope="module")
def runtime(tmp_path_factory):
    return make_runtime(tmp_path_factory.mktemp("tracing") / "index", make_settings())


def traced_run(runtime, tracer: JsonlTracer, *, use_async: bool = False) -> dict:
    agent = build_agent(runtime.settings, index=runtime, chat_model=scripted(TWO_HOPS))
    config = {"callbacks": [tracer]}
    if use_async:
        return asyncio.run(agent.ainvoke({"question": QUESTION}, config=config))
    return agent.invoke({"question": QUESTION}, config=config)


@pytest.mark.parametrize("use_async", [False, True])
def test_trace_is_a_consistent_run_tree(runtime, tmp_path: Path, use_async: bool) -> None:
    result = traced_run(runtime, JsonlTracer(tmp_path), use_async=use_async)
    runs = read_runs(tmp_path / FILE_NAME)
    by_id = {r["id"]: r for r in runs}
    assert len(by_id) == len(runs)
    (root,) = roots(runs)
    assert root["name"] == "gear" and root["run_type"] == "chain"
    assert root["inputs"] == {"question": QUESTION}
    assert root["outputs"]["answer"] == "Sacramento County"
    for run in runs:
        assert run["trace_id"] == root["id"]
        assert run["start_time"] <= run["end_time"]
        assert run["error"] is None
        if run is not root:
            parent = by_id[run["parent_run_id"]]  # every parent is in the trace
            assert run["dotted_order"].startswith(parent["dotted_order"] + ".")
            assert run["dotted_order"].count(".") == parent["dotted_order"].count(".") + 1
    # The file lists the tree in dotted order: parents before children, steps in start order.
    assert [r["dotted_order"] for r in runs] == sorted(r["dotted_order"] for r in runs)
    tree = build_tree(runs)
    steps = [c.name for c in tree.children if c.name in set(NODES)]
    assert steps == NODES
    # One chat call under each LLM node, in order, with the model's reported usage.
    llm_runs = [n for n in tree.walk() if n.record["run_type"] in ("llm", "chat")]
    assert len(llm_runs) == len(LLM_NODES)
    assert [r.record["metadata"].get("gear_node") for r in llm_runs] == LLM_NODES
    for node in llm_runs:
        assert node.record["tokens"] == {
            "input": INPUT_TOKENS, "output": OUTPUT_TOKENS, "total": INPUT_TOKENS + OUTPUT_TOKENS
        }
    assert root["tokens"]["input"] == result["tokens"]["input"] == len(LLM_NODES) * INPUT_TOKENS
    assert root["tokens"]["output"] == result["tokens"]["output"]
    # Node outputs carry what the steps did.
    rewrite = next(c for c in tree.children if c.name == "rewrite")
    assert rewrite.record["outputs"]["query"] == "county of Folsom"
    links = [c for c in tree.children if c.name == "link"]
    assert links[-1].record["outputs"]["gist_memory"][-1] == ["Folsom", "located in", "Sacramento County"]


def test_failed_run_is_traced_with_its_error(runtime, tmp_path: Path) -> None:
    agent = build_agent(runtime.settings.model_copy(update={"llm_max_retries": 0}), index=runtime,
                        chat_model=scripted([READ_1, ValueError("model broke")]))
    with pytest.raises(Exception, match="model broke"):
        agent.invoke({"question": QUESTION}, config={"callbacks": [JsonlTracer(tmp_path)]})
    (root,) = roots(read_runs(tmp_path / FILE_NAME))
    assert "model broke" in root["error"]


def test_rotation_keeps_whole_trees_and_a_bounded_number_of_files(runtime, tmp_path: Path) -> None:
    tracer = JsonlTracer(tmp_path, max_bytes=10_000, backups=2)
    for _ in range(4):
        traced_run(runtime, tracer)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [FILE_NAME, f"{FILE_NAME}.1", f"{FILE_NAME}.2"]
    assert tracer.rotated_paths() == [tmp_path / FILE_NAME, tmp_path / f"{FILE_NAME}.1",
                                      tmp_path / f"{FILE_NAME}.2"]
    for path in tracer.rotated_paths():
        runs = read_runs(path)
        assert len(roots(runs)) == 1  # one tree is over 10 kB, so one tree per file
        ids = {r["id"] for r in runs}
        assert all(r["parent_run_id"] in ids for r in runs if r["parent_run_id"])


def test_small_trees_share_a_file_until_it_is_full(tmp_path: Path, runtime) -> None:
    tracer = JsonlTracer(tmp_path, max_bytes=10_000_000)
    traced_run(runtime, tracer)
    traced_run(runtime, tracer)
    assert [p.name for p in tmp_path.iterdir()] == [FILE_NAME]
    assert len(roots(read_runs(tmp_path / FILE_NAME))) == 2


def test_trace_show_prints_steps_tokens_and_outputs(runtime, tmp_path: Path) -> None:
    traced_run(runtime, JsonlTracer(tmp_path))
    result = CliRunner().invoke(trace_cmd.app, ["show", str(tmp_path / FILE_NAME)],
                                terminal_width=200)
    assert result.exit_code == 0, result.output
    text = result.output
    positions = [text.index(f"── {name}  chain") for name in ("start", "retrieve", "read", "rewrite",
                                                                 "finalize", "answer")]
    assert positions == sorted(positions)
    assert "county of Folsom" in text  # the rewritten query
    assert "Folsom | located in | Sacramento County" in text  # a memory triple
    assert "Rainbow Bridge (Folsom)" in text  # a final passage
    assert f"{INPUT_TOKENS}+{OUTPUT_TOKENS} tok" in text
    root_id = roots(read_runs(tmp_path / FILE_NAME))[0]["id"]
    one = CliRunner().invoke(trace_cmd.app, ["show", str(tmp_path / FILE_NAME), root_id[:30]],
                             terminal_width=200)
    assert one.exit_code == 0 and "Sacramento County" in one.output


def test_reader_names_bad_lines_and_unknown_ids(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"id": "a", "parent_run_id": null}\nnot json\n')
    with pytest.raises(TraceError, match=r"t.jsonl:2"):
        read_runs(path)
    with pytest.raises(TraceError, match="no run with id 'zz'"):
        build_tree([{"id": "a", "parent_run_id": None}], "zz")
    result = CliRunner().invoke(trace_cmd.app, ["show", str(tmp_path / "missing.jsonl")])
    assert result.exit_code == 2 and "no trace file" in result.output
