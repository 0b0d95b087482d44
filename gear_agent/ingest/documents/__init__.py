"""Documents in: PDF, HTML, Word (.docx) and Markdown read into sections of text with their
page or heading path and the document's own title.

One reader a format, each in its own module and importing its library only when called,
so a missing optional library fails only for its format, with the install hint
(``pip install 'gear-agent[documents]'``); :func:`read_document` picks the reader by the
file's suffix (:data:`READERS`). The libraries were chosen by measuring them on real
documents (``python benchmarks/document_loaders.py``; docs/cli.md "Document formats").

Example:
    >>> doc = read_document(b"# Guide\\n## Tickets\\nEight euros.", ".md", "guide.md")
    >>> doc.title, doc.sections[0].metadata()
    ('Guide', {'section': 'Tickets'})
"""

from __future__ import annotations

import importlib
from typing import NamedTuple

from gear_agent.ingest.documents.sections import (
    INSTALL_HINT,
    Document,
    DocumentReadError,
    Section,
)


class Reader(NamedTuple):
    """One format's reader: the module under this package and its function
    ``(data, name) -> Document``, and the library it needs (for the docs)."""

    module: str
    function: str
    library: str


READERS: dict[str, Reader] = {
    ".pdf": Reader("pdf", "read_pdf", "pdfminer.six"),
    ".html": Reader("html", "read_html", "trafilatura"),
    ".htm": Reader("html", "read_html", "trafilatura"),
    ".docx": Reader("docx", "read_docx", "python-docx"),
    ".md": Reader("markdown", "read_markdown", "markdown-it-py"),
    ".markdown": Reader("markdown", "read_markdown", "markdown-it-py"),
}
"""Suffix (lower case) -> its reader."""

DOCUMENT_SUFFIXES = tuple(READERS)


def read_document(data: bytes, suffix: str, name: str) -> Document:
    """The document in ``data``, read by the reader of ``suffix``; ``name`` is how errors
    and notes name the file.

    Raises:
        DocumentReadError: no reader for the suffix, its library is missing, or the file
            cannot be read (password, no text layer, damaged); one line, with the fix.
    """
    reader = READERS.get(suffix.lower())
    if reader is None:
        raise DocumentReadError(f"{name}: no document reader for {suffix!r}; readers: {', '.join(READERS)}")
    module = importlib.import_module(f"{__name__}.{reader.module}")
    return getattr(module, reader.function)(data, name)


__all__ = ["DOCUMENT_SUFFIXES", "INSTALL_HINT", "READERS", "Document", "DocumentReadError",
           "Reader", "Section", "read_document"]
