"""The SQLite half of the embedded store: schema, connection, records and their checksums.

One file, ``index.sqlite``, in WAL mode (readers are never blocked by the writer, a
crash rolls back to the last commit) with ``synchronous=FULL`` (a commit is on disk when
it returns). It holds every record, the ``row`` of each record's vector in the vector
files, the entity ids of each triple (so neighbours are an indexed lookup), metadata in
a key/value table indexed for filters, the BM25 vocabulary and segments
(:mod:`gear_agent.store.postings`), the vector chunks' checksums and the manifest (table
``meta``). Each record carries a CRC-32 of its fields, checked whenever it is read.
"""

from __future__ import annotations

import json
import sqlite3
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gear_agent.errors import GearError
from gear_agent.filters import flatten_metadata
from gear_agent.types import Passage, Triple

DB_FILE = "index.sqlite"
WAL_AUTOCHECKPOINT_PAGES = 65_536
"""Checkpoint the WAL into the database file every 256 MiB of WAL (SQLite's default is
4 MiB): a checkpoint writes each page changed since the last one once, however many
commits changed it. The store checkpoints fully at the end of an indexing run
(:meth:`EmbeddedStore.maintain`)."""
FORMAT_VERSION = 2
_SEP = "\x1f"

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value);
CREATE TABLE IF NOT EXISTS passages(
  row INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, title TEXT NOT NULL, text TEXT NOT NULL,
  source TEXT NOT NULL, metadata TEXT NOT NULL, extracted INTEGER NOT NULL DEFAULT 0,
  crc INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS passages_source ON passages(source);
CREATE INDEX IF NOT EXISTS passages_title ON passages(title);
CREATE INDEX IF NOT EXISTS passages_unextracted ON passages(row) WHERE extracted = 0;
CREATE TABLE IF NOT EXISTS passage_meta(key TEXT NOT NULL, value, row INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS passage_meta_key ON passage_meta(key, value, row);
CREATE INDEX IF NOT EXISTS passage_meta_row ON passage_meta(row);
CREATE TABLE IF NOT EXISTS entities(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS triples(
  row INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, subject TEXT NOT NULL,
  predicate TEXT NOT NULL, object TEXT NOT NULL, passage_row INTEGER NOT NULL,
  head INTEGER NOT NULL, tail INTEGER NOT NULL, crc INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS triples_passage ON triples(passage_row, row);
CREATE INDEX IF NOT EXISTS triples_head ON triples(head, row);
CREATE INDEX IF NOT EXISTS triples_tail ON triples(tail, row);
CREATE TABLE IF NOT EXISTS dead(collection TEXT NOT NULL, row INTEGER NOT NULL,
  PRIMARY KEY(collection, row)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS chunks(collection TEXT NOT NULL, start INTEGER NOT NULL,
  stop INTEGER NOT NULL, checksum TEXT NOT NULL, PRIMARY KEY(collection, start)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS terms(id INTEGER PRIMARY KEY, collection TEXT NOT NULL,
  tokenizer TEXT NOT NULL, term TEXT NOT NULL, df INTEGER NOT NULL,
  UNIQUE(collection, tokenizer, term));
CREATE TABLE IF NOT EXISTS segments(id INTEGER PRIMARY KEY, collection TEXT NOT NULL,
  tokenizer TEXT NOT NULL, level INTEGER NOT NULL, postings INTEGER NOT NULL,
  term_ids BLOB NOT NULL, offsets BLOB NOT NULL, rows BLOB NOT NULL, tfs BLOB NOT NULL,
  lens BLOB NOT NULL, checksum TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS segments_level ON segments(collection, tokenizer, level);
"""


MMAP_BYTES = 1 << 32
"""SQLite reads the database through a memory map of up to this many bytes (``PRAGMA
mmap_size``) instead of a ``read`` call per 4 KiB page: the first BM25 query of a freshly
opened 100k-passage index reads its postings segments (about 150 MB) from a cold disk in a
fraction of the time (a cold open to the first query went from 3.8-4.9 s to 2.0-2.3 s;
``benchmarks/scale.py``). SQLite's caveat is a process killed by SIGBUS if another process
shrinks the file while it is mapped; nothing in this project shrinks it (no VACUUM; WAL
checkpoints truncate only the WAL file)."""


class IndexCorruptError(GearError, RuntimeError):
    """An index cannot be read as it is; the message names what is wrong and what to do."""


def connect(path: Path, timeout_s: float, readonly: bool = False) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are begun explicitly), WAL, FULL sync."""
    if readonly:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=timeout_s,
                             isolation_level=None, check_same_thread=False)
    else:
        db = sqlite3.connect(path, timeout=timeout_s, isolation_level=None, check_same_thread=False)
    try:
        if not readonly:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(f"PRAGMA wal_autocheckpoint={WAL_AUTOCHECKPOINT_PAGES}")
        db.execute("PRAGMA synchronous=FULL")
        db.execute("PRAGMA foreign_keys=OFF")
        db.execute("PRAGMA cache_size=-65536")
        db.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
    except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:  # a damaged header or schema text
        db.close()
        raise IndexCorruptError(f"{path} cannot be opened as an SQLite index ({exc}); run `gear check`") from exc
    return db


def get_meta(db: sqlite3.Connection, key: str, default: Any = None) -> Any:
    row = db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
    return default if row is None else row[0]


def set_meta(db: sqlite3.Connection, key: str, value: Any) -> None:
    db.execute(
        "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value",
        (key, value),
    )


def metadata_json(metadata: Mapping[str, Any]) -> str:
    return json.dumps(dict(metadata), ensure_ascii=False, sort_keys=True, allow_nan=False)


def passage_crc(p: Passage, meta_json: str) -> int:
    return zlib.crc32(_SEP.join((p.id, p.title, p.text, p.source, meta_json)).encode("utf-8"))


def triple_crc(t: Triple) -> int:
    return zlib.crc32(_SEP.join((t.id, t.subject, t.predicate, t.object, t.passage_id)).encode("utf-8"))


PASSAGE_COLUMNS = "row, id, title, text, source, metadata, crc"


def passage_from_row(row: tuple[Any, ...], where: Path) -> Passage:
    """A :class:`Passage` from ``SELECT {PASSAGE_COLUMNS}``, its checksum verified."""
    _, pid, title, text, source, meta_json, crc = row
    passage = Passage(pid, title, text, source, json.loads(meta_json) if meta_json != "{}" else {})
    if passage_crc(passage, meta_json) != crc:
        raise IndexCorruptError(
            f"passage {pid} in {where} fails its checksum (edited or damaged on disk); "
            "run `gear check` and re-index it"
        )
    return passage


TRIPLE_COLUMNS = "t.row, t.id, t.subject, t.predicate, t.object, p.id, t.crc"
TRIPLE_FROM = "triples t JOIN passages p ON p.row = t.passage_row"


def triple_from_row(row: tuple[Any, ...], where: Path) -> Triple:
    """A :class:`Triple` from ``SELECT {TRIPLE_COLUMNS} FROM {TRIPLE_FROM}``, checksum verified."""
    _, tid, subject, predicate, obj, pid, crc = row
    triple = Triple(tid, subject, predicate, obj, pid)
    if triple_crc(triple) != crc:
        raise IndexCorruptError(
            f"triple {tid} in {where} fails its checksum (edited or damaged on disk); run `gear check`"
        )
    return triple


def meta_rows(row: int, metadata: Mapping[str, Any]) -> list[tuple[str, Any, int]]:
    """``passage_meta`` rows of one passage: one per (dotted key, scalar value)."""
    return [(key, value, row) for key, value in flatten_metadata(metadata)]
