"""`gear sirerag build|info` and `gear search --retriever sirerag` on the demo corpus, with the
model-free stand-in embedder."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from gear_agent.cli import app

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo"
ENV = {"COLUMNS": "200", "GEAR_EMBEDDING_MODEL": "hashing-64"}


def gear(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env=ENV)
    return result.exit_code, result.output


@pytest.fixture
def index(tmp_path: Path) -> str:
    folder = str(tmp_path / "index")
    code, output = gear("index", str(DEMO / "corpus.json"), "--openie", str(DEMO / "openie.json"), "--index", folder)
    assert code == 0, output
    return folder


def test_build_info_and_search(index: str) -> None:
    code, output = gear("sirerag", "build", "--index", index)
    assert code == 0, output
    assert "relatedness │ aggregate │     0 │    14" in output and "propositions 34" in output
    code, output = gear("sirerag", "info", "--index", index)
    assert code == 0 and "│    14" in output and "propositions" not in output
    code, output = gear("search", "Who founded the Kestrel Observatory?", "--retriever", "sirerag",
                        "--index", index, "--k", "3")
    assert code == 0 and "Kestrel Observatory" in output, output


def test_dry_run_estimates_without_a_model_and_bad_modes_are_one_line(index: str) -> None:
    code, output = gear("sirerag", "build", "--mode", "full", "--dry-run", "--index", index)
    assert code == 0 and "propositions: 12 calls" in output and "total:" in output, output
    code, output = gear("sirerag", "build", "--mode", "fancy", "--index", index)
    assert code == 2 and "unknown SiReRAG mode 'fancy'; known: ablation, full" in output


def test_full_build_without_an_llm_fails_before_any_work(index: str, monkeypatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    code, output = gear("sirerag", "build", "--mode", "full", "--index", index)
    assert code == 2 and "error:" in output, output


def test_gear_index_brings_the_pool_up_to_date(index: str, tmp_path: Path) -> None:
    import json

    code, output = gear("sirerag", "build", "--index", index)
    assert code == 0, output
    late = {"title": "Aarhus Comet Society", "text": "Marela Voss founded the Aarhus Comet Society in 1990."}
    (tmp_path / "late.json").write_text(json.dumps([late]))
    (tmp_path / "late-openie.json").write_text(json.dumps({"docs": [{
        **late, "extracted_entities": ["Marela Voss", "Aarhus Comet Society"],
        "extracted_triples": [["Marela Voss", "founded", "Aarhus Comet Society"]]}]}))
    code, output = gear("index", str(tmp_path / "late.json"), "--openie", str(tmp_path / "late-openie.json"),
                        "--index", index)
    assert code == 0, output
    from gear_agent.embedding.hashing import HashingEmbedder
    from gear_agent.store.embedded.store import EmbeddedStore

    store = EmbeddedStore.open(Path(index), HashingEmbedder(64))
    nodes = store.nodes  # the write path recomputed the aggregates: the new passage is in one
    voss = next(n for n in nodes.iterate() if n.entity == "marela voss")
    assert "Marela Voss founded Aarhus Comet Society" in voss.text
    assert json.loads(nodes.get_meta("stamp"))["generation"] >= 1
