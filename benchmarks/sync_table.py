"""The sync table: what indexing a source again re-embeds and re-extracts after an edit.

Two cases, each indexed, edited and indexed again through ``Gear.index`` with a counting
stand-in embedder (``hashing-64``; chunks are cut by all-MiniLM-L6-v2's own tokenizer when
it is installed, else by words) and a scripted extraction model (one triple per sentence
naming its subject):

* the Acme case: ``docs/a.txt`` "Alice founded Acme in 1990. Acme makes rockets." edited to
  "... in 1992. Acme makes boats.";
* a long document edited in one paragraph: a 50-page text made here (250 paragraphs), or
  ``--text FILE`` (its middle paragraph gets one sentence more).

For each, the second run's counts: passages new, replaced, removed, unchanged; triples
added, removed, unchanged; texts the embedder was given and extraction calls made.

* with ``--pdf`` also a 50-page PDF (five paragraphs a page, written here with reportlab)
  edited in one paragraph of page 25: pages are sections, so only that page's chunks move.

    python benchmarks/sync_table.py
    python benchmarks/sync_table.py --text /usr/share/common-licenses/GPL-3
    python benchmarks/sync_table.py --pdf        # needs reportlab (pip install reportlab)
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]

from support.fakes import CountingEmbedder, ScriptedChatModel  # noqa: E402

from gear_agent import Gear  # noqa: E402
from gear_agent.config import GearSettings  # noqa: E402
from gear_agent.embedding import encoder_tokenizer  # noqa: E402


class Embedder(CountingEmbedder):
    """Counts texts; chunks by all-MiniLM-L6-v2's tokenizer when it is installed."""

    def tokenizer(self):  # noqa: ANN201 - the encoder's tokenizer or None
        return encoder_tokenizer(GearSettings())


def reply(prompt: str) -> str:
    """One triple per sentence of the passage: its first word, "says", its last word."""
    passage = prompt.rsplit("Passage:", 1)[-1]
    triples = []
    for sentence in re.split(r"(?<=[.!?])\s+", passage):
        words = re.findall(r"[A-Za-z][A-Za-z0-9-]+", sentence)
        if len(words) >= 2:
            triples.append([words[0], "says", words[-1]])
    return json.dumps({"entities": sorted({p for t in triples for p in (t[0], t[2])}), "triples": triples[:20]})


def fifty_pages() -> str:
    rng = random.Random(5)
    words = "river town bridge market winter harvest council school road mill".split()
    return "\n\n".join(f"Part {n} of the report. " + " ".join(rng.choice(words) for _ in range(rng.randint(60, 140)))
                       + "." for n in range(250))


def pdf_of(paragraphs: list[str], per_page: int = 5) -> bytes:
    """The paragraphs laid out ``per_page`` to a page (reportlab, deterministic output)."""
    import io

    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate

    out, style = io.BytesIO(), getSampleStyleSheet()["BodyText"]
    story = []
    for n, text in enumerate(paragraphs):
        story.append(Paragraph(text, style))
        if n % per_page == per_page - 1 and n + 1 < len(paragraphs):
            story.append(PageBreak())
    SimpleDocTemplate(out, pagesize=A4, invariant=1, title="Report").build(story)
    return out.getvalue()


def _write(doc: Path, content: str | bytes) -> None:
    if isinstance(content, bytes):
        doc.write_bytes(content)
    else:
        doc.write_text(content)


def run(folder: Path, name: str, before: str | bytes, after: str | bytes) -> list[str]:
    doc = folder / "docs" / name
    doc.parent.mkdir(parents=True, exist_ok=True)
    _write(doc, before)
    embedder = Embedder(64)
    chat = ScriptedChatModel(respond=reply)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gear = Gear(folder / "ix", embedding_model=embedder, chat_model=chat, create=True)
        first = gear.index(doc.parent)
        _write(doc, after)
        embedder.calls.clear()
        chat.calls.clear()
        second = gear.index(doc.parent)
    gear.close()
    return [f"{first.passages_added:,}", f"{second.passages_new}", f"{second.passages_replaced}",
            f"{second.passages_removed}", f"{second.passages_unchanged:,}", f"{second.triples_added}",
            f"{second.triples_removed}", f"{second.triples_unchanged:,}", f"{embedder.texts_embedded}",
            f"{len(chat.calls)}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--text", type=Path, help="A long text file to edit in its middle paragraph.")
    parser.add_argument("--pdf", action="store_true", help="Also a 50-page PDF edited in one paragraph.")
    args = parser.parse_args()
    cases = [("Acme case (a.txt)", "a.txt", "Alice founded Acme in 1990. Acme makes rockets.",
              "Alice founded Acme in 1992. Acme makes boats.")]
    long_text = args.text.read_text(errors="replace") if args.text else fifty_pages()
    paragraphs = long_text.split("\n\n")
    middle = len(paragraphs) // 2
    edited = paragraphs.copy()
    edited[middle] = edited[middle].rstrip() + " This sentence was added in the edit."
    label = args.text.name if args.text else "50 pages, 250 paragraphs"
    cases.append((f"{label}: one paragraph edited", "report.txt", long_text, "\n\n".join(edited)))
    if args.pdf:
        pages = fifty_pages().split("\n\n")
        edited_pdf = pages.copy()
        edited_pdf[122] = edited_pdf[122].rstrip() + " This sentence was added in the edit."  # page 25
        cases.append(("50-page PDF: one paragraph of p. 25 edited", "report.pdf", pdf_of(pages), pdf_of(edited_pdf)))
    chunking = "all-MiniLM-L6-v2 tokens" if encoder_tokenizer(GearSettings()) else "words"
    print(f"chunks cut by {chunking}; the second run, after the edit:\n")
    print("| case | passages (first run) | new | replaced | removed | unchanged | triples added | "
          "triples removed | triples unchanged | texts embedded | extraction calls |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, file, before, after in cases:
        with tempfile.TemporaryDirectory(prefix="gear-sync-table-") as folder:
            print(f"| {name} | " + " | ".join(run(Path(folder), file, before, after)) + " |")


if __name__ == "__main__":
    main()
