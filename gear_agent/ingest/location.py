"""Where a passage sits in its document, said the same way everywhere: ``report.pdf, p. 14``
or ``guide.md, § Install › Linux``.

The document readers (:mod:`gear_agent.ingest.documents`) record the place in a passage's
metadata under :data:`PAGE_KEY` and :data:`SECTION_KEY`; :func:`cite_location` is the one
function that turns a passage's source and metadata into the words a citation shows (the
CLI's ``gear ask`` and ``gear search``, ``Gear.ask``'s citations, the web page and the
LangServe output all call it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

PAGE_KEY = "page"
"""Metadata key of a PDF passage's page number (1-based, an int)."""
SECTION_KEY = "section"
"""Metadata key of a passage's heading path (HTML, DOCX, Markdown), its headings joined by
:data:`SECTION_SEPARATOR`."""
SECTION_SEPARATOR = " › "


def section_path(headings: Sequence[str]) -> str:
    """The heading path as stored under :data:`SECTION_KEY`.

    Example:
        >>> section_path(["Install", "Linux"])
        'Install › Linux'
    """
    return SECTION_SEPARATOR.join(h.strip() for h in headings if h.strip())


def place(metadata: Mapping[str, Any]) -> str:
    """The page or section alone (``p. 14``, ``§ Install › Linux``, both joined by ``, ``),
    or ``""`` when the metadata names neither.

    Example:
        >>> place({"page": 14}), place({"section": "Tickets"}), place({"year": 2020})
        ('p. 14', '§ Tickets', '')
    """
    parts = []
    page = metadata.get(PAGE_KEY)
    if isinstance(page, int) and not isinstance(page, bool):
        parts.append(f"p. {page}")
    section = metadata.get(SECTION_KEY)
    if isinstance(section, str) and section.strip():
        parts.append(f"§ {section.strip()}")
    return ", ".join(parts)


def cite_location(source: str, metadata: Mapping[str, Any] | None = None) -> str:
    """A passage's source and its place in it, as a citation shows them: the source's file
    name (its last path part), then the page or section when the metadata has them.

    Example:
        >>> cite_location("reports/annual-report.pdf", {"page": 14})
        'annual-report.pdf, p. 14'
        >>> cite_location("docs/guide.md", {"section": "Tickets › Night sessions"})
        'guide.md, § Tickets › Night sessions'
        >>> cite_location("corpus.json", {}), cite_location("", {"page": 2})
        ('corpus.json', 'p. 2')
    """
    name = (source or "").rstrip("/").rsplit("/", 1)[-1]
    where = place(metadata or {})
    return ", ".join(part for part in (name, where) if part)
