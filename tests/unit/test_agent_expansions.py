"""The agent runs with each expansion node; `ppr` is the default."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.fakes import client, scripted
from support.tiny_corpus import QUESTION, make_runtime, make_settings

from gear_agent.agent.graph import build_graph
from gear_agent.config import GearSettings
from gear_agent.parts import index_parts

READ = json.dumps({"triples": [["Rainbow Bridge", "located in", "Folsom"]]})
YES = json.dumps({"answerable": True, "answer": "Sacramento County", "reason": None})


def test_default_expansion_is_ppr():
    assert GearSettings().expansion == "ppr"


@pytest.mark.parametrize("expansion", ["beam", "ppr", "both"])
def test_each_expansion_completes_a_run(tmp_path: Path, expansion: str) -> None:
    runtime = make_runtime(tmp_path / "index", make_settings(expansion=expansion))
    agent = build_graph(index_parts(runtime), client(scripted([READ, YES, "Answer: Sacramento County"])),
                        runtime.settings).compile()
    result = agent.invoke({"question": QUESTION})
    assert result["stop_reason"] == "answerable"
    assert result["passages"] and result["iterations"] == 1
    assert result["gist_memory"] == [["Rainbow Bridge", "located in", "Folsom"]]
