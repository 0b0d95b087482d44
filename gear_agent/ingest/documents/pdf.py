"""A PDF in sections, one per page: pdfminer.six (MIT) groups the characters into text
boxes by their position (its layout analysis), so a page in columns reads column by
column whatever order the producer wrote it in; the page number is kept with each
section, with the heading path of the PDF's outline (bookmarks) where it has one, and the
title is the document's own (its Info dictionary)."""

from __future__ import annotations

import io
import re
from typing import Any

from gear_agent.ingest.documents.sections import (
    Document,
    DocumentReadError,
    Section,
    missing_library,
)

_HYPHENATED = re.compile(r"(\w)-\n(?=[a-z])")
_PLACEHOLDER_TITLES = {"untitled", "anonymous", "unknown", "title"}


def _box_text(text: str) -> str:
    """A text box's lines as one paragraph; a line ending in a hyphen joins the next one's
    first word with the hyphen kept (``peer-`` + ``reviewed``: ``peer-reviewed``), since a
    hyphen at a line end may be the word's own."""
    return " ".join(_HYPHENATED.sub(r"\1-", text.strip()).split())


def _title(document: Any) -> str:
    from pdfminer.utils import decode_text

    for info in document.info:
        value = info.get("Title")
        if hasattr(value, "resolve"):
            value = value.resolve()
        if isinstance(value, bytes):
            value = decode_text(value)
        if isinstance(value, str):
            title = " ".join(value.split())
            if title and title.lower() not in _PLACEHOLDER_TITLES:
                return title
    return ""


def _outline_page(document: Any, dest: Any, action: Any, numbers: dict[Any, int]) -> int | None:
    """The page number an outline entry points to (a destination array, a named
    destination, or a go-to action's), or None."""
    from pdfminer.pdftypes import resolve1
    from pdfminer.psparser import PSLiteral

    if dest is None and action is not None:
        action = resolve1(action)
        dest = action.get("D") if isinstance(action, dict) else None
    dest = resolve1(dest)
    if isinstance(dest, (bytes, str, PSLiteral)):
        dest = resolve1(document.get_dest(dest.name if isinstance(dest, PSLiteral) else dest))
    if isinstance(dest, dict):
        dest = resolve1(dest.get("D"))
    if isinstance(dest, list) and dest:
        return numbers.get(getattr(dest[0], "objid", None))
    return None


def _outline_paths(document: Any, numbers: dict[Any, int]) -> dict[int, tuple[str, ...]]:
    """Each page's heading path from the PDF's outline (its bookmarks): the path of the
    first entry that starts on the page, else of the last one started before it. Empty
    when the PDF has no outline, or one that cannot be read (it only labels pages)."""
    from pdfminer.pdfdocument import PDFNoOutlines
    from pdfminer.psparser import PSException

    starts: dict[int, tuple[str, ...]] = {}
    path: list[str] = []
    try:
        for level, title, dest, action, _ in document.get_outlines():
            words = " ".join(str(title or "").split())
            del path[max(0, level - 1):]
            path.append(words)
            page = _outline_page(document, dest, action, numbers)
            if page is not None and words:
                starts.setdefault(page, tuple(path))
    except (PDFNoOutlines, PSException, KeyError, TypeError, ValueError, AttributeError):
        return {}  # a damaged outline: pages keep their numbers only
    paths: dict[int, tuple[str, ...]] = {}
    current: tuple[str, ...] = ()
    for page in sorted(numbers.values()):
        current = starts.get(page, current)
        if current:
            paths[page] = current
    return paths


def _ranges(pages: list[int]) -> str:
    """``[1, 2, 3, 7]`` as ``1-3, 7``."""
    parts: list[str] = []
    for page in pages:
        if parts and parts[-1].split("-")[-1] == str(page - 1):
            parts[-1] = f"{parts[-1].split('-')[0]}-{page}"
        else:
            parts.append(str(page))
    return ", ".join(parts)


def read_pdf(data: bytes, name: str, password: str = "") -> Document:
    """The text of each page of a PDF in reading order, one section a page.

    Pages without a text layer (scanned images) are left out and named in the document's
    notes; a PDF with no text at all is refused.

    Raises:
        DocumentReadError: pdfminer.six is not installed; the PDF needs a password; it has
            no text layer (scanned: run OCR first); or it is damaged.
    """
    try:
        from pdfminer.converter import PDFPageAggregator
        from pdfminer.layout import LAParams, LTTextContainer
        from pdfminer.pdfdocument import PDFDocument, PDFEncryptionError, PDFPasswordIncorrect
        from pdfminer.pdfinterp import PDFPageInterpreter, PDFResourceManager
        from pdfminer.pdfpage import PDFPage
        from pdfminer.pdfparser import PDFParser
        from pdfminer.psparser import PSException
    except ImportError:
        raise missing_library(".pdf", "pdfminer.six") from None
    try:
        document = PDFDocument(PDFParser(io.BytesIO(data)), password=password)
        manager = PDFResourceManager()
        device = PDFPageAggregator(manager, laparams=LAParams())
        interpreter = PDFPageInterpreter(manager, device)
        texts: list[tuple[int, str]] = []
        numbers: dict[Any, int] = {}  # page object id -> page number, for the outline
        empty = []
        for number, page in enumerate(PDFPage.create_pages(document), start=1):
            numbers[page.pageid] = number
            interpreter.process_page(page)
            boxes = [_box_text(item.get_text()) for item in device.get_result()
                     if isinstance(item, LTTextContainer)]
            text = "\n\n".join(box for box in boxes if box)
            if text:
                texts.append((number, text))
            else:
                empty.append(number)
        paths = _outline_paths(document, numbers)
        sections = [Section(text, paths.get(number, ()), page=number) for number, text in texts]
    except PDFPasswordIncorrect:
        raise DocumentReadError(f"{name} is password-protected: save a copy without the password "
                                "(or decrypt it, e.g. `qpdf --decrypt`) and index that") from None
    except PDFEncryptionError as exc:
        raise DocumentReadError(f"{name} is encrypted in a way that cannot be read ({exc})") from None
    except (PSException, ValueError, KeyError, TypeError) as exc:  # pdfminer's errors on a damaged file
        raise DocumentReadError(f"{name} is not a readable PDF ({type(exc).__name__}: {exc})"[:300]) from None
    if not sections:
        raise DocumentReadError(
            f"{name} has no text layer (a scanned PDF?): run OCR on it first (e.g. `ocrmypdf`); nothing indexed"
        )
    notes = [f"{name}: page(s) {_ranges(empty)} have no text layer (scanned?) and were left out"] if empty else []
    return Document(_title(document), sections, notes)
