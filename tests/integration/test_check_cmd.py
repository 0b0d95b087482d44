"""`gear check` on a healthy and on a damaged index, and `--repair` (hashing embedder, no model)."""

import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gear_agent.cli import app

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo"


@pytest.fixture
def index(tmp_path, monkeypatch):
    monkeypatch.setenv("GEAR_EMBEDDING_MODEL", "hashing-384")
    path = tmp_path / "index"
    result = CliRunner().invoke(
        app, ["index", str(DEMO / "corpus.json"), "--openie", str(DEMO / "openie.json"), "--index", str(path)]
    )
    assert result.exit_code == 0, result.output
    return path


def _check(index, *extra):
    return CliRunner().invoke(app, ["check", "--index", str(index), *extra])


def test_a_healthy_index_checks_ok(index):
    result = _check(index)
    assert result.exit_code == 0, result.output
    assert "sqlite integrity_check" in result.output and "DAMAGED" not in result.output
    assert result.output.strip().endswith("ok")


def test_flipped_vector_bits_are_found_and_repaired(index):
    vectors = index / "passage.vec"
    data = bytearray(vectors.read_bytes())
    data[100] ^= 0x40
    vectors.write_bytes(bytes(data))
    result = _check(index)
    assert result.exit_code == 1
    assert "passage vectors" in result.output and "DAMAGED" in result.output
    search = CliRunner().invoke(app, ["search", "Kestrel Observatory", "--index", str(index)])
    assert search.exit_code == 2 and "gear check" in search.output  # refused, one line
    repaired = _check(index, "--repair")
    assert repaired.exit_code == 0, repaired.output
    assert "re-embedded passage rows" in repaired.output
    assert CliRunner().invoke(app, ["search", "Kestrel Observatory", "--index", str(index)]).exit_code == 0


def test_an_edited_record_and_a_damaged_bm25_segment(index):
    db = sqlite3.connect(index / "index.sqlite")
    db.execute("UPDATE passages SET text = text || ' (edited)' WHERE row = 3")
    db.execute("UPDATE segments SET rows = zeroblob(length(rows)) WHERE collection = 'passage'")
    db.commit()
    db.close()
    result = _check(index)
    assert result.exit_code == 1
    assert "record checksums" in result.output and "rebuildable" in result.output
    repaired = _check(index, "--repair")
    assert "rebuilt the BM25 postings" in repaired.output
    assert repaired.exit_code == 1  # an edited passage is primary data: reported, not guessed at
    assert "record checksums" in repaired.output.splitlines()[-1]


def test_info_reads_the_manifest_without_a_model(index):
    result = CliRunner().invoke(app, ["info", "--index", str(index)])
    assert result.exit_code == 0, result.output
    assert "hashing-384" in result.output and "34" in result.output


def test_a_damaged_ppr_graph_cache_is_reported_and_rebuilt(index):
    search = CliRunner().invoke(app, ["search", "Kestrel Observatory", "--index", str(index), "--retriever", "ppr"])
    assert search.exit_code == 0, search.output  # builds and saves the graph cache
    assert "PPR graph cache" in _check(index).output
    graph = index / "ppr-graph.npz"
    data = bytearray(graph.read_bytes())
    data[len(data) // 2] ^= 0xFF
    graph.write_bytes(bytes(data))
    result = _check(index)
    assert result.exit_code == 1
    assert "PPR graph cache" in result.output and "rebuildable" in result.output
    repaired = _check(index, "--repair")
    assert repaired.exit_code == 0, repaired.output
    assert "rebuilt the PPR graph cache" in repaired.output
