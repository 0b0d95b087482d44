"""Documents indexed end to end: `gear index` on a folder of documents, `gear search` and
`Gear.ask` naming the file and the page or section of each passage."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.fakes import ScriptedChatModel
from typer.testing import CliRunner

from gear_agent import Gear
from gear_agent.cli import app

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "documents"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    pytest.importorskip("pdfminer")
    out = tmp_path / "docs"
    out.mkdir()
    for name in ("two-columns.pdf", "guide.md"):
        shutil.copy(FIXTURES / name, out / name)
    return out


def test_gear_search_names_the_file_and_page_or_section(folder: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEAR_EMBEDDING_MODEL", "hashing-384")
    monkeypatch.delenv("GEAR_INDEX_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    index = str(tmp_path / "index")
    indexed = CliRunner().invoke(app, ["index", "docs", "--index", index])
    assert indexed.exit_code == 0, indexed.output
    found = CliRunner().invoke(app, ["search", "storm damaged the dome copper", "--retriever", "bm25",
                                     "--k", "1", "--index", index])
    assert found.exit_code == 0, found.output
    assert "1. The Kestrel Observatory  two-columns.pdf, p. 1, § History · BM25" in found.output
    night = CliRunner().invoke(app, ["search", "night sessions Fridays", "--retriever", "bm25",
                                     "--k", "1", "--json", "--index", index])
    record = json.loads(night.output)["passages"][0]
    assert record["location"] == "guide.md, § Tickets › Night sessions"
    assert record["source"].endswith("/docs/guide.md") and record["metadata"] == {"section": "Tickets › Night sessions"}
    pages = CliRunner().invoke(app, ["search", "dome", "--retriever", "bm25", "--where", "page=2",
                                     "--json", "--index", index])
    assert {p["metadata"]["page"] for p in json.loads(pages.output)["passages"]} == {2}


@pytest.mark.filterwarnings("ignore:no index at")
def test_gear_ask_citations_carry_the_location(folder: Path, tmp_path: Path) -> None:
    def respond(prompt: str) -> str:
        if prompt.startswith("You read retrieved passages"):
            return json.dumps({"triples": []})
        if prompt.startswith("You decide whether a question can be answered"):
            return json.dumps({"answerable": True, "answer": "eight euros", "reason": None})
        if prompt.startswith("You write the next search query"):
            return "ticket price"
        return json.dumps({"answer": "Eight euros.", "citations": [{"passage": 1, "quote": None}]})

    gear = Gear(tmp_path / "index", chat_model=ScriptedChatModel(respond=respond),
                embedding_model="hashing-128")
    gear.index(folder, extract=False)
    answer = gear.ask("How much is a ticket for adults at the gate?")
    assert answer.citations, answer
    cited = answer.citations[0]
    assert cited.location == cited.passage.location
    assert cited.location.startswith(("two-columns.pdf, p. ", "guide.md"))


def test_the_chat_message_names_where_each_cited_passage_is() -> None:
    from gear_agent.agent.citations import render_citations

    text = render_citations("Eight euros", [
        {"passage_id": "p1", "title": "Guide", "quote": None, "location": "guide.md, § Tickets"},
        {"passage_id": "p2", "title": "Notes", "quote": None, "location": ""}])
    assert text.splitlines()[-2:] == ["[1] guide.md, § Tickets — Guide", "[2] Notes"]
