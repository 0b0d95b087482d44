"""Source filters are path-aware: ``source=docs`` (relative, ``./``, trailing slash, absolute,
through a symlink, a file or a folder) finds the canonical sources ``gear index`` stored, in
``Gear.retrieve(where=...)``, ``gear search --where``, the agent's run (``Gear.ask``, the
LangServe input) and the web page's filter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import run_cli

from gear_agent import Gear
from gear_agent.agent.nodes import make_start
from gear_agent.config import GearSettings
from gear_agent.filters import parse_where
from gear_agent.retrieval.filtering import NothingMatchesError
from gear_agent.sources import path_aware_where


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``proj/docs/one.txt``, ``proj/docs/sub/two.md``, ``proj/other/three.txt`` indexed from
    ``proj``; a symlink ``links/d`` to ``proj/docs``; the working folder ``proj``."""
    proj = tmp_path / "proj"
    (proj / "docs" / "sub").mkdir(parents=True)
    (proj / "other").mkdir()
    (proj / "docs" / "one.txt").write_text("Alpha river floods the docs valley.")
    (proj / "docs" / "sub" / "two.md").write_text("Beta river floods the docs sub valley.")
    (proj / "other" / "three.txt").write_text("Gamma river floods another valley.")
    (tmp_path / "links").mkdir()
    (tmp_path / "links" / "d").symlink_to(proj / "docs", target_is_directory=True)
    monkeypatch.chdir(proj)
    with Gear(tmp_path / "ix", embedding_model="hashing-64", create=True) as gear:
        gear.index(Path("."), extract=False)
    return proj


def sources(gear: Gear, where: object) -> list[str]:
    hits = gear.retrieve("river floods valley", k=10, retriever="bm25", where=where)
    return sorted(Path(h.source).relative_to(Path.cwd().resolve()).as_posix() for h in hits)


DOCS = ["docs/one.txt", "docs/sub/two.md"]


@pytest.mark.parametrize("named", ["docs", "docs/", "./docs", ".//docs/", "ABS", "LINK", "../links/d/"])
def test_a_folder_named_any_way_finds_every_file_under_it(project: Path, named: str) -> None:
    named = {"ABS": str(project / "docs"), "LINK": str(project.parent / "links" / "d")}.get(named, named)
    with Gear(project.parent / "ix", embedding_model="hashing-64") as gear:
        assert sources(gear, {"source": named}) == DOCS
        assert sources(gear, [f"source={named}"]) == DOCS
        assert sources(gear, {"source": {"$ne": named}}) == ["other/three.txt"]


def test_a_file_named_any_way_finds_that_file_only(project: Path) -> None:
    with Gear(project.parent / "ix", embedding_model="hashing-64") as gear:
        for named in ("docs/sub/two.md", "./docs//sub/../sub/two.md", str(project / "docs/sub/two.md"),
                      str(project.parent / "links/d/sub/two.md")):
            assert sources(gear, {"source": named}) == ["docs/sub/two.md"], named
        assert sources(gear, {"source": {"$in": ["docs/one.txt", "other"]}}) == ["docs/one.txt", "other/three.txt"]
        assert sources(gear, {"source": {"$nin": ["docs/one.txt", "other"]}}) == ["docs/sub/two.md"]


def test_a_name_that_is_no_path_stays_as_given(project: Path) -> None:
    assert str(path_aware_where(parse_where(["source=wiki"]))) == 'source="wiki"'
    assert str(path_aware_where(parse_where(["title=docs"]))) == 'title="docs"'
    with Gear(project.parent / "ix", embedding_model="hashing-64") as gear, pytest.raises(NothingMatchesError):
        gear.retrieve("river", k=3, retriever="bm25", where={"source": "wiki"})
    with Gear(project.parent / "ix", embedding_model="hashing-64") as gear, pytest.raises(NothingMatchesError):
        gear.retrieve("river", k=3, retriever="bm25", where={"source": "docs2"})  # no prefix of a name


def test_gear_search_where_from_another_folder(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project.parent)
    result = run_cli("search", "river floods valley", "--retriever", "bm25", "--json", "--index",
                     str(project.parent / "ix"), "--where", "source=proj/docs/",
                     env={"GEAR_EMBEDDING_MODEL": "hashing-64"})
    assert result.exit_code == 0, result.output
    found = json.loads(result.output)
    assert sorted(Path(p["source"]).name for p in found["passages"]) == ["one.txt", "two.md"]


def test_the_agent_run_searches_with_canonical_sources(project: Path) -> None:
    """``Gear.ask``, the web page's chat and the LangServe input go through the start node:
    it writes the path-aware filter into the run's state, which every later search reads."""
    with Gear(project.parent / "ix", embedding_model="hashing-64") as gear:
        start = make_start(gear.store, GearSettings())
        update = start({"question": "Where does the river flood?", "where": ["source=./docs"]})
        where = parse_where(update["where"])
        assert where is not None
        assert gear.store.passages.count(where) == 2
        assert str(project / "docs") in where.conditions[0].values()
        no_filter = start({"question": "Where does the river flood?"})
        assert "where" not in no_filter


def test_the_web_page_filter_is_path_aware(project: Path) -> None:
    pytest.importorskip("langserve", reason="the serve extra is not installed")
    from fastapi.testclient import TestClient

    from gear_agent.serve.app import create_app

    with Gear(project.parent / "ix", embedding_model="hashing-64") as gear:
        app = create_app(None, gear.settings, index=gear.open_index)
        client = TestClient(app, base_url="http://127.0.0.1")
        answer = client.post("/ui/api/ask/stream", json={
            "question": "Where does the river flood?", "retriever": "bm25", "k": 5, "where": ["source=docs"]})
        assert answer.status_code == 200, answer.text
        assert "one.txt" in answer.text and "two.md" in answer.text and "three.txt" not in answer.text
