"""What a document reader returns: the document's own title and its sections in reading
order, each with the page or heading path it sits under."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gear_agent.errors import GearError
from gear_agent.ingest.location import PAGE_KEY, SECTION_KEY, section_path

INSTALL_HINT = "pip install 'gear-agent[documents]'"


class DocumentReadError(GearError, ValueError):
    """A document that cannot be read (encrypted, no text layer, damaged, a missing
    reader library), said in one line with what to do."""


@dataclass(frozen=True)
class Section:
    """A run of a document's text that chunks should not cross: a PDF page, or the text
    under one heading.

    Attributes:
        text: The text in reading order (paragraphs separated by blank lines; list items
            and table rows on their own lines).
        headings: The heading path above the text, outermost first (empty before the
            first heading and for PDF pages).
        page: The 1-based page number (PDF), else None.
    """

    text: str
    headings: tuple[str, ...] = ()
    page: int | None = None

    def metadata(self) -> dict[str, Any]:
        """The passage metadata of this section's chunks: ``page`` and/or ``section``.

        Example:
            >>> Section("x", ("Tickets", "Night"), None).metadata()
            {'section': 'Tickets › Night'}
        """
        out: dict[str, Any] = {}
        if self.page is not None:
            out[PAGE_KEY] = self.page
        if self.headings:
            out[SECTION_KEY] = section_path(self.headings)
        return out


@dataclass(frozen=True)
class Document:
    """A read document.

    Attributes:
        title: The document's own title (PDF or DOCX properties, the HTML ``<title>`` or
            first heading, a Markdown file's first ``# heading``), or ``""`` when it has none.
        sections: The sections with text, in reading order.
        notes: What the reader left out and why (``pages 3, 7 have no text layer``).
    """

    title: str
    sections: list[Section]
    notes: list[str] = field(default_factory=list)


def missing_library(suffix: str, package: str) -> DocumentReadError:
    """The one-line error for a reader whose library is not installed."""
    return DocumentReadError(f"reading {suffix} files needs {package}: {INSTALL_HINT}")

