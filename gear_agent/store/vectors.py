"""Append-only, memory-mapped float32 vector files of the embedded store.

Row ``i`` of ``passage.vec`` is the embedding of the passage whose ``row`` is ``i`` (the
same for triples): raw little-endian float32, ``dimension`` values a row, no header. A
write appends: it first cuts the file back to the committed rows (dropping whatever an
interrupted writer left after them), writes the new rows, flushes them to disk, and only
then does the SQLite transaction that records the new row count commit. The committed
count lives in SQLite, so a reader never looks past it, and a crash at any moment leaves
the committed rows intact. Each append's checksum is recorded beside it (table ``chunks``)
and verified by ``gear check`` (and the newest chunk at every open).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from gear_agent.store.derived_files import bytes_checksum

DTYPE = np.dtype("<f4")


class VectorFile:
    """One collection's vectors: append rows, map the committed ones.

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
        self._map: np.ndarray | None = None
        self._mapped_rows = -1

    def view(self, rows: int) -> np.ndarray:
        """The first ``rows`` rows, memory-mapped read-only (remapped when ``rows`` changes)."""
        if rows != self._mapped_rows:
            if rows == 0:
                self._map = np.zeros((0, self.dimension), dtype=np.float32)
            else:
                # a plain ndarray over the mapping: numpy.memmap's subclass hooks cost more
                # than the gather itself on every fancy index
                self._map = np.asarray(
                    np.memmap(self.path, dtype=DTYPE, mode="r", shape=(rows, self.dimension))
                )
            self._mapped_rows = rows
        assert self._map is not None
        return self._map

    def append(self, start_row: int, vectors: np.ndarray) -> str:
        """Write ``vectors`` as rows ``start_row...`` and flush them; returns their checksum.

        The caller holds the write lock and commits the new row count afterwards.
        """
        data = np.ascontiguousarray(vectors, dtype=DTYPE).reshape(-1, self.dimension)
        payload = data.tobytes()
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
        data = np.ascontiguousarray(vectors, dtype=DTYPE).reshape(-1, self.dimension)
        payload = data.tobytes()
        fd = os.open(self.path, os.O_RDWR)
        try:
            os.pwrite(fd, payload, start_row * self.row_bytes)
            os.fsync(fd)
        finally:
            os.close(fd)
        self._mapped_rows = -1
        return bytes_checksum(payload)

    def checksum(self, start: int, stop: int) -> str | None:
        """Checksum of rows ``start..stop`` as stored now (None when the file is too short)."""
        length = (stop - start) * self.row_bytes
        try:
            with self.path.open("rb") as handle:
                handle.seek(start * self.row_bytes)
                payload = handle.read(length)
        except FileNotFoundError:
            return None
        if len(payload) != length:
            return None
        return bytes_checksum(payload)

    def stored_rows(self) -> float:
        """Rows the file holds now (fractional when a write was cut short)."""
        try:
            return self.path.stat().st_size / self.row_bytes
        except FileNotFoundError:
            return 0.0
