"""`gear ask` on the demo corpus: a real ChatOpenAI against a scripted endpoint on loopback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.demo_chat import ANSWER, QUESTION, QUOTE, UNSHOWN, demo_endpoint_reply
from support.fault_server import FaultServer, running_fault_server
from typer.testing import CliRunner

from gear_agent.cli import app

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo"


@pytest.fixture
def demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, FaultServer]]:
    for name in ("OPENAI_API_KEY", "GEAR_LLM_MODEL", "GEAR_LLM_CACHE_DIR", "GEAR_INDEX_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GEAR_EMBEDDING_MODEL", "hashing-384")
    index = tmp_path / "index"
    result = CliRunner().invoke(app, ["index", str(DEMO / "corpus.json"), "--openie",
                                      str(DEMO / "openie.json"), "--index", str(index)])
    assert result.exit_code == 0, result.output
    with running_fault_server(demo_endpoint_reply) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        yield index, server


def test_ask_prints_the_answer_its_citations_and_their_chains(demo) -> None:
    index, _ = demo
    result = CliRunner().invoke(app, ["ask", QUESTION, "--index", str(index)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"{ANSWER} [1]"
    assert lines[2].startswith("[1] corpus.json — Oskar Brenner  (p-")  # where, then the title
    assert lines[3] == f'    "{QUOTE}"'
    assert lines[4].startswith("    ↳ (")  # the chain of triples that reached the passage
    assert "stopped: answerable" in result.output and "1 item(s) dropped" in result.output


def test_ask_json_for_scripts(demo) -> None:
    index, server = demo
    result = CliRunner().invoke(app, ["ask", QUESTION, "--index", str(index), "--json",
                                      "--model", "demo-model", "--top-k", "4"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["answer"] == ANSWER
    [citation] = report["citations"]
    assert (citation["number"], citation["title"], citation["quote"]) == (1, "Oskar Brenner", QUOTE)
    assert citation["chain"] and QUOTE in citation["text"]
    assert len(report["passages"]) == 4
    assert {"node": "answer", "citation": {"passage": UNSHOWN}} .items() <= report["dropped"][-1].items()
    assert {r.body["model"] for r in server.completions} == {"demo-model"}


def test_ask_errors_are_one_line(demo, tmp_path: Path) -> None:
    index, _ = demo
    empty = CliRunner().invoke(app, ["ask", "   ", "--index", str(index)])
    assert empty.exit_code == 2 and "the question is empty" in empty.output
    missing = CliRunner().invoke(app, ["ask", QUESTION, "--index", str(tmp_path / "nowhere")])
    assert missing.exit_code == 2 and "error:" in missing.output
    assert not (tmp_path / "nowhere").exists()  # asking never creates an index


def test_ask_streams_the_answer_from_the_model_and_can_wait_instead(demo) -> None:
    index, server = demo
    streamed = CliRunner().invoke(app, ["ask", QUESTION, "--index", str(index)])
    asked = [r.body for r in server.completions if r.body.get("stream")]
    assert asked, "the model was not asked to stream"
    waited = CliRunner().invoke(app, ["ask", QUESTION, "--index", str(index), "--no-stream"])
    assert waited.exit_code == streamed.exit_code == 0
    assert waited.stdout.splitlines()[0] == streamed.stdout.splitlines()[0] == f"{ANSWER} [1]"
    assert len([r for r in server.completions if r.body.get("stream")]) == len(asked)  # none more
