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
        app, ["index", str(DEMO / "corpus.json"), "--openie", str(DEMO / "openie.json"), "--index", str(index)],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    return index, result.output


def test_index_reports_counts(demo_index):
    _, output = demo_index
    assert "passages new (embedded)  │ 12" in output.replace("      ", " ") or "12" in output
    assert "34" in output  # triples


def test_index_draws_its_own_bars_and_no_third_party_ones(demo_index):
    _, output = demo_index
    assert "Loading weights" not in output  # transformers' bar while the model loads
    bars = [line for line in output.splitlines() if line.startswith("ingest ")]
    assert len(bars) == 2 and "12/12" in bars[0] and "34/34" in bars[1], output
    assert all("/s" in bar and "ETA" in bar for bar in bars)


def test_search_names_its_scores(demo_index):
    index, _ = demo_index
    result = CliRunner().invoke(
        app, ["search", "Who founded the Kestrel Observatory?", "--index", str(index), "--k", "2",
              "--retriever", "dense"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "cosine 0." in result.output and "Loading weights" not in result.output


def test_second_index_run_is_a_no_op(demo_index):
    index, _ = demo_index
    result = CliRunner().invoke(
        app, ["index", str(DEMO / "corpus.json"), "--openie", str(DEMO / "openie.json"), "--index", str(index)]
    )
    assert result.exit_code == 0, result.output
    lines = {line.split("│")[1].strip(): line.split("│")[2].strip()
             for line in result.output.splitlines() if line.count("│") >= 3}
    assert lines["passages new (embedded)"] == lines["passages replaced (edited: embedded)"] == "0"
    assert lines["triples added (embedded)"] == "0"
    assert lines["passages unchanged (kept)"] == "12"


def test_search_prints_passages_with_chains(demo_index):
    index, _ = demo_index
    result = CliRunner().invoke(
        app, ["search", "Who founded the observatory where Marela Voss worked?", "--index", str(index), "--k", "3"]
    )
    assert result.exit_code == 0, result.output
    assert "Kestrel Observatory" in result.output and "⇢ seed (" in result.output  # ppr: its seed triples


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


def one_line_error(result) -> str:
    """The CLI's answer to bad input: exit status 2 and one line starting 'error:'."""
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.output
    return lines[0]


@pytest.mark.parametrize(
    ("question", "expected"),
    [("", "the question is empty"), ("  \t\n ", "the question is empty"),
     ("why? " * 1000, "the question is 4999 characters long; the limit is 2000")],
)
def test_bad_questions_at_the_cli(demo_index, question, expected):
    index, _ = demo_index
    result = CliRunner().invoke(app, ["search", question, "--index", str(index)])
    assert expected in one_line_error(result)


def test_bad_files_at_the_cli_leave_no_index(tmp_path):
    runner = CliRunner()
    index = tmp_path / "ix"
    binary = tmp_path / "latin1.txt"
    binary.write_bytes("Caf\xe9 in Z\xfcrich".encode("latin-1"))
    wrong = tmp_path / "wrong.json"
    wrong.write_text('{"title": "not a list"}')
    cases = [
        (["index", str(binary)], "latin1.txt is not UTF-8 text"),
        (["index", str(wrong)], "expected a JSON list of {'title', 'text'} objects, got dict"),
        (["index", str(tmp_path / "missing")], "corpus not found"),
        (["index", str(DEMO / "corpus.json"), "--openie", str(wrong)],
         "expected HippoRAG OpenIE output {'docs': [...]}"),
        (["index", str(DEMO / "corpus.json"), "--openie", str(tmp_path / "none.json")], "none.json"),
    ]
    for args, expected in cases:
        result = runner.invoke(app, [*args, "--index", str(index)])
        assert expected in one_line_error(result), args
        assert not index.exists(), f"{args} started indexing before refusing its input"


def test_extract_without_an_llm_refuses_before_indexing(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    index = tmp_path / "ix"
    result = CliRunner().invoke(app, ["index", str(DEMO / "corpus.json"), "--extract", "--index", str(index)])
    assert "OPENAI_BASE_URL" in one_line_error(result)
    assert not index.exists()


def test_wrong_questions_file_at_the_cli(demo_index, tmp_path):
    index, _ = demo_index
    wrong = tmp_path / "questions.json"
    wrong.write_text('{"question": "a dict, not a list"}')
    result = CliRunner().invoke(app, [
        "eval", "--questions", str(wrong), "--corpus", str(DEMO / "corpus.json"), "--index", str(index)])
    assert "expected a non-empty JSON list of questions" in one_line_error(result)


def test_an_index_built_with_another_model_is_named(demo_index, tmp_path):
    import shutil

    index, _ = demo_index
    copy = tmp_path / "other"
    shutil.copytree(index, copy)
    import sqlite3

    db = sqlite3.connect(copy / "index.sqlite")  # the manifest is the meta table of the SQLite index
    db.execute("UPDATE meta SET value = 'BAAI/bge-small-en-v1.5' WHERE key = 'embedding_model'")
    db.commit()
    db.close()
    for args in (["search", "x"], ["serve", "--port", "1"]):
        line = one_line_error(CliRunner().invoke(app, [*args, "--index", str(copy)]))
        assert "built with embedding model 'BAAI/bge-small-en-v1.5'" in line, args
        assert "GEAR_EMBEDDING_MODEL=BAAI/bge-small-en-v1.5" in line


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
