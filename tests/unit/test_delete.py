"""Exact deletes: ``gear delete --source`` finds a file however it is named (one canonical
path) and a folder's files, ``--dry-run`` lists what would go, deleting nothing says so
(exit 1, with or without ``--dry-run``), unknown ids are reported; ``Gear.delete`` warns the
same way and returns the passages affected."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from support.cli import run_cli

from gear_agent.errors import GearWarning
from gear_agent.ingest.corpus import canonical_source


def run(*args: str):
    return run_cli(*args, env={"GEAR_EMBEDDING_MODEL": "hashing-64"})


@pytest.fixture
def two_corpora(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``a/corpus.json`` (2 passages) and ``b/corpus.json`` (3) indexed into one index,
    from the folder that holds them (as a user runs ``gear index``)."""
    monkeypatch.chdir(tmp_path)
    for folder, count in (("a", 2), ("b", 3)):
        (tmp_path / folder).mkdir()
        records = [{"title": f"{folder}{i}", "text": f"Passage {i} of corpus {folder}."} for i in range(count)]
        (tmp_path / folder / "corpus.json").write_text(json.dumps(records))
        result = run("index", f"{folder}/corpus.json", "--index", "ix")
        assert result.exit_code == 0, result.output
    return tmp_path / "ix"


def _count(index: Path) -> int:
    from gear_agent.store.embedded.manifest import read_manifest

    return read_manifest(index)["passages"]


def test_gear_index_records_the_corpus_path_canonical(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "corpus.json").write_text("[]")
    (tmp_path / "link.json").symlink_to(tmp_path / "a" / "corpus.json")
    real = (tmp_path / "a" / "corpus.json").resolve().as_posix()
    assert canonical_source("./a//corpus.json") == real
    assert canonical_source(Path.cwd() / "a" / "corpus.json") == real
    assert canonical_source("link.json") == real


def test_delete_source_deletes_that_file_only(two_corpora: Path) -> None:
    """Regression: the base name matched, so ``--source corpus.json`` deleted a/ and b/."""
    result = run("delete", "--source", "a/corpus.json", "--index", "ix")
    assert result.exit_code == 0, result.output
    assert "deleted 2 passages" in result.output
    assert _count(two_corpora) == 3


def test_a_path_is_matched_as_gear_index_normalised_it(two_corpora: Path) -> None:
    result = run("delete", "--source", "./b//corpus.json", "--index", "ix")
    assert result.exit_code == 0 and "deleted 3 passages" in result.output
    assert _count(two_corpora) == 2


def test_the_base_name_alone_deletes_nothing_and_says_what_is_stored(two_corpora: Path) -> None:
    result = run("delete", "--source", "corpus.json", "--index", "ix")
    assert result.exit_code == 1
    assert "no passage has source 'corpus.json'" in result.output
    assert "a/corpus.json, " in result.output and "b/corpus.json" in result.output
    assert "nothing deleted" in result.output
    assert _count(two_corpora) == 5


def test_dry_run_lists_what_would_go_and_deletes_nothing(two_corpora: Path) -> None:
    result = run("delete", "--source", "b/corpus.json", "--dry-run", "--index", "ix")
    assert result.exit_code == 0, result.output
    assert result.output.count("would delete") == 3 and "b/corpus.json" in result.output
    assert "dry run: 3 passages" in result.output and "nothing was deleted" in result.output
    assert _count(two_corpora) == 5
    nothing = run("delete", "--source", "c/corpus.json", "--dry-run", "--index", "ix")
    assert nothing.exit_code == 1, "a dry run that matches nothing exits as the real delete does"
    assert "dry run: 0 passages" in nothing.output


@pytest.mark.parametrize("form", ["absolute", "dot", "symlink", "elsewhere"])
def test_a_file_is_found_however_it_is_named(two_corpora: Path, form: str, monkeypatch) -> None:
    root = two_corpora.parent
    (root / "link-b.json").symlink_to(root / "b" / "corpus.json")
    name = {"absolute": str(root / "b" / "corpus.json"), "dot": "./b/../b//corpus.json",
            "symlink": "link-b.json", "elsewhere": str(root / "b" / "corpus.json")}[form]
    if form == "elsewhere":
        (root / "other").mkdir()
        monkeypatch.chdir(root / "other")
        index = str(two_corpora)
    else:
        index = "ix"
    result = run("delete", "--source", name, "--dry-run", "--index", index)
    assert result.exit_code == 0, result.output
    assert "dry run: 3 passages" in result.output


@pytest.mark.parametrize("form", ["docs", "docs/", "./docs", "absolute"])
def test_a_folder_source_means_every_file_under_it(tmp_path: Path, monkeypatch, form: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "docs" / "sub").mkdir(parents=True)
    (tmp_path / "docs" / "one.txt").write_text("Oskar founded the observatory.")
    (tmp_path / "docs" / "sub" / "two.md").write_text("# Two\nIlse married Oskar.")
    (tmp_path / "docs2").mkdir()
    (tmp_path / "docs2" / "three.txt").write_text("Not under docs.")
    assert run("index", "docs", "--index", "ix").exit_code == 0
    assert run("index", "docs2", "--index", "ix").exit_code == 0
    name = str(tmp_path / "docs") if form == "absolute" else form
    result = run("delete", "--source", name, "--index", "ix")
    assert result.exit_code == 0, result.output
    assert "deleted 2 passages" in result.output and _count(tmp_path / "ix") == 1


def test_gear_delete_takes_a_folder_too(tmp_path: Path, monkeypatch) -> None:
    from gear_agent import Gear

    monkeypatch.chdir(tmp_path)
    (tmp_path / "docs" / "sub").mkdir(parents=True)
    (tmp_path / "docs" / "one.txt").write_text("Oskar founded the observatory.")
    (tmp_path / "docs" / "sub" / "two.md").write_text("Ilse married Oskar.")
    gear = Gear(tmp_path / "ix", embedding_model="hashing-64")
    gear.index(Path("docs"), extract=False)
    assert len(gear.delete(source="docs", dry_run=True)) == 2
    assert {Path(s).name for s in gear.delete(source="docs/").sources} == {"one.txt", "two.md"}
    assert gear.store.passages.count() == 0


def test_sources_stored_relative_by_older_versions_are_matched(tmp_path: Path, monkeypatch) -> None:
    """Indexes built before sources were canonical stored paths relative to the working
    folder: a canonical path they are the tail of finds them (both forms match)."""
    from gear_agent import Gear

    monkeypatch.chdir(tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("Alice founded Acme in 1990.")
    gear = Gear(tmp_path / "ix", embedding_model="hashing-64")
    gear.index([{"title": "a", "text": "Alice founded Acme in 1990.", "source": "docs/a.txt"},
                {"title": "w", "text": "A caller's own source.", "source": "wiki"}], extract=False)
    assert len(gear.delete(source=str(tmp_path / "docs"), dry_run=True)) == 1
    (tmp_path / "docs" / "a.txt").write_text("Alice founded Acme in 1992.")
    report = gear.index(Path("docs/a.txt"), extract=False)
    assert (report.passages_replaced, report.passages_removed) == (1, 0)
    assert [p.text for p in gear.store.passages.iterate() if "Acme" in p.text] == ["Alice founded Acme in 1992."]
    assert gear.store.passages.count() == 2


def test_ids_that_are_not_stored_are_reported(two_corpora: Path) -> None:
    from gear_agent.ids import passage_id

    stored = passage_id("a0", "Passage 0 of corpus a.")
    result = run("delete", stored, "p-not-there", "--index", "ix")
    assert result.exit_code == 0
    assert "1 id(s) are not stored: p-not-there" in result.output and "deleted 1 passages" in result.output
    nothing = run("delete", "p-not-there", "--index", "ix")
    assert nothing.exit_code == 1 and "nothing deleted" in nothing.output


def test_gear_delete_warns_and_supports_a_dry_run(tmp_path: Path) -> None:
    from gear_agent import Gear

    gear = Gear(tmp_path / "ix", embedding_model="hashing-64")
    gear.index([{"text": "Oskar founded the observatory.", "source": "a/notes.json"},
                {"text": "Ilse married Oskar.", "source": "b/notes.json"}], extract=False)
    preview = gear.delete(source="a/notes.json", dry_run=True)
    assert preview.dry_run and len(preview) == 1 and preview.passages[0].source == "a/notes.json"
    assert gear.store.passages.count() == 2
    with pytest.warns(GearWarning, match="not stored: p-missing"):
        result = gear.delete(["p-missing"], source="a/notes.json")
    assert result.ids == preview.ids and result.unknown_ids == ["p-missing"]
    with pytest.warns(GearWarning, match="no passage has source 'notes.json'"):
        assert len(gear.delete(source="notes.json")) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a delete that does what was asked says nothing
        assert len(gear.delete(source="b/notes.json")) == 1
    assert gear.store.passages.count() == 0
