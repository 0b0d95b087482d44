"""Passages from what a Python caller has at hand: strings, dicts, LangChain Documents, paths."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gear_agent.ingest.corpus import (
    RECORD_MAX_WORDS,
    CorpusFormatError,
    canonical_source,
    corpus_sources,
    passage_from_record,
    read_corpus,
    split_long,
    word_chunker,
)
from gear_agent.text.token_chunking import Chunker
from gear_agent.types import Passage

Item = str | dict[str, Any] | os.PathLike[str] | Any
"""A string (the text), a dict (``title``, ``text``, any other keys kept as metadata), a
LangChain ``Document`` (``page_content``; ``metadata`` kept, ``title``/``source`` read from it),
or a path (``pathlib.Path``: a corpus file or a folder, as ``gear index`` reads them)."""

DEFAULT_SOURCE = "python"
"""Source of passages given as strings, dicts or Documents without a ``source``."""


@dataclass(frozen=True)
class ItemsRead:
    """What :func:`read_items` read.

    Attributes:
        passages: The passages, duplicates once.
        sources: The sources these items own (each path's files, those without text
            included, and every source a record or Document names); passages of
            :data:`DEFAULT_SOURCE` (plain strings) belong to none, so they are only added.
        folders: The canonical paths of the folders given (what ``prune`` looks under).
    """

    passages: list[Passage]
    sources: list[str]
    folders: list[str]


def read_items(
    items: Item | Iterable[Item], max_words: int = 200, overlap_words: int = 30,
    record_max_words: int = RECORD_MAX_WORDS, *, chunker: Chunker | None = None,
) -> ItemsRead:
    """The passages of ``items`` (one item or an iterable of them), duplicates once, and
    the sources they own.

    Strings and Documents are split into chunks like the text files of a folder (title
    kept, one passage per chunk) when the chunker says the encoder would not read them
    whole; dicts (records) only beyond ``record_max_words``; a path is read as ``gear
    index`` reads it. A plain string is always text, never a path: pass
    ``pathlib.Path("corpus.json")`` for a file.

    Raises:
        CorpusFormatError: an item of no supported kind, a dict without text, a bad path.

    Example:
        >>> read = read_items(["Bled is in Slovenia.", {"text": "Lake Bled.", "source": "wiki/bled"}])
        >>> [p.text for p in read.passages], read.sources
        (['Bled is in Slovenia.', 'Lake Bled.'], ['wiki/bled'])
    """
    if isinstance(items, (str, dict, os.PathLike)) or _is_document(items):
        items = [items]
    chunker = chunker or word_chunker(max_words, overlap_words)
    unique: dict[str, Passage] = {}
    sources: dict[str, None] = {}
    folders: list[str] = []
    for number, item in enumerate(items):
        if isinstance(item, os.PathLike):
            sources.update(dict.fromkeys(corpus_sources(Path(item))))
            if Path(item).is_dir():
                folders.append(canonical_source(item))
        for passage in _passages(item, number, max_words, overlap_words, record_max_words, chunker):
            unique.setdefault(passage.id, passage)
            if passage.source != DEFAULT_SOURCE:
                sources.setdefault(passage.source)
    return ItemsRead(list(unique.values()), list(sources), folders)


def passages_from_items(
    items: Item | Iterable[Item], max_words: int = 200, overlap_words: int = 30,
    record_max_words: int = RECORD_MAX_WORDS, *, chunker: Chunker | None = None,
) -> list[Passage]:
    """The passages of :func:`read_items`.

    Example:
        >>> [p.text for p in passages_from_items(["Bled is in Slovenia.", {"text": "Lake Bled."}])]
        ['Bled is in Slovenia.', 'Lake Bled.']
    """
    return read_items(items, max_words, overlap_words, record_max_words, chunker=chunker).passages


def _is_document(item: object) -> bool:
    return hasattr(item, "page_content") and hasattr(item, "metadata")


def _passages(
    item: Item, number: int, max_words: int, overlap_words: int, record_max_words: int,
    chunker: Chunker,
) -> list[Passage]:
    where = f"item {number}"
    if isinstance(item, os.PathLike):
        return read_corpus(Path(item), max_words, overlap_words, record_max_words, chunker=chunker)
    if isinstance(item, str):
        record: dict[str, Any] = {"text": item}
    elif isinstance(item, dict):
        record = item
    elif _is_document(item):
        record = {**dict(item.metadata or {}), "text": item.page_content}
    else:
        raise CorpusFormatError(
            f"{where}: cannot index a {type(item).__name__}; give strings, dicts with 'text', "
            "LangChain Documents or pathlib.Path objects"
        )
    passage = passage_from_record(record, where, DEFAULT_SOURCE)
    if passage is None:
        return []
    if isinstance(item, dict):
        return split_long(passage, record, where, DEFAULT_SOURCE, max_words, overlap_words,
                          record_max_words)
    if chunker.fits(passage.text, passage.title):
        return [passage]
    return [
        p for chunk in chunker.chunks(passage.text, passage.title)
        if (p := passage_from_record({**record, "text": chunk}, where, DEFAULT_SOURCE)) is not None
    ]
