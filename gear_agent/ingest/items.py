"""Passages from what a Python caller has at hand: strings, dicts, LangChain Documents, paths."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gear_agent.ingest.corpus import (
    RECORD_MAX_WORDS,
    CorpusFormatError,
    passage_from_record,
    read_corpus,
    split_long,
)
from gear_agent.text.chunking import chunk_text
from gear_agent.types import Passage

Item = str | dict[str, Any] | os.PathLike[str] | Any
"""A string (the text), a dict (``title``, ``text``, any other keys kept as metadata), a
LangChain ``Document`` (``page_content``; ``metadata`` kept, ``title``/``source`` read from it),
or a path (``pathlib.Path``: a corpus file or a folder, as ``gear index`` reads them)."""

DEFAULT_SOURCE = "python"
"""Source of passages given as strings, dicts or Documents without a ``source``."""


def passages_from_items(
    items: Item | Iterable[Item], max_words: int = 200, overlap_words: int = 30,
    record_max_words: int = RECORD_MAX_WORDS,
) -> list[Passage]:
    """The passages of ``items`` (one item or an iterable of them), duplicates once.

    Strings and Documents longer than ``max_words`` are split into chunks like the text
    files of a folder (title kept, one passage per chunk), dicts (records) only beyond
    ``record_max_words``; a path is read as ``gear index`` reads it. A plain string is always text, never a path: pass
    ``pathlib.Path("corpus.json")`` for a file.

    Raises:
        CorpusFormatError: an item of no supported kind, a dict without text, a bad path.

    Example:
        >>> [p.text for p in passages_from_items(["Bled is in Slovenia.", {"text": "Lake Bled."}])]
        ['Bled is in Slovenia.', 'Lake Bled.']
    """
    if isinstance(items, (str, dict, os.PathLike)) or _is_document(items):
        items = [items]
    unique: dict[str, Passage] = {}
    for number, item in enumerate(items):
        for passage in _passages(item, number, max_words, overlap_words, record_max_words):
            unique.setdefault(passage.id, passage)
    return list(unique.values())


def _is_document(item: object) -> bool:
    return hasattr(item, "page_content") and hasattr(item, "metadata")


def _passages(
    item: Item, number: int, max_words: int, overlap_words: int, record_max_words: int
) -> list[Passage]:
    where = f"item {number}"
    if isinstance(item, os.PathLike):
        return read_corpus(Path(item), max_words, overlap_words, record_max_words)
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
    if len(passage.text.split()) <= max_words:
        return [passage]
    chunks = chunk_text(passage.text, max_words, overlap_words)
    return [
        p for chunk in chunks
        if (p := passage_from_record({**record, "text": chunk}, where, DEFAULT_SOURCE)) is not None
    ]
