"""The README's main job, end to end with the real embedding model, through the `gear` CLI."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gear_agent.cli import app

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def demo_index(tmp_path_factory):
    index = tmp_path_factory.mktemp("demo") / "index"
    result = CliRunner().invoke(
        app, ["index", str(DEMO / "corpus.json"), "--openie", str(DEMO / "openie.json"), "--index", str(index)]
    )
    assert result.exit_code == 0, result.output
    return index, result.output


def test_index_reports_counts(demo_index):
    _, output = demo_index
    assert "passages added (embedded)  │ 12" in output.replace("      ", " ") or "12" in output
    assert "34" in output  # triples


def test_second_index_run_is_a_no_op(demo_index):
    index, _ = demo_index
    result = CliRunner().invoke(
        app, ["index", str(DEMO / "corpus.json"), "--openie", str(DEMO / "openie.json"), "--index", str(index)]
    )
    assert result.exit_code == 0, result.output
    lines = {line.split("│")[1].strip(): line.split("│")[2].strip()
             for line in result.output.splitlines() if line.count("│") >= 3}
    assert lines["passages added (embedded)"] == "0"
    assert lines["triples added (embedded)"] == "0"
    assert lines["passages already stored"] == "12"


def test_search_prints_passages_with_chains(demo_index):
    index, _ = demo_index
    result = CliRunner().invoke(
        app, ["search", "Who founded the observatory where Marela Voss worked?", "--index", str(index), "--k", "3"]
    )
    assert result.exit_code == 0, result.output
    assert "Kestrel Observatory" in result.output and "↳" in result.output


def test_eval_writes_rows(demo_index, tmp_path):
    index, _ = demo_index
    out = tmp_path / "rows.json"
    result = CliRunner().invoke(app, [
        "eval", "--questions", str(DEMO / "questions.json"), "--corpus", str(DEMO / "corpus.json"),
        "--openie", str(DEMO / "openie.json"), "--index", str(index),
        "--retrievers", "bm25,hybrid,hybrid+naive_ge", "--json", str(out),
    ])
    assert result.exit_code == 0, result.output
    rows = json.loads(out.read_text())["rows"]
    assert [r["retriever"] for r in rows] == ["bm25", "hybrid", "hybrid+naive_ge"]
    for row in rows:
        assert 0 <= row["recall@5"] <= row["recall@10"] <= row["recall@15"] <= 100
        assert row["ms_per_query"] > 0
    assert rows[2]["recall@15"] >= 80  # 12 passages: two-hop gold is reachable


def test_bad_inputs_get_one_line_errors(tmp_path, demo_index):
    index, _ = demo_index
    runner = CliRunner()
    missing = runner.invoke(app, ["index", str(tmp_path / "nope.json"), "--index", str(tmp_path / "ix")])
    assert missing.exit_code == 2 and "corpus not found" in missing.output
    empty = runner.invoke(app, ["search", "   ", "--index", str(index)])
    assert empty.exit_code == 2 and "empty" in empty.output
    no_index = runner.invoke(app, ["info", "--index", str(tmp_path / "none")])
    assert no_index.exit_code == 2 and "gear index" in no_index.output
    bad_retriever = runner.invoke(app, ["search", "x", "--index", str(index), "--retriever", "magic"])
    assert bad_retriever.exit_code != 0 and "unknown retriever" in bad_retriever.output
    other_model = runner.invoke(app, ["search", "x", "--index", str(index)],
                                env={"GEAR_EMBEDDING_MODEL": "all-mpnet-base-v2"})
    assert other_model.exit_code == 2


def test_llm_rows_without_an_llm_fail_at_once_with_one_line(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    index = tmp_path / "never-built"
    result = CliRunner().invoke(app, [
        "eval", "--questions", str(DEMO / "questions.json"), "--corpus", str(DEMO / "corpus.json"),
        "--retrievers", "syncge,gear", "--limit", "10", "--index", str(index),
    ])
    assert result.exit_code == 2
    assert "OPENAI_API_KEY" in result.output and "OPENAI_BASE_URL" in result.output
    assert "Traceback" not in result.output
    assert not index.exists()  # failed before any indexing work
