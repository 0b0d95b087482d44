"""Markdown in sections: the text under each heading, with its heading path.

Headings are found by markdown-it-py (CommonMark), so a ``#`` line inside a fenced code
block is text, not a heading; the text itself is kept as written (list markers, table
pipes, code), in reading order. The HTML reader hands its extracted article to the same
function.
"""

from __future__ import annotations

from gear_agent.ingest.documents.sections import Document, Section


def markdown_document(text: str) -> Document:
    """``text`` split at its headings.

    A first-level heading that opens the text (only blank lines before it) is the
    document's title and not part of the heading paths. Each section's text starts with
    its heading's words (without the ``#``); a heading with no text of its own under it
    (another heading follows at once) gives no section, its words live on in the paths of
    the sections below it.

    Example:
        >>> doc = markdown_document("# Guide\\nIntro.\\n## Tickets\\nEight euros.\\n")
        >>> doc.title, [(s.headings, s.text) for s in doc.sections]
        ('Guide', [((), 'Intro.'), (('Tickets',), 'Tickets\\n\\nEight euros.')])
    """
    from markdown_it import MarkdownIt

    lines = text.splitlines()
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    headings: list[tuple[int, int, int, str]] = []  # start line, end line, depth, words
    for number, token in enumerate(tokens):
        if token.type == "heading_open" and token.level == 0 and token.map:
            words = " ".join(tokens[number + 1].content.split())
            headings.append((token.map[0], token.map[1], int(token.tag[1]), words))
    title = ""
    if headings and headings[0][2] == 1 and not any(line.strip() for line in lines[: headings[0][0]]):
        title = headings[0][3]
        start = headings.pop(0)[1]
    else:
        start = 0
    sections: list[Section] = []
    path: list[tuple[int, str]] = []

    def close(end: int, heading: str | None) -> None:
        body = "\n".join(lines[start:end]).strip()
        if body:
            text = f"{heading}\n\n{body}" if heading else body
            sections.append(Section(text, tuple(words for _, words in path)))

    heading: str | None = None
    for first, after, depth, words in headings:
        close(first, heading)
        while path and path[-1][0] >= depth:
            path.pop()
        path.append((depth, words))
        heading, start = words, after
    close(len(lines), heading)
    return Document(title, sections)


def read_markdown(data: bytes, name: str) -> Document:
    """A Markdown file's sections (UTF-8)."""
    from gear_agent.ingest.documents.sections import DocumentReadError

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DocumentReadError(
            f"{name} is not UTF-8 text (byte {exc.start}): convert it, e.g. `iconv -t utf-8`"
        ) from None
    return markdown_document(text)
