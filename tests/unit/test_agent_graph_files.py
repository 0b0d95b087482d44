"""The deployment files: langgraph.json, graphs/gear_graph.py, and the generated docs/graph.md."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_langgraph_json_points_at_the_graph_module() -> None:
    config = json.loads((ROOT / "langgraph.json").read_text())
    path, attribute = config["graphs"]["gear"].split(":")
    assert (ROOT / path).is_file()
    assert attribute == "graph"


def test_graph_module_compiles_without_a_checkpointer(monkeypatch: pytest.MonkeyPatch) -> None:
    import gear_agent.agent.graph as graph_module

    seen = {}

    def fake_build_agent(settings=None, **kwargs):
        seen["settings"], seen["kwargs"] = settings, kwargs
        return "compiled"

    monkeypatch.setattr(graph_module, "build_agent", fake_build_agent)
    monkeypatch.setenv("GEAR_MAX_ITERATIONS", "2")
    spec = importlib.util.spec_from_file_location("gear_graph_test", ROOT / "graphs/gear_graph.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.graph == "compiled"
    assert seen["kwargs"] == {}  # no checkpointer: the LangGraph server brings its own
    assert seen["settings"].max_iterations == 2  # settings read from the environment


def test_docs_graph_md_is_up_to_date() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts/draw_graph.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "reason -.-> rewrite" in (ROOT / "docs/graph.md").read_text()
