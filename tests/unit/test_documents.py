"""Documents in: PDF, HTML, DOCX and Markdown read into sections with their page or heading
path, indexed with that metadata, and cited by it (tests/fixtures/documents/, made by its
make_documents.py)."""

from __future__ import annotations

import shutil
import sys
import warnings
from pathlib import Path

import pytest
from fixtures.documents import make_documents as made  # the known texts the fixtures were made from

from gear_agent.errors import GearWarning
from gear_agent.ingest.corpus import CorpusFormatError, read_corpus
from gear_agent.ingest.documents import DocumentReadError, read_document
from gear_agent.ingest.location import cite_location

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "documents"


def _read(name: str):
    path = FIXTURES / name
    return read_document(path.read_bytes(), path.suffix, name)


def _words(text: str) -> list[str]:
    return text.replace("|", " ").replace("-", " ").split()


def _in_order(text: str, parts: list[str]) -> bool:
    """Every part is in ``text`` (spacing aside), each after the one before."""
    flat, at = " ".join(text.split()), 0
    for part in parts:
        found = flat.find(" ".join(part.split()), at)
        if found < 0:
            return False
        at = found + len(part)
    return True


# ---- PDF ---------------------------------------------------------------------------------
def test_a_two_column_pdf_reads_column_by_column_one_section_a_page() -> None:
    pytest.importorskip("pdfminer")
    doc = _read("two-columns.pdf")
    assert doc.title == made.PDF_TITLE
    assert [s.page for s in doc.sections] == [1, 2]
    # written line by line across the columns; read as the left column, then the right
    assert _in_order(doc.sections[0].text, made.LEFT + made.RIGHT)
    assert _in_order(doc.sections[1].text, made.PAGE_TWO_LEFT + made.PAGE_TWO_RIGHT)
    assert doc.sections[1].metadata() == {"page": 2, "section": "Visiting"}  # from the outline


def test_a_pdf_is_indexed_with_its_page_numbers_and_title() -> None:
    pytest.importorskip("pdfminer")
    passages = read_corpus(FIXTURES / "two-columns.pdf", max_words=40, overlap_words=0,
                           source="reports/two-columns.pdf")
    assert {p.title for p in passages} == {made.PDF_TITLE}
    assert {p.metadata["page"] for p in passages} == {1, 2}
    storm = next(p for p in passages if "storm in 1962" in p.text)
    assert storm.metadata == {"page": 1, "section": "History"}
    assert cite_location(storm.source, storm.metadata) == "two-columns.pdf, p. 1, § History"
    # chunks never cross a page: no passage holds words of both pages
    assert not any("Kestrel" in p.text and "Visitors climb" in p.text for p in passages)


def test_a_pdf_without_an_outline_keeps_page_numbers_only() -> None:
    pytest.importorskip("pdfminer")
    pytest.importorskip("reportlab")
    from gear_agent.ingest.documents.pdf import read_pdf

    doc = read_pdf(made.two_column_pdf([(made.LEFT, made.RIGHT)], "Plain"), "plain.pdf")
    assert [s.metadata() for s in doc.sections] == [{"page": 1}]


def test_a_scanned_pdf_is_refused_in_one_line_and_nothing_is_read(tmp_path: Path) -> None:
    pytest.importorskip("pdfminer")
    with pytest.raises(CorpusFormatError) as caught:
        read_corpus(FIXTURES / "scanned.pdf")
    message = str(caught.value)
    assert "no text layer" in message and "OCR" in message and "\n" not in message


def test_a_password_protected_pdf_is_refused_in_one_line() -> None:
    pytest.importorskip("pdfminer")
    with pytest.raises(CorpusFormatError) as caught:
        read_corpus(FIXTURES / "locked.pdf")
    assert "password-protected" in str(caught.value) and "\n" not in str(caught.value)
    from gear_agent.ingest.documents.pdf import read_pdf  # with its password it reads

    opened = read_pdf((FIXTURES / "locked.pdf").read_bytes(), "locked.pdf", password="secret")
    assert _in_order(opened.sections[0].text, made.LEFT + made.RIGHT)


def test_a_damaged_pdf_is_refused_in_one_line(tmp_path: Path) -> None:
    pytest.importorskip("pdfminer")
    broken = tmp_path / "broken.pdf"
    broken.write_bytes((FIXTURES / "two-columns.pdf").read_bytes()[:300])
    with pytest.raises(CorpusFormatError, match="broken.pdf is not a readable PDF"):
        read_corpus(broken)


# ---- HTML --------------------------------------------------------------------------------
def test_a_web_page_keeps_its_article_and_leaves_navigation_and_boilerplate_out() -> None:
    pytest.importorskip("trafilatura")
    doc = _read("article.html")
    text = "\n".join(s.text for s in doc.sections)
    for line in made.BOILERPLATE:
        assert line not in text
    assert doc.title == made.PDF_TITLE
    assert [s.headings for s in doc.sections] == [(h,) for h, _ in made.ARTICLE_SECTIONS]
    founding, murals = doc.sections
    assert _in_order(founding.text, [*made.ARTICLE_SECTIONS[0][1], *made.ARTICLE_LIST])
    assert _in_order(murals.text, [*made.ARTICLE_SECTIONS[1][1], "Year", "Event", "1923", "Founded",
                                   "1964", "Dome rebuilt"])


# ---- DOCX --------------------------------------------------------------------------------
def test_a_docx_keeps_its_heading_path_and_its_table_in_reading_order() -> None:
    pytest.importorskip("docx")
    doc = _read("handbook.docx")
    assert doc.title == "Observatory Handbook"
    assert [s.headings for s in doc.sections] == [
        ("Founding",), ("Founding", "Details"), ("The murals",), ("The murals", "Details")]
    assert _in_order(doc.sections[0].text, [made.ARTICLE_SECTIONS[0][1][0], *made.ARTICLE_LIST])
    last = doc.sections[-1].text
    assert _in_order(last, [made.ARTICLE_SECTIONS[1][1][1], "| Year | Event |", "| 1923 | Founded |",
                            "| 1964 | Dome rebuilt |", "The table lists the main events."])
    assert doc.sections[-1].metadata() == {"section": "The murals › Details"}


def test_a_file_that_is_not_a_docx_is_refused_in_one_line(tmp_path: Path) -> None:
    pytest.importorskip("docx")
    fake = tmp_path / "notes.docx"
    fake.write_text("plain text, not a zip")
    with pytest.raises(CorpusFormatError, match=r"notes.docx is not a readable Word \(.docx\) document"):
        read_corpus(fake)


# ---- Markdown ----------------------------------------------------------------------------
def test_markdown_sections_follow_headings_but_not_hashes_in_code() -> None:
    doc = _read("guide.md")
    assert doc.title == "Visiting Kestrel"
    assert [s.headings for s in doc.sections] == [
        (), ("Getting there",), ("Tickets",), ("Tickets", "Night sessions")]
    assert "# this line is code, not a heading" in doc.sections[-1].text
    assert _in_order(doc.sections[2].text, ["| Adult  | 8 EUR |", "| Child  | 4 EUR |"])
    assert _in_order(doc.sections[1].text, ["- Bus 12", "- Parking"])


def test_a_markdown_file_indexes_with_its_sections() -> None:
    passages = read_corpus(FIXTURES / "guide.md", source="docs/guide.md")
    night = next(p for p in passages if "Clear Fridays" in p.text)
    assert night.title == "Visiting Kestrel"
    assert night.metadata == {"section": "Tickets › Night sessions"}
    assert cite_location(night.source, night.metadata) == "guide.md, § Tickets › Night sessions"


# ---- folders, missing libraries, citations -----------------------------------------------
def test_a_folder_reads_every_document_and_leaves_out_unreadable_ones_with_a_warning(tmp_path: Path) -> None:
    pytest.importorskip("pdfminer")
    pytest.importorskip("trafilatura")
    pytest.importorskip("docx")
    folder = tmp_path / "docs"
    shutil.copytree(FIXTURES, folder, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    (folder / "notes.txt").write_text("A plain note about the dome.")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        passages = read_corpus(folder, source="docs")
    said = [str(w.message) for w in caught if issubclass(w.category, GearWarning)]
    assert len(said) == 2
    assert any("scanned.pdf has no text layer" in m for m in said)
    assert any("locked.pdf is password-protected" in m for m in said)
    assert {p.source for p in passages} == {
        "docs/two-columns.pdf", "docs/article.html", "docs/handbook.docx", "docs/guide.md", "docs/notes.txt"}


def test_a_missing_reader_library_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "trafilatura", None)
    with pytest.raises(DocumentReadError) as caught:
        _read("article.html")
    assert str(caught.value) == ("reading .html files needs trafilatura: "
                                 "pip install 'gear-agent[documents]'")


def test_an_unknown_suffix_names_the_readers() -> None:
    with pytest.raises(DocumentReadError, match=r"no document reader for '.pptx'; readers: .pdf"):
        read_document(b"", ".pptx", "deck.pptx")


@pytest.mark.parametrize(("source", "metadata", "said"), [
    ("reports/2024/annual-report.pdf", {"page": 14}, "annual-report.pdf, p. 14"),
    ("guide.md", {"section": "Install › Linux"}, "guide.md, § Install › Linux"),
    ("corpus.json", {"year": 2020}, "corpus.json"),
    ("x.pdf", {"page": True}, "x.pdf"),  # a bool is no page number
    ("", {}, ""),
])
def test_a_citation_names_the_source_and_the_page_or_section(source, metadata, said) -> None:
    assert cite_location(source, metadata) == said
