"""Sync by source: indexing a source again keeps its unchanged passages untouched, replaces
the edited ones and removes the rest with their triples; ``--prune`` removes sources gone
from the folder; the report and ``Gear.index`` say added, replaced, removed, unchanged."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
from support.cli import run_cli
from support.fakes import CountingEmbedder, ScriptedChatModel

from gear_agent import Gear
from gear_agent.ingest.items import read_items

OLD = "Alice founded Acme in 1990. Acme makes rockets."
NEW = "Alice founded Acme in 1992. Acme makes boats."


def one_fact(prompt: str) -> str:
    """An extraction reply with one grounded triple: the passage's ``Part N`` marker."""
    found = re.findall(r"Part (\d+)", prompt.split("Passage", 1)[-1]) or re.findall(r"Part (\d+)", prompt)
    triples = [[f"Part {n}", "belongs to", "the report"] for n in dict.fromkeys(found)]
    return json.dumps({"entities": [t[0] for t in triples], "triples": triples})


def row(output: str, label: str) -> str:
    """The value of a row of the CLI's report table."""
    found = re.search(re.escape(label) + r"[\s│|]+([^\s│|]+)", output)
    assert found, output
    return found.group(1)


def acme(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text(OLD)
    return tmp_path / "docs"


def test_the_acme_case_answers_only_the_new_year(tmp_path: Path) -> None:
    docs = acme(tmp_path)
    gear = Gear(tmp_path / "ix", embedding_model="hashing-64", create=True)
    first = gear.index(docs, extract=False)
    assert (first.passages_new, first.passages_replaced, first.passages_removed) == (1, 0, 0)
    (docs / "a.txt").write_text(NEW)
    second = gear.index(docs, extract=False)
    assert (second.passages_new, second.passages_replaced, second.passages_removed,
            second.passages_unchanged) == (0, 1, 0, 0)
    hits = gear.retrieve("Acme founded", k=5, retriever="bm25")
    assert [h.text for h in hits] == [NEW]
    third = gear.index(docs, extract=False)
    assert (third.passages_added, third.passages_unchanged) == (0, 1)


def test_the_acme_case_through_the_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    acme(tmp_path)
    env = {"GEAR_EMBEDDING_MODEL": "hashing-64"}
    assert run_cli("index", "docs", "--index", "ix", env=env).exit_code == 0
    (tmp_path / "docs" / "a.txt").write_text(NEW)
    dry = run_cli("index", "docs", "--index", "ix", "--dry-run", env=env)
    assert "0 new, 1 replaced, 0 removed, 0 unchanged" in dry.output, dry.output
    result = run_cli("index", "./docs/", "--index", "ix", env=env)
    assert result.exit_code == 0, result.output
    assert row(result.output, "passages replaced (edited: embedded)") == "1"
    search = run_cli("search", "Acme founded", "--retriever", "bm25", "--index", "ix", env=env)
    assert "1992" in search.output and "1990" not in search.output, search.output


def test_triples_go_with_their_passage_and_unchanged_ones_stay(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "r.txt").write_text("Part 1 opens the report.\n\nPart 2 closes the report.")
    chat = ScriptedChatModel(respond=one_fact)
    gear = Gear(tmp_path / "ix", embedding_model="hashing-64", chat_model=chat, create=True)
    gear.index(tmp_path / "docs")
    assert (gear.store.passages.count(), gear.store.triples.count()) == (1, 2)  # one chunk
    (tmp_path / "docs" / "r.txt").write_text("Part 1 opens the report.\n\nPart 2 closes the report today.")
    report = gear.index(tmp_path / "docs")
    assert (report.passages_replaced, report.triples_removed, report.triples_added) == (1, 2, 2)
    again = gear.index(tmp_path / "docs")
    assert (again.passages_unchanged, again.triples_unchanged, again.triples_added) == (1, 2, 0)


def test_prune_removes_files_gone_from_the_folder_and_dry_run_lists_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "docs" / "sub").mkdir(parents=True)
    (tmp_path / "docs" / "keep.txt").write_text("Kept text.")
    (tmp_path / "docs" / "sub" / "gone.md").write_text("Text that will go.")
    env = {"GEAR_EMBEDDING_MODEL": "hashing-64"}
    assert run_cli("index", "docs", "--index", "ix", env=env).exit_code == 0
    (tmp_path / "docs" / "sub" / "gone.md").unlink()
    without = run_cli("index", "docs", "--index", "ix", env=env)
    assert row(without.output, "passages removed") == "0", "no --prune: nothing removed"
    dry = run_cli("index", "docs", "--prune", "--dry-run", "--index", "ix", env=env)
    assert "would prune " in dry.output and "sub/gone.md  (1 passages)" in dry.output, dry.output
    result = run_cli("index", "docs", "--prune", "--index", "ix", env=env)
    assert result.exit_code == 0 and row(result.output, "passages removed") == "1"
    gear = Gear(tmp_path / "ix", embedding_model="hashing-64", create=False)
    assert [p.text for p in gear.store.passages.iterate()] == ["Kept text."]


def test_prune_needs_a_folder(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x")
    result = run_cli("index", str(tmp_path / "a.txt"), "--prune", "--index", str(tmp_path / "ix"),
                     env={"GEAR_EMBEDDING_MODEL": "hashing-64"})
    assert result.exit_code == 2 and "--prune needs a folder" in result.output


def test_plain_strings_are_only_added(tmp_path: Path) -> None:
    gear = Gear(tmp_path / "ix", embedding_model="hashing-64", create=True)
    gear.index(["First fact."], extract=False)
    report = gear.index(["Second fact."], extract=False)
    assert report.passages_removed == 0 and gear.store.passages.count() == 2


def test_a_named_source_owns_its_passages_unless_sync_is_off(tmp_path: Path) -> None:
    gear = Gear(tmp_path / "ix", embedding_model="hashing-64", create=True)
    gear.index([{"text": "Old wiki text.", "source": "wiki"}], extract=False)
    gear.index([{"text": "More wiki text.", "source": "wiki"}], extract=False, sync=False)
    assert gear.store.passages.count() == 2
    report = gear.index([{"text": "New wiki text.", "source": "wiki"}], extract=False)
    assert (report.passages_replaced, report.passages_removed) == (1, 1)
    assert [p.text for p in gear.store.passages.iterate()] == ["New wiki text."]


def fifty_pages(rng: random.Random) -> list[str]:
    """About 50 pages of plain text: 250 paragraphs of 60 to 140 words, each naming its part."""
    words = "river town bridge market winter harvest council school road mill".split()
    return [f"Part {n} of the report. " + " ".join(rng.choice(words) for _ in range(rng.randint(60, 140))) + "."
            for n in range(250)]


def test_an_edit_of_one_paragraph_re_embeds_and_re_extracts_only_its_chunks(tmp_path: Path) -> None:
    paragraphs = fifty_pages(random.Random(5))
    doc = tmp_path / "docs" / "report.txt"
    doc.parent.mkdir()
    doc.write_text("\n\n".join(paragraphs))
    embedder = CountingEmbedder(64)
    chat = ScriptedChatModel(respond=one_fact)
    gear = Gear(tmp_path / "ix", embedding_model=embedder, chat_model=chat, create=True)
    first = gear.index(doc)
    assert first.passages_added > 100 and first.extraction.passages_failed == 0
    before = {p.id for p in read_items(doc).passages}
    paragraphs[120] = paragraphs[120].replace("Part 120 of the report.", "Part 120 of the report, revised.")
    doc.write_text("\n\n".join(paragraphs))
    changed = {p.id for p in read_items(doc).passages} - before
    embedder.calls.clear()
    chat.calls.clear()
    second = gear.index(doc)
    assert len(changed) == 1, "the edited paragraph is one chunk of its own"
    assert (second.passages_replaced, second.passages_new, second.passages_removed) == (1, 0, 0)
    assert second.passages_unchanged == first.passages_added - 1
    assert len(chat.calls) == 1 and "revised" in chat.calls[0]  # re-extracted: that chunk only
    assert embedder.texts_embedded == 1 + second.triples_added  # its passage and its triples
    assert (second.triples_removed, second.triples_unchanged) == (1, first.triples_added - 1)


def test_re_uploading_a_document_through_the_web_page_replaces_it(tmp_path: Path) -> None:
    from gear_agent.serve._web_documents import Documents

    gear = Gear(tmp_path / "ix", embedding_model="hashing-64", create=True)
    documents = Documents(gear.store, gear.settings, lambda: None)
    documents.add(documents.read("acme.txt", OLD), extract=False, progress=lambda *a: None)
    report = documents.add(documents.read("acme.txt", NEW), extract=False, progress=lambda *a: None)
    assert report["passages_replaced"] == 1
    assert [(p.text, p.source) for p in gear.store.passages.iterate()] == [(NEW, "acme.txt")]
