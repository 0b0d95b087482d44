"""Append-only, memory-mapped float32 vector files of the embedded store, checksummed.

Row ``i`` of ``passage.vec`` is the embedding of the passage whose ``row`` is ``i`` (the
same for triples and nodes): raw little-endian float32, ``dimension`` values a row, no
header. A write appends: it first cuts the file back to the committed rows (dropping
whatever an interrupted writer left after them), writes the new rows, flushes them to
disk, and only then does the SQLite transaction that records the new row count commit.
The committed count lives in SQLite, so a reader never looks past it, and a crash at any
moment leaves the committed rows intact.

Each append's xxh3 checksum is recorded beside it (table ``chunks``). Every chunk is
verified before its rows are used: when a store loads a commit, each file's size, mtime
and inode are compared with the *mark* its last writer (or last full verification)
recorded in SQLite; a file that is not as its writer left it has every committed chunk
verified (a full read), and one that is has only its newest chunk verified. A chunk that
fails is refused with a one-line error naming ``gear check --repair``, which re-embeds it
(or the whole file, when it is missing or truncated) from the texts in SQLite.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from gear_agent.store.base import IndexCorruptError
from gear_agent.store.derived_files import bytes_checksum, temporary_name
from gear_agent.store.embedded.db import Database
from gear_agent.store.embedded.errors import translated

logger = logging.getLogger(__name__)

DTYPE = np.dtype("<f4")
REBUILD_ROWS = 4096
"""Rows re-embedded (and checksummed as one chunk) per step of a whole-file rebuild."""

Progress = Callable[[str, int, int], None]


class VectorFile:
    """One collection's vector file: append rows, map the committed ones.

    Example:
        >>> import tempfile, pathlib
        >>> vf = VectorFile(pathlib.Path(tempfile.mkdtemp()) / "x.vec", 2)
        >>> _ = vf.append(0, np.ones((3, 2), dtype=np.float32))
        >>> vf.view(3).shape
        (3, 2)
    """

    def __init__(self, path: Path, dimension: int) -> None:
        self.path = Path(path)
        self.dimension = dimension
        self.row_bytes = dimension * DTYPE.itemsize
        self._map: np.ndarray = np.zeros((0, dimension), dtype=np.float32)

    def view(self, rows: int) -> np.ndarray:
        """The first ``rows`` rows, memory-mapped read-only (mapped again only when more
        rows are asked for than are mapped; threads may hold earlier views)."""
        mapped = self._map
        if rows > len(mapped):
            with translated(self.path):
                if self.stored_rows() < rows:
                    raise IndexCorruptError(
                        f"{self.path} holds fewer rows than the {rows} committed (truncated or "
                        "deleted); run `gear check --repair` (it rebuilds vector files from the texts)")
                # a plain ndarray over the mapping: numpy.memmap's subclass hooks cost more
                # than the gather itself on every fancy index
                mapped = np.asarray(np.memmap(self.path, dtype=DTYPE, mode="r", shape=(rows, self.dimension)))
            self._map = mapped
        return mapped[:rows]

    def forget(self) -> None:
        """Drop the mapping (after the file was replaced)."""
        self._map = np.zeros((0, self.dimension), dtype=np.float32)

    def append(self, start_row: int, vectors: np.ndarray) -> str:
        """Write ``vectors`` as rows ``start_row...`` and flush them; returns their checksum.

        The caller holds the write lock and commits the new row count afterwards.
        """
        payload = np.ascontiguousarray(vectors, dtype=DTYPE).reshape(-1, self.dimension).tobytes()
        with translated(self.path):
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                os.ftruncate(fd, start_row * self.row_bytes)
                os.pwrite(fd, payload, start_row * self.row_bytes)
                os.fsync(fd)
            finally:
                os.close(fd)
        return bytes_checksum(payload)

    def rewrite(self, start_row: int, vectors: np.ndarray) -> str:
        """Overwrite committed rows in place (repair only); returns their checksum."""
        payload = np.ascontiguousarray(vectors, dtype=DTYPE).reshape(-1, self.dimension).tobytes()
        with translated(self.path):
            fd = os.open(self.path, os.O_RDWR)
            try:
                os.pwrite(fd, payload, start_row * self.row_bytes)
                os.fsync(fd)
            finally:
                os.close(fd)
        self.forget()
        return bytes_checksum(payload)

    def checksum(self, start: int, stop: int) -> str | None:
        """Checksum of rows ``start..stop`` as stored now (None when the file is too short
        or cannot be read)."""
        length = (stop - start) * self.row_bytes
        try:
            with self.path.open("rb") as handle:
                handle.seek(start * self.row_bytes)
                payload = handle.read(length)
        except OSError:
            return None
        if len(payload) != length:
            return None
        return bytes_checksum(payload)

    def stored_rows(self) -> float:
        """Rows the file holds now (fractional when a write was cut short; 0 for a file of
        no dimension, which holds no rows)."""
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return 0.0
        return size / self.row_bytes if self.row_bytes > 0 else 0.0

    def mark(self) -> str | None:
        """``size mtime_ns inode`` of the file now (None when it is missing)."""
        try:
            st = self.path.stat()
        except OSError:
            return None
        return f"{st.st_size} {st.st_mtime_ns} {st.st_ino}"


class CheckedVectors:
    """A :class:`VectorFile` with its chunk checksums and verification mark in SQLite.

    Args:
        db: The index's database (the caller runs writes inside its transaction).
        root: The index folder.
        collection: ``passage``, ``triple`` or ``node`` (the file is ``{collection}.vec``).
        dimension: Floats per row.
    """

    def __init__(self, db: Database, root: Path, collection: str, dimension: int) -> None:
        self.db, self.collection, self.dimension = db, collection, dimension
        self.file = VectorFile(Path(root) / f"{collection}.vec", dimension)
        self._verified: tuple[str | None, int] = (None, -1)  # (mark, rows) verified in this process
        self.full_reads = 0
        """How many times this process verified every chunk (the file was not as its
        writer left it)."""

    @property
    def path(self) -> Path:
        return self.file.path

    def committed_rows(self) -> int:
        return int(self.db.meta(f"rows:{self.collection}", 0))

    def view(self, rows: int) -> np.ndarray:
        return self.file.view(rows)

    # ---- writes (inside the caller's transaction) -----------------------------------
    def append(self, vectors: np.ndarray) -> range:
        """Append ``vectors`` after the committed rows, record the chunk and the new row
        count; returns the rows they got."""
        start = self.committed_rows()
        checksum = self.file.append(start, vectors)
        stop = start + len(vectors)
        self.db.run("INSERT OR REPLACE INTO chunks(collection, start, stop, checksum) VALUES (?, ?, ?, ?)",
                    (self.collection, start, stop, checksum))
        self.db.set_meta(f"rows:{self.collection}", stop)
        self._record_mark(stop, trusted=self._verified[1] >= start or start == 0)
        return range(start, stop)

    def _record_mark(self, rows: int, trusted: bool) -> None:
        """Record the file as this writer left it; trusted only when what came before was
        verified (else the next reader verifies everything)."""
        mark = self.file.mark()
        self.db.set_meta(f"vecmark:{self.collection}", f"{mark} {rows}" if trusted and mark else "")
        if trusted:
            self._verified = (mark, rows)

    # ---- verification ---------------------------------------------------------------
    def chunks(self, rows: int | None = None) -> list[tuple[int, int, str]]:
        limit = self.committed_rows() if rows is None else rows
        return [(a, b, c) for a, b, c in self.db.rows(
            "SELECT start, stop, checksum FROM chunks WHERE collection=? ORDER BY start", (self.collection,))
            if b <= limit]

    def bad_chunks(self, rows: int | None = None) -> list[tuple[int, int]]:
        """Chunks (start, stop) that fail their checksum, do not follow each other, or leave
        committed rows uncovered (a full read of the file)."""
        rows = self.committed_rows() if rows is None else rows
        bad, covered = [], 0
        for start, stop, checksum in self.chunks(rows):
            if start != covered or self.file.checksum(start, stop) != checksum:
                bad.append((start, stop))
            covered = max(covered, stop)
        if covered < rows:
            bad.append((covered, rows))
        return bad

    def ensure_verified(self, rows: int) -> None:
        """Verify the committed ``rows`` before they are used (see the module docstring).

        Raises:
            IndexCorruptError: the file is shorter than its rows, or a chunk fails.
        """
        if rows <= 0:
            return
        if self.file.stored_rows() < rows:
            raise IndexCorruptError(
                f"{self.path} holds fewer rows than the {rows} committed (truncated or deleted); "
                "run `gear check --repair` (it rebuilds vector files from the texts in index.sqlite)")
        mark = self.file.mark()
        if self._verified == (mark, rows):
            return
        if self.trusted_rows(mark) >= rows:  # as its writer left it: the newest chunk only
            bad = [(a, b) for a, b, c in self.chunks(rows)[-1:] if self.file.checksum(a, b) != c]
        else:
            bad = self.bad_chunks(rows)
            self.full_reads += 1
        if bad:
            start, stop = bad[0]
            raise IndexCorruptError(
                f"{self.path} rows {start}..{stop} fail their checksum ({len(bad)} chunk(s) damaged); "
                "run `gear check --repair` (it re-embeds them from the texts in index.sqlite)")
        self._verified = (mark, rows)

    def trusted_rows(self, mark: str | None) -> int:
        """Rows the recorded mark vouches for when the file's mark is ``mark`` (else -1)."""
        recorded = str(self.db.meta(f"vecmark:{self.collection}", "") or "")
        if mark is None or not recorded.startswith(f"{mark} "):
            return -1
        return int(recorded.rsplit(" ", 1)[1])

    def record_verified(self) -> None:
        """After a full verification: record the file's mark (inside a transaction)."""
        self._record_mark(self.committed_rows(), trusted=True)

    # ---- repair ---------------------------------------------------------------------
    def rewrite_chunk(self, start: int, stop: int, vectors: np.ndarray) -> None:
        """Overwrite rows ``start..stop`` in place and record their new checksum."""
        checksum = self.file.rewrite(start, vectors)
        self.db.run("UPDATE chunks SET checksum=? WHERE collection=? AND start=?", (checksum, self.collection, start))

    def rebuild_file(self, rows: int, blocks: Iterator[np.ndarray], progress: Progress | None = None) -> None:
        """Write the whole file again from ``blocks`` (rows in order, :data:`REBUILD_ROWS` a
        block), with one chunk per block; in the caller's transaction."""
        report = progress or (lambda stage, done, total: None)
        temporary = temporary_name(self.path)
        fresh = VectorFile(temporary, self.dimension)
        chunks, done = [], 0
        report(f"re-embed {self.collection} vectors", 0, rows)
        try:
            for block in blocks:
                checksum = fresh.append(done, block)
                chunks.append((done, done + len(block), checksum))
                done += len(block)
                report(f"re-embed {self.collection} vectors", done, rows)
            if done != rows:
                raise IndexCorruptError(f"rebuilding {self.path}: {done} rows written of {rows}")
            self.db.run("DELETE FROM chunks WHERE collection=?", (self.collection,))
            self.db.run_many("INSERT INTO chunks(collection, start, stop, checksum) VALUES (?, ?, ?, ?)",
                             [(self.collection, a, b, c) for a, b, c in chunks])
            with translated(self.path):
                os.replace(temporary, self.path)
        finally:
            temporary.unlink(missing_ok=True)
        self.file.forget()
        self._record_mark(rows, trusted=True)

