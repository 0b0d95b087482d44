"""Document readers compared on real and made documents: text recovered, reading order,
boilerplate kept out, speed, install size and licence.

For each format, one table; one row per candidate library and document set:

* **ms/page** (PDF) or **ms/doc**: reading time, the median of ``--repeat`` runs.
* **recall**: the share of the known text's words the reader gives back *in order*
  (difflib's matching blocks over the word sequences): a two-column page read across the
  columns loses most of it, a missing paragraph its words.
* **precision**: the share of the reader's words that are the known text's, in order:
  navigation, banners and footers a reader keeps lower it.
* **chars**: characters recovered over the known text's characters (spacing aside).
* **install**: the library's installed size with the dependencies gear-agent's core
  install does not already bring (from the installed files' RECORDs), and its **licence**
  (the distribution's metadata).

Documents: a 50-page two-column PDF written line by line *across* the columns (as some
producers do), made with reportlab from the MuSiQue corpus of ``../shared/data`` (or the
fixtures' sentences without it); the fixtures of tests/fixtures/documents/; two real PDF
manuals from /usr/share/doc when installed (speed only: no known text); web pages: the
fixture article in its navigation and boilerplate, a made page of 40 sections inside
the same boilerplate, and real pages of the Rust book and the std docs from a rustup
install when present (known text: the page's ``<main>``). Word: a 40-section document
made with python-docx.

    python benchmarks/document_loaders.py              # about a minute
    python benchmarks/document_loaders.py --repeat 3 --html-pages 20

Candidates missing from the environment are left out with a line saying so; install
them with ``pip install pypdf pypdfium2 pdfplumber readability-lxml selectolax
beautifulsoup4 reportlab`` beside ``gear-agent[documents]``.
"""

from __future__ import annotations

import argparse
import difflib
import importlib.metadata as md
import io
import json
import logging
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

FIXTURES = ROOT / "tests" / "fixtures" / "documents"
SHARED_CORPUS = ROOT.parent / "shared" / "data" / "musique_dev" / "corpus.json"
REAL_PDFS = [Path("/usr/share/doc/libtasn1-doc/libtasn1.pdf"),
             Path("/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf")]
RUST_DOCS = Path.home() / ".rustup/toolchains/stable-x86_64-unknown-linux-gnu/share/doc/rust/html"
_WORD = re.compile(r"\w+")


# ---- candidates ----------------------------------------------------------------------------
def pdf_pypdf(data: bytes) -> list[str]:
    from pypdf import PdfReader

    return [page.extract_text() or "" for page in PdfReader(io.BytesIO(data)).pages]


def pdf_pypdf_layout(data: bytes) -> list[str]:
    from pypdf import PdfReader

    return [page.extract_text(extraction_mode="layout") or "" for page in PdfReader(io.BytesIO(data)).pages]


def pdf_pypdfium2(data: bytes) -> list[str]:
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(data)
    try:
        return [page.get_textpage().get_text_bounded() for page in document]
    finally:
        document.close()


def pdf_pdfplumber(data: bytes) -> list[str]:
    import pdfplumber

    with pdfplumber.open(io.BytesIO(data)) as pdf:
        return [page.extract_text() or "" for page in pdf.pages]


def pdf_gear(data: bytes) -> list[str]:
    """gear-agent's reader: pdfminer.six's layout analysis (ingest/documents/pdf.py)."""
    from gear_agent.ingest.documents.pdf import read_pdf

    return [s.text for s in read_pdf(data, "bench.pdf").sections]


def html_gear(data: bytes) -> str:
    """gear-agent's reader: trafilatura's article as Markdown (ingest/documents/html.py)."""
    from gear_agent.ingest.documents.html import read_html

    document = read_html(data, "bench.html")
    return "\n".join([document.title, *(s.text for s in document.sections)])


def html_readability(data: bytes) -> str:
    import lxml.html
    from readability import Document

    return lxml.html.fromstring(Document(data).summary()).text_content()


def html_selectolax(data: bytes) -> str:
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(data)
    tree.strip_tags(["script", "style", "noscript"])
    return tree.body.text(separator="\n") if tree.body is not None else ""


def html_bs4(data: bytes) -> str:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(data, "lxml")
    for tag in soup(["script", "style", "noscript"]):
        tag.decompose()
    return soup.get_text("\n")


def docx_gear(data: bytes) -> str:
    """gear-agent's reader: python-docx walking the body in order (ingest/documents/docx.py)."""
    from gear_agent.ingest.documents.docx import read_docx

    document = read_docx(data, "bench.docx")
    return "\n".join([document.title, *(s.text for s in document.sections)])


def docx_paragraphs(data: bytes) -> str:
    """python-docx's paragraphs only (the usual recipe): tables are lost."""
    import docx

    return "\n".join(p.text for p in docx.Document(io.BytesIO(data)).paragraphs)


# name -> (function, distribution of the library, its import name)
PDF = {"pdfminer.six (gear)": (pdf_gear, "pdfminer.six", "pdfminer"),
       "pypdf": (pdf_pypdf, "pypdf", "pypdf"),
       "pypdf layout": (pdf_pypdf_layout, "pypdf", "pypdf"),
       "pypdfium2": (pdf_pypdfium2, "pypdfium2", "pypdfium2"),
       "pdfplumber": (pdf_pdfplumber, "pdfplumber", "pdfplumber")}
HTML = {"trafilatura (gear)": (html_gear, "trafilatura", "trafilatura"),
        "readability-lxml": (html_readability, "readability-lxml", "readability"),
        "selectolax body": (html_selectolax, "selectolax", "selectolax.lexbor"),
        "bs4+lxml body": (html_bs4, "beautifulsoup4", "bs4")}
DOCX = {"python-docx (gear)": (docx_gear, "python-docx", "docx"),
        "python-docx paragraphs": (docx_paragraphs, "python-docx", "docx")}


# ---- measures ------------------------------------------------------------------------------
def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def in_order(known: list[str], got: list[str]) -> int:
    """Words of ``known`` found in ``got`` in the same order (difflib's matching blocks)."""
    matcher = difflib.SequenceMatcher(None, known, got, autojunk=False)
    return sum(block.size for block in matcher.get_matching_blocks())


def score(known: str, got: str) -> tuple[float, float, float]:
    """(recall, precision, chars) of ``got`` against ``known``."""
    k, g = words(known), words(got)
    matched = in_order(k, g) if k and g else 0
    chars = len("".join(got.split())) / max(1, len("".join(known.split())))
    return matched / max(1, len(k)), matched / max(1, len(g)), chars


def timed(function: Callable[[bytes], Any], data: bytes, repeat: int) -> tuple[Any, float]:
    """The result and the median seconds of ``repeat`` runs."""
    seconds, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = function(data)
        seconds.append(time.perf_counter() - start)
    return result, statistics.median(seconds)


def _requirements(dist: md.Distribution) -> list[str]:
    names = []
    for requirement in dist.requires or []:
        if "extra ==" in requirement:
            continue
        names.append(re.split(r"[\s;<>=!~\[(]", requirement, maxsplit=1)[0])
    return names


def _closure(names: list[str]) -> set[str]:
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop().lower().replace("_", "-")
        if name in seen:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue
        seen.add(name)
        todo.extend(_requirements(dist))
    return seen


def _size(name: str) -> int:
    dist = md.distribution(name)
    total = 0
    for file in dist.files or []:
        try:
            total += file.locate().stat().st_size
        except OSError:
            pass
    return total


def install_size(distribution: str, core: set[str]) -> str:
    """Installed MB of ``distribution`` with the dependencies the core does not bring."""
    extra = _closure([distribution]) - core
    total = sum(_size(name) for name in extra)
    return f"{total / 1e6:.1f} MB ({len(extra)} pkg)"


def licence(distribution: str) -> str:
    meta = md.distribution(distribution).metadata
    text = meta.get("License-Expression") or ""
    if not text:
        classifiers = [c.split("::")[-1].strip() for c in meta.get_all("Classifier") or [] if c.startswith("License")]
        text = ", ".join(classifiers) or (meta.get("License") or "?").splitlines()[0]
    return text[:28]


def core_closure() -> set[str]:
    try:
        return _closure(_requirements(md.distribution("gear-agent")))
    except md.PackageNotFoundError:
        return set()


# ---- documents -----------------------------------------------------------------------------
def corpus_sentences(limit: int) -> list[str]:
    from fixtures.documents import make_documents as made

    if SHARED_CORPUS.is_file():
        texts = [r["text"] for r in json.loads(SHARED_CORPUS.read_text())]
    else:
        texts = made.LEFT + made.RIGHT + made.PAGE_TWO_LEFT + made.PAGE_TWO_RIGHT
    sentences = [s for t in texts for s in re.split(r"(?<=[.!?])\s+", t) if s.strip()]
    return (sentences * (1 + limit // max(1, len(sentences))))[:limit]


def pages_of(sentences: list[str], pages: int, lines: int = 46) -> list[tuple[list[str], list[str]]]:
    """Sentences filled into ``pages`` pages of two columns of at most ``lines`` lines."""
    import textwrap

    out, at = [], 0
    for _ in range(pages):
        columns = []
        for _ in range(2):
            column: list[str] = []
            while at < len(sentences) and len(textwrap.wrap(" ".join(column + [sentences[at]]), 48)) <= lines:
                column.append(sentences[at])
                at += 1
            columns.append(column)
        out.append((columns[0], columns[1]))
    return out


def made_pdf(pages: int) -> tuple[bytes, str, int]:
    from fixtures.documents import make_documents as made

    layout = pages_of(corpus_sentences(40 * pages), pages)
    known = "\n".join(" ".join(left + right) for left, right in layout)
    return made.two_column_pdf(layout, "Benchmark"), known, pages


def article_known(title: str, parts: list[tuple[str, list[str]]]) -> str:
    """The text of ``make_documents.article_html(title, parts)``'s article, in its order."""
    from fixtures.documents import make_documents as made

    lines = [title]
    for n, (heading, paragraphs) in enumerate(parts):
        lines += [heading, *paragraphs] + (made.ARTICLE_LIST if n == 0 else [])
    return "\n".join(lines + [" ".join(r) for r in made.ARTICLE_TABLE])


def made_html(sections: int) -> tuple[bytes, str]:
    from fixtures.documents import make_documents as made

    sentences = corpus_sentences(3 * sections)
    parts = [(f"Section {n}", sentences[3 * n: 3 * n + 3]) for n in range(sections)]
    page = made.article_html("Benchmark", parts)
    return page.encode(), article_known("Benchmark", parts)


def made_docx(sections: int) -> tuple[bytes, str]:
    from fixtures.documents import make_documents as made

    sentences = corpus_sentences(3 * sections)
    parts = [(f"Section {n}", sentences[3 * n: 3 * n + 3]) for n in range(sections)]
    data = made.handbook_docx("Benchmark", parts)
    body = ["Benchmark"]
    for n, (heading, paragraphs) in enumerate(parts):
        body += [heading, paragraphs[0]] + (made.ARTICLE_LIST if n == 0 else []) + ["Details", *paragraphs[1:]]
    body += [" ".join(r) for r in made.ARTICLE_TABLE] + ["The table lists the main events."]
    return data, "\n".join(body)


def main_text(data: bytes) -> str:
    """A real page's known text: its ``<main>`` (or rustdoc's ``#main-content``)."""
    import lxml.html

    root = lxml.html.fromstring(data)
    for bad in root.xpath("//script|//style|//noscript"):
        bad.drop_tree()
    main = root.xpath("//main") or root.xpath("//*[@id='main-content']")
    return main[0].text_content() if main else ""


def real_pages(count: int) -> list[tuple[str, bytes]]:
    book = sorted((RUST_DOCS / "book").glob("ch*.html"))[:count]
    std = [RUST_DOCS / "std" / m / "index.html" for m in ("option", "result", "collections", "fs", "env")]
    return [(p.name, p.read_bytes()) for p in [*book, *std[: max(1, count // 4)]] if p.is_file()]


# ---- tables --------------------------------------------------------------------------------
def row(cells: list[str], widths: list[int]) -> str:
    return "  ".join(c.ljust(w) for c, w in zip(cells, widths))


def table(title: str, header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    print(f"\n{title}")
    print(row(header, widths))
    print(row(["-" * w for w in widths], widths))
    for r in rows:
        print(row([str(c) for c in r], widths))


def available(candidates: dict[str, tuple[Callable, str, str]]) -> dict[str, tuple[Callable, str, str]]:
    out = {}
    for name, spec in candidates.items():
        try:
            __import__(spec[2])
            out[name] = spec
        except ImportError:
            print(f"left out: {name} ({spec[1]} is not installed)")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=50, help="pages of the made two-column PDF")
    parser.add_argument("--html-pages", type=int, default=12, help="real web pages (Rust book, std docs)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per measure (the median is shown)")
    args = parser.parse_args()
    logging.getLogger("pdfminer").setLevel(logging.ERROR)  # "CropBox missing" once a page
    core = core_closure()
    header = ["reader", "documents", "ms/page", "recall", "precision", "chars", "install", "licence"]

    pdf_sets: list[tuple[str, bytes, str | None, int]] = []
    data, known, pages = made_pdf(args.pages)
    pdf_sets.append((f"made 2-column, {pages} p.", data, known, pages))
    from fixtures.documents import make_documents as made

    fixture = (FIXTURES / "two-columns.pdf").read_bytes()
    pdf_sets.append(("fixture two-columns.pdf", fixture,
                     " ".join(made.LEFT + made.RIGHT + made.PAGE_TWO_LEFT + made.PAGE_TWO_RIGHT), 2))
    for real in REAL_PDFS:
        if real.is_file():
            from pypdf import PdfReader

            pdf_sets.append((f"real {real.name}", real.read_bytes(), None,
                             len(PdfReader(io.BytesIO(real.read_bytes())).pages)))
    rows = []
    for name, (function, dist, _) in available(PDF).items():
        for label, data, known, pages in pdf_sets:
            got, seconds = timed(function, data, args.repeat)
            text = "\n".join(got)
            r, p, c = score(known, text) if known else (None, None, None)
            rows.append([name, label, f"{1000 * seconds / pages:.1f}",
                         "—" if r is None else f"{r:.3f}", "—" if p is None else f"{p:.3f}",
                         f"{len(text):,}" if c is None else f"{c:.3f}",
                         install_size(dist, core), licence(dist)])
    table("PDF (chars: recovered/known; for real PDFs without a known text, characters read)", header, rows)

    html_sets: list[tuple[str, list[tuple[bytes, str]]]] = []
    html_sets.append(("fixture article.html", [((FIXTURES / "article.html").read_bytes(),
                                                article_known(made.PDF_TITLE, made.ARTICLE_SECTIONS))]))
    html_sets.append(("made 40 sections + boilerplate", [made_html(40)]))
    pages_real = [(data, main_text(data)) for _, data in real_pages(args.html_pages)]
    if pages_real:
        html_sets.append((f"real: {len(pages_real)} Rust book/std pages", pages_real))
    rows = []
    for name, (function, dist, _) in available(HTML).items():
        for label, documents in html_sets:
            recalls, precisions, chars, seconds = [], [], [], []
            for data, known in documents:
                got, spent = timed(function, data, args.repeat)
                r, p, c = score(known, got)
                recalls.append(r)
                precisions.append(p)
                chars.append(c)
                seconds.append(spent)
            rows.append([name, label, f"{1000 * statistics.mean(seconds):.1f}",
                         f"{statistics.mean(recalls):.3f}", f"{statistics.mean(precisions):.3f}",
                         f"{statistics.mean(chars):.3f}", install_size(dist, core), licence(dist)])
    table("HTML (ms/doc; recall and precision against the article's text: boilerplate lowers precision)",
          [h if h != "ms/page" else "ms/doc" for h in header], rows)

    docx_sets = [("fixture handbook.docx", (FIXTURES / "handbook.docx").read_bytes(), "\n".join(
        ["Observatory Handbook", made.ARTICLE_SECTIONS[0][0], made.ARTICLE_SECTIONS[0][1][0], *made.ARTICLE_LIST, "Details",
         made.ARTICLE_SECTIONS[0][1][1], made.ARTICLE_SECTIONS[1][0], made.ARTICLE_SECTIONS[1][1][0],
         "Details", made.ARTICLE_SECTIONS[1][1][1], *[" ".join(r) for r in made.ARTICLE_TABLE],
         "The table lists the main events."]))]
    data, known = made_docx(40)
    docx_sets.append(("made 40 sections + table", data, known))
    rows = []
    for name, (function, dist, _) in available(DOCX).items():
        for label, data, known in docx_sets:
            got, seconds = timed(function, data, args.repeat)
            r, p, c = score(known, got)
            rows.append([name, label, f"{1000 * seconds:.1f}", f"{r:.3f}", f"{p:.3f}", f"{c:.3f}",
                         install_size(dist, core), licence(dist)])
    table("Word (.docx; ms/doc)", [h if h != "ms/page" else "ms/doc" for h in header], rows)
    print(f"\ninstall: MB on disk of the library and the dependencies gear-agent's core install does not "
          f"bring ({len(core)} packages in the core closure here)")


if __name__ == "__main__":
    main()
