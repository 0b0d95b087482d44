"""Replaying lost commits from what survives of a damaged database: its records that prove
themselves, with their vectors from the append-only vector files.

After a snapshot is restored (:func:`gear_agent.store.embedded.snapshot.restore`) the commits made
after it are gone when the WAL that held them could not be replayed (damaged, or already
folded into the damaged file by a checkpoint). Much of a damaged ``index.sqlite`` is
usually still readable, though, and each record proves itself: a passage or triple is
taken only when its CRC-32 matches (:mod:`gear_agent.store.embedded.records`), and its vector only
when the chunk of the vector file that holds it has the xxh3 checksum the damaged
database recorded for that chunk (the vector files are append-only: the rows of the lost
commits are still in them). Deletions of the lost commits are replayed by id from the
damaged database's ``dead`` table, and extraction marks likewise. What was replayed is
complete only when every row the damaged database's last commit counted is accounted for
(salvaged, or recorded dead); else the caller names the commits as lost.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gear_agent.store.base import IndexCorruptError
from gear_agent.store.embedded.db import DB_FILE
from gear_agent.store.embedded.records import (
    PASSAGE_COLUMNS,
    TRIPLE_COLUMNS,
    TRIPLE_FROM,
    passage_from_row,
    triple_from_row,
)
from gear_agent.store.embedded.vectors import VectorFile
from gear_agent.types import Passage, Triple


@dataclass(frozen=True)
class Salvaged:
    """What :func:`salvage` replayed."""

    passages: int
    triples: int
    deleted: int
    marked: int
    complete: bool
    """Every row the damaged database's last commit counted was replayed or recorded dead,
    and it holds every commit that was made."""
    generation: int
    """The last commit the damaged database still reads as."""

    def describe(self) -> str:
        return (f"{self.passages:,} passage(s), {self.triples:,} triple(s), {self.deleted:,} deletion(s), "
                f"{self.marked:,} extraction mark(s) from the damaged database's records (each record's and "
                "vector chunk's checksum matching)")


def salvage(root: Path, damaged: Path, work: Path, last_made: int) -> Salvaged | None:
    """Replay into the (restored) index at ``root`` what the damaged database ``damaged``
    (with its WAL beside it, if any) added after the restored commit and proves; None when
    there is nothing to replay or the damaged database cannot be read at all.

    ``work`` is a scratch folder (the damaged files are read from a copy there, so that the
    kept ones are never changed).
    """
    from gear_agent.embedding.base import NamedEmbedder
    from gear_agent.store.embedded.store import EmbeddedStore

    if not damaged.exists():
        return None
    copy = work / "salvage"
    copy.mkdir(exist_ok=True)
    for suffix in ("", "-wal"):
        if Path(f"{damaged}{suffix}").exists():
            shutil.copyfile(f"{damaged}{suffix}", copy / f"{DB_FILE}{suffix}")
    try:
        source = sqlite3.connect(copy / DB_FILE)
    except sqlite3.Error:
        return None
    try:
        store = None
        try:
            meta = dict(source.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.Error:
            return None
        model, dimension = meta.get("embedding_model"), int(meta.get("dimension", 0) or 0)
        if model is None or not dimension:
            return None
        tokenizers = json.loads(meta.get("tokenizers") or "[]") or ["standard"]  # opened as indexed: no postings added
        store = EmbeddedStore.open(root, NamedEmbedder(str(model), dimension), create=False, verify=False,
                                   tokenizer=tokenizers[0])
        with store.snapshot():
            have = {c: int(store.db.meta(f"rows:{c}", 0)) for c in ("passage", "triple", "node")}
            generation = store.generation()
        passages, p_vectors, extracted, p_rows = _passages(source, root, have["passage"], dimension)
        triples, t_vectors, t_rows = _triples(source, root, have["triple"], dimension)
        known = {p.id for p in passages} | set(store.passage_rows([t.passage_id for t in triples]))
        keep = [i for i, t in enumerate(triples) if t.passage_id in known]
        triples, t_vectors = [triples[i] for i in keep], t_vectors[keep]
        t_rows = [t_rows[i] for i in keep]
        deleted, marks = _deletions_and_marks(source, generation, have["passage"])
        if passages or triples:
            store.import_with_vectors(passages, p_vectors, extracted, triples, t_vectors)
        present = set(store.passage_rows(deleted)) if deleted else set()
        if present:
            store.passages.remove(sorted(present))
        if marks:
            unmarked = {p.id for p in store.passages.unextracted()}
            marks = [i for i in marks if i in unmarked]
        if marks:
            store.passages.mark_extracted(marks)
        held = int(meta.get("generation", 0))
        complete = (held >= last_made and int(meta.get("rows:node", 0)) == have["node"]
                    and _accounted(source, "passage", have["passage"], int(meta.get("rows:passage", 0)), p_rows)
                    and _accounted(source, "triple", have["triple"], int(meta.get("rows:triple", 0)), t_rows))
        return Salvaged(len(passages), len(triples), len(present), len(marks), complete, held)
    except (sqlite3.Error, IndexCorruptError):
        return None
    finally:
        source.close()
        if store is not None:
            store.close()


def _proven_rows(source: sqlite3.Connection, root: Path, collection: str, start: int,
                 dimension: int) -> dict[int, np.ndarray]:
    """The vector rows from ``start`` on whose chunk has the checksum the damaged database
    recorded for it."""
    rows: dict[int, np.ndarray] = {}
    file = VectorFile(root / f"{collection}.vec", dimension)
    try:
        chunks = source.execute("SELECT start, stop, checksum FROM chunks WHERE collection=? AND start >= ? "
                                "ORDER BY start", (collection, start)).fetchall()
    except sqlite3.Error:
        return rows
    for first, stop, checksum in chunks:
        if file.checksum(first, stop) != checksum:
            continue
        with file.path.open("rb") as handle:
            handle.seek(first * file.row_bytes)
            block = np.frombuffer(handle.read((stop - first) * file.row_bytes), dtype="<f4")
        for i, row in enumerate(range(first, stop)):
            rows[row] = block[i * dimension:(i + 1) * dimension]
    return rows


def _proven_records(source: sqlite3.Connection, sql: str, start: int, parse: Callable[[tuple], Any],
                    vectors: dict[int, np.ndarray]) -> tuple[list[Any], list[np.ndarray], list[tuple]]:
    """The rows from ``start`` (``sql``: the row number first) whose record parses and whose
    vector proved itself: the records, their vectors and each row's columns. A damaged page
    ends the read; what was read before it is kept."""
    found, rows, taken = [], [], []
    try:
        for columns in source.execute(sql, (start,)):
            try:
                record = parse(tuple(columns))
            except IndexCorruptError:
                continue
            if columns[0] in vectors:
                found.append(record)
                rows.append(vectors[columns[0]])
                taken.append(tuple(columns))
    except sqlite3.Error:
        pass  # a damaged page: what was read before it is kept
    return found, rows, taken


def _passages(source: sqlite3.Connection, root: Path, start: int,
              dimension: int) -> tuple[list[Passage], np.ndarray, list[bool], list[int]]:
    vectors = _proven_rows(source, root, "passage", start, dimension)
    found, rows, taken = _proven_records(
        source, f"SELECT {PASSAGE_COLUMNS}, extracted FROM passages WHERE row >= ? ORDER BY row", start,
        lambda columns: passage_from_row(columns[:-1], root), vectors)
    return found, _matrix(rows, dimension), [bool(c[-1]) for c in taken], [int(c[0]) for c in taken]


def _triples(source: sqlite3.Connection, root: Path, start: int,
             dimension: int) -> tuple[list[Triple], np.ndarray, list[int]]:
    vectors = _proven_rows(source, root, "triple", start, dimension)
    found, rows, taken = _proven_records(
        source, f"SELECT {TRIPLE_COLUMNS} FROM {TRIPLE_FROM} WHERE t.row >= ? ORDER BY t.row", start,
        lambda columns: triple_from_row(columns, root), vectors)
    return found, _matrix(rows, dimension), [int(c[0]) for c in taken]


def _matrix(rows: list[np.ndarray], dimension: int) -> np.ndarray:
    return np.stack(rows).astype(np.float32) if rows else np.zeros((0, dimension), dtype=np.float32)


def _deletions_and_marks(source: sqlite3.Connection, generation: int, rows: int) -> tuple[list[str], list[str]]:
    """Passage ids the damaged database deleted after ``generation``, and ids of passages the
    restored index holds (rows below ``rows``) that it marks extracted."""
    try:
        deleted = [i for (i,) in source.execute(
            "SELECT id FROM dead WHERE collection='passage' AND generation > ? AND id IS NOT NULL", (generation,))]
        marked = [i for (i,) in source.execute("SELECT id FROM passages WHERE extracted=1 AND row < ?", (rows,))]
    except sqlite3.Error:
        return [], []
    return deleted, marked


def _accounted(source: sqlite3.Connection, collection: str, start: int, stop: int, taken: list[int]) -> bool:
    """Whether every row in ``start..stop`` was replayed or is recorded dead."""
    if stop <= start:
        return True
    try:
        dead = {r for (r,) in source.execute("SELECT row FROM dead WHERE collection=? AND row >= ?", (collection, start))}
    except sqlite3.Error:
        return False
    return set(range(start, stop)) <= set(taken) | dead
