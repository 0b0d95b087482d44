"""A web page's article in sections: trafilatura (Apache-2.0 since 1.8) finds the main text
and leaves out navigation, banners, sidebars and footers; its Markdown rendering keeps
headings, lists and tables in reading order and goes through the Markdown reader's
sectioning."""

from __future__ import annotations

from gear_agent.ingest.documents.markdown import markdown_document
from gear_agent.ingest.documents.sections import Document, DocumentReadError, missing_library


def read_html(data: bytes, name: str) -> Document:
    """The article of an HTML page, in sections under its headings; the title is the
    article's leading ``<h1>``, else the page's ``<title>``.

    Raises:
        DocumentReadError: trafilatura is not installed, or the page has no main text.
    """
    try:
        import trafilatura
        from trafilatura.utils import load_html
    except ImportError:
        raise missing_library(".html", "trafilatura") from None
    tree = load_html(data)
    if tree is None:
        raise DocumentReadError(f"{name} is not an HTML page that can be parsed: nothing indexed")
    # The page's <title>, read before extraction; trafilatura's metadata pass is not used: it
    # also guesses the page's date (10 s on a page of 40 sections, in dateparser), and its
    # title heuristics took a help pop-up's heading for the Rust book's chapter titles.
    page_title = tree.findtext(".//title") or ""
    markdown = trafilatura.extract(
        tree, output_format="markdown", include_formatting=True, include_tables=True,
        include_links=False, include_images=False, include_comments=False, deduplicate=False,
    )
    if not markdown or not markdown.strip():
        raise DocumentReadError(f"{name}: no main text found in the page (only navigation or "
                                "boilerplate, or a page built by JavaScript): nothing indexed")
    document = markdown_document(markdown)
    title = document.title or page_title  # the article's own leading <h1> first
    return Document(" ".join(title.split()), document.sections, document.notes)
