"""How passages and triples are stored as SQLite rows, each with a CRC-32 of its fields.

A record's checksum is verified whenever it is read (:func:`passage_from_row`,
:func:`triple_from_row`): an edited or damaged record is refused with a one-line error
naming it and ``gear check``, never returned.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gear_agent.filters import flatten_metadata
from gear_agent.store.base import IndexCorruptError
from gear_agent.types import Passage, Triple

_SEP = "\x1f"
PASSAGE_COLUMNS = "row, id, title, text, source, metadata, crc"
TRIPLE_COLUMNS = "t.row, t.id, t.subject, t.predicate, t.object, p.id, t.crc"
TRIPLE_FROM = "triples t JOIN passages p ON p.row = t.passage_row"


def metadata_json(metadata: Mapping[str, Any]) -> str:
    """The stored form of a passage's metadata (NaN and infinity are refused: not JSON)."""
    return json.dumps(dict(metadata), ensure_ascii=False, sort_keys=True, allow_nan=False)


def passage_crc(p: Passage, meta_json: str) -> int:
    return zlib.crc32(_SEP.join((p.id, p.title, p.text, p.source, meta_json)).encode("utf-8"))


def triple_crc(t: Triple) -> int:
    return zlib.crc32(_SEP.join((t.id, t.subject, t.predicate, t.object, t.passage_id)).encode("utf-8"))


def passage_text(title: str, text: str) -> str:
    """What is embedded and BM25-indexed of a passage (:attr:`Passage.content`)."""
    return f"{title}\n{text}" if title else text


def triple_text(subject: str, predicate: str, obj: str) -> str:
    """What is embedded and BM25-indexed of a triple (:attr:`Triple.text`)."""
    return f"{subject} {predicate} {obj}"


def passage_from_row(row: tuple[Any, ...], where: Path) -> Passage:
    """A :class:`Passage` from ``SELECT {PASSAGE_COLUMNS}``, its checksum verified."""
    _, pid, title, text, source, meta_json, crc = row
    try:
        metadata = json.loads(meta_json) if meta_json != "{}" else {}
        passage = Passage(pid, title, text, source, metadata)
        valid = passage_crc(passage, meta_json) == crc
    except (TypeError, ValueError, AttributeError) as exc:  # a damaged page: values of another type
        raise IndexCorruptError(f"passage {pid!r} in {where} cannot be decoded ({exc}); run `gear check`") from exc
    if not valid:
        raise IndexCorruptError(
            f"passage {pid} in {where} fails its checksum (edited or damaged on disk); "
            "run `gear check` and re-index it"
        )
    return passage


def triple_from_row(row: tuple[Any, ...], where: Path) -> Triple:
    """A :class:`Triple` from ``SELECT {TRIPLE_COLUMNS} FROM {TRIPLE_FROM}``, checksum verified."""
    _, tid, subject, predicate, obj, pid, crc = row
    triple = Triple(tid, subject, predicate, obj, pid)
    try:
        valid = triple_crc(triple) == crc
    except (TypeError, AttributeError) as exc:
        raise IndexCorruptError(f"triple {tid!r} in {where} cannot be decoded ({exc}); run `gear check`") from exc
    if not valid:
        raise IndexCorruptError(
            f"triple {tid} in {where} fails its checksum (edited or damaged on disk); run `gear check`"
        )
    return triple


def meta_rows(row: int, metadata: Mapping[str, Any]) -> list[tuple[str, Any, int]]:
    """``passage_meta`` rows of one passage: one per (dotted key, scalar value)."""
    return [(key, int(value) if isinstance(value, bool) else value, row)
            for key, value in flatten_metadata(metadata)]
