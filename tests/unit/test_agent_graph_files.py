"""The deployment files: langgraph.json, graphs/gear_graph.py, and the generated docs/graph.md."""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_langgraph_json_points_at_the_graph_module() -> None:
    config = json.loads((ROOT / "langgraph.json").read_text())
    path, attribute = config["graphs"]["gear"].split(":")
    assert (ROOT / path).is_file()
    assert attribute == "graph"


def _load_graph_module(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "graphs/gear_graph.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_graph_factory_builds_once_lazily_without_a_checkpointer(monkeypatch: pytest.MonkeyPatch) -> None:
    import gear_agent.agent.graph as graph_module

    seen = []

    def fake_build_agent(settings=None, **kwargs):
        seen.append((settings, kwargs))
        return "compiled"

    monkeypatch.setattr(graph_module, "build_agent", fake_build_agent)
    monkeypatch.setenv("GEAR_MAX_ITERATIONS", "2")
    module = _load_graph_module("gear_graph_test")
    assert seen == []  # importing builds nothing
    schemas = asyncio.run(module.graph(SimpleNamespace(access_context="assistants.read")))
    assert seen == [] and "question" in schemas.get_input_jsonschema()["properties"]  # described
    run = SimpleNamespace(access_context="threads.create_run")
    assert asyncio.run(module.graph(run)) == "compiled"
    assert asyncio.run(module.graph(run)) == "compiled"
    assert len(seen) == 1  # built once, then reused
    settings, kwargs = seen[0]
    assert kwargs == {}  # no checkpointer: the LangGraph server brings its own
    assert settings.max_iterations == 2  # settings read from the environment


def test_graph_module_imports_fast_loading_nothing_heavy() -> None:
    code = (
        "import importlib.util, sys, time; t = time.perf_counter();"
        f"spec = importlib.util.spec_from_file_location('g', {str(ROOT / 'graphs/gear_graph.py')!r});"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m);"
        "heavy = [n for n in ('torch', 'sentence_transformers', 'langgraph', 'gear_agent.open_index')"
        " if n in sys.modules]; print(heavy)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_graph_factory_signature_is_one_langgraph_accepts() -> None:
    """One parameter whose annotation langgraph-api resolves to its ServerRuntime (so it
    passes the runtime, which says whether a run or a schema request asks)."""
    module = _load_graph_module("gear_graph_sig")
    assert inspect.iscoroutinefunction(module.graph)
    [param] = inspect.signature(module.graph).parameters.values()
    assert param.annotation == "ServerRuntime"
    langgraph_api = pytest.importorskip("langgraph_api._factory_utils")
    hints = langgraph_api._resolve_hints(module.graph)
    assert langgraph_api._is_runtime_annotation(hints["runtime"])


def test_docs_graph_md_is_up_to_date() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts/draw_graph.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "reason -.-> rewrite" in (ROOT / "docs/graph.md").read_text()
