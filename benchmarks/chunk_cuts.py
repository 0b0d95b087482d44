"""How many chunks the encoder cuts: the word chunker (200 words, before) against chunks
counted in the encoder's own word pieces (after).

A chunk is cut when its title and text (what is embedded) are longer than the encoder reads
(all-MiniLM-L6-v2: 256 word pieces less [CLS] and [SEP]): the end is never embedded. Texts:
``examples/demo/corpus.json`` (records), the MuSiQue corpus under ``../shared/data`` when it
is there (records, kept whole up to ``record_max_words``), the project's own ``docs/*.md``
and the GPL-3 and Apache-2.0 licence texts Debian ships (long real prose) as text files.

    python benchmarks/chunk_cuts.py
    python benchmarks/chunk_cuts.py --text my-book.txt
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from gear_agent.config import GearSettings
from gear_agent.embedding import encoder_tokenizer
from gear_agent.ingest.corpus import make_chunker, read_corpus
from gear_agent.text.chunking import chunk_text

ROOT = Path(__file__).resolve().parents[1]
LONG_TEXTS = [Path("/usr/share/common-licenses/GPL-3"), Path("/usr/share/common-licenses/Apache-2.0")]


def _texts(args: argparse.Namespace) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """(name, kind, [(title, text)]) for every input found."""
    found = []
    demo = json.loads((ROOT / "examples" / "demo" / "corpus.json").read_text())
    found.append(("examples/demo/corpus.json", "records", [(r.get("title", ""), r["text"]) for r in demo]))
    musique = ROOT.parent / "shared" / "data" / "musique_dev" / "corpus.json"
    if musique.is_file():
        records = json.loads(musique.read_text())
        found.append(("MuSiQue corpus.json", "records", [(r.get("title", ""), r["text"]) for r in records]))
    docs = sorted((ROOT / "docs").glob("*.md"))
    found.append(("docs/*.md", "text files", [(p.stem, p.read_text()) for p in docs]))
    for path in [*LONG_TEXTS, *map(Path, args.text)]:
        if path.is_file():
            found.append((path.name, "text file", [(path.stem, path.read_text(errors="replace"))]))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--text", action="append", default=[], help="Another text file to measure.")
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    args = parser.parse_args()
    settings = GearSettings(embedding_model=args.model)
    tokenizer = encoder_tokenizer(settings)
    if tokenizer is None:
        raise SystemExit(f"{args.model} has no local tokenizer to measure with")
    after_chunker = make_chunker(tokenizer, settings.chunk_words, settings.chunk_overlap_words)
    limit = tokenizer.max_tokens
    print(f"encoder: {tokenizer.name}, reads {limit} word pieces of text (title included)\n")
    print("| input | chunker | chunks | cut | cut share | word pieces: median / max | seconds |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name, kind, docs in _texts(args):
        for label in ("words (before)", "tokens (after)"):
            started = time.perf_counter()
            chunks: list[tuple[str, str]] = []
            for title, text in docs:
                if kind == "records":
                    chunks.append((title, text))  # kept whole either way (record_max_words)
                elif label.startswith("words"):
                    chunks += [(title, c) for c in chunk_text(text, settings.chunk_words,
                                                              settings.chunk_overlap_words)]
                else:
                    chunks += [(title, c) for c in after_chunker.chunks(text, title)]
            seconds = time.perf_counter() - started
            sizes = [tokenizer.count(f"{t}\n{c}" if t else c) for t, c in chunks]
            cut = sum(s > limit for s in sizes)
            print(f"| {name} ({kind}) | {label} | {len(chunks):,} | {cut:,} | {cut / max(1, len(chunks)):.1%} "
                  f"| {statistics.median(sizes):.0f} / {max(sizes)} | {seconds:.2f} |")
    # the readers themselves, end to end, on the docs folder
    started = time.perf_counter()
    passages = read_corpus(ROOT / "docs", chunker=after_chunker)
    print(f"\nread_corpus(docs/) with the token chunker: {len(passages)} passages, "
          f"{sum(not after_chunker.fits(p.text, p.title) for p in passages)} cut, "
          f"{time.perf_counter() - started:.2f} s")


if __name__ == "__main__":
    main()
