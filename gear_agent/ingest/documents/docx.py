"""A Word (.docx) document in sections: python-docx (MIT) walks the body in order, so
paragraphs, list items and tables keep their reading order; ``Heading N`` styles make the
heading path and the ``Title`` style or the document's properties its title."""

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

_HEADING = re.compile(r"^Heading (\d)$")


def _table_lines(table: Any) -> list[str]:
    """One line per row, its cells joined by `` | `` (a merged cell said once)."""
    lines = []
    for row in table.rows:
        cells: list[str] = []
        for cell in row.cells:
            words = " ".join(cell.text.split())
            if not cells or cells[-1] != words:
                cells.append(words)
        if any(cells):
            lines.append("| " + " | ".join(cells) + " |")
    return lines


def read_docx(data: bytes, name: str) -> Document:
    """The sections of a .docx file: the text under each heading, with its heading path.

    Raises:
        DocumentReadError: python-docx is not installed, or the file is not a Word document.
    """
    try:
        import docx
        from docx.table import Table
    except ImportError:
        raise missing_library(".docx", "python-docx") from None
    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as exc:  # zipfile.BadZipFile, KeyError, lxml errors: all "not a .docx"
        raise DocumentReadError(f"{name} is not a readable Word (.docx) document ({type(exc).__name__}); "
                                "a .doc file must be saved as .docx first") from None
    title = " ".join((document.core_properties.title or "").split())
    # Each paragraph's own style id, named once: python-docx's Paragraph.style looks the
    # default style up among all styles for every unstyled paragraph (1 ms each).
    names = {style.style_id: style.name for style in document.styles}
    sections: list[Section] = []
    path: list[tuple[int, str]] = []
    body: list[str] = []

    def close() -> None:
        """The section of the text since the last heading, led by that heading's words;
        none when only a heading was there."""
        if body:
            lead = [path[-1][1]] if path else []
            sections.append(Section("\n\n".join(lead + body), tuple(words for _, words in path)))
        body.clear()

    for block in document.iter_inner_content():
        if isinstance(block, Table):
            rows = _table_lines(block)
            if rows:
                body.append("\n".join(rows))
            continue
        words = " ".join(block.text.split())
        style_id = block._p.style  # the paragraph's w:pStyle, None when it has none
        style = names.get(style_id, "") if style_id else ""  # unstyled: the default, body text
        if not words:
            continue
        if style == "Title":
            title = title or words
            continue
        heading = _HEADING.match(style)
        if heading:
            close()
            depth = int(heading.group(1))
            while path and path[-1][0] >= depth:
                path.pop()
            path.append((depth, words))
            continue
        body.append(f"- {words}" if style.startswith("List") else words)
    close()
    return Document(title, sections)
