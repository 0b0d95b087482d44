"""The one place where the embedded store's low-level errors become the project's.

SQLite, the file system and the record decoders fail with their own exceptions
(``sqlite3.OperationalError: database is locked``, ``OSError: [Errno 28]``, ``ValueError:
mmap length is greater than file size``, ``UnicodeDecodeError`` of a damaged record).
:func:`translated` turns each into one line that says what happened to which file and
what to do: another writer holds the lock, the index is read-only, the disk is full, a
file is missing or damaged (``gear check``). Every SQL statement of the store runs through
:class:`gear_agent.store.embedded.db.Database` and every vector file access through
:class:`gear_agent.store.embedded.vectors.VectorFile`, both inside :func:`translated`.
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gear_agent.errors import GearError
from gear_agent.store.base import IndexCorruptError, StoreError

_FULL = (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC))
_READ_ONLY = (errno.EROFS, errno.EACCES, errno.EPERM)


def _writable(path: Path) -> bool:
    """Whether this process may write ``path`` (or create it in its folder)."""
    target = path if path.exists() else path.parent
    return os.access(target, os.W_OK) and os.access(path.parent, os.W_OK)


def _disk_full(path: Path) -> bool:
    try:
        usage = os.statvfs(path.parent if path.parent.exists() else path)
    except OSError:
        return False
    return usage.f_bavail * usage.f_frsize < (1 << 20)


def translate(exc: BaseException, path: Path) -> GearError | None:
    """The project's error for ``exc`` raised while using ``path``; None to let it pass."""
    path = Path(path)
    if isinstance(exc, GearError):
        return None
    if isinstance(exc, sqlite3.OperationalError):
        text = str(exc)
        if "locked" in text or "busy" in text:
            return StoreError(f"index at {path.parent} is locked by another writer ({text}); "
                              "wait for it to finish, or raise the lock timeout")
        if "readonly" in text or "read-only" in text:
            return StoreError(f"index at {path.parent} is read-only ({text}): it can be searched but "
                              f"not written to; check the permissions of {path}")
        if not _writable(path):
            return StoreError(f"index at {path.parent} cannot be opened: its folder is read-only ({text}), "
                              "and SQLite needs to write index.sqlite-shm beside the database even to "
                              f"read it; check the permissions of {path.parent}")
        if "full" in text or _disk_full(path):
            return StoreError(f"the disk holding {path.parent} is full ({text}); nothing of this "
                              "write was stored: free some space and run it again")
        if "disk I/O error" in text:
            return StoreError(f"{path} could not be read or written (disk I/O error); check the "
                              "disk, then run `gear check`")
    if isinstance(exc, sqlite3.DatabaseError):
        return IndexCorruptError(f"{path} cannot be read ({exc}); run `gear check`")
    if isinstance(exc, OSError):
        if exc.errno in _FULL:
            return StoreError(f"the disk holding {path.parent} is full ({exc.strerror}); nothing "
                              "of this write was stored: free some space and run it again")
        if exc.errno in _READ_ONLY:
            return StoreError(f"{path} is read-only ({exc.strerror}); check the permissions of "
                              f"{path.parent}")
        if exc.errno == errno.ENOENT:
            return IndexCorruptError(f"{path} is missing; run `gear check --repair` (it rebuilds "
                                     "vector files from the texts in index.sqlite)")
        if exc.errno == errno.ENOTDIR:
            return StoreError(f"{path.parent} is a file, not an index folder")
        return StoreError(f"{path}: {exc.strerror or exc}")
    if isinstance(exc, (UnicodeDecodeError, json.JSONDecodeError)):
        return IndexCorruptError(f"a record in {path} cannot be decoded ({exc}); run `gear check`")
    if isinstance(exc, ValueError) and "mmap" in str(exc):
        return IndexCorruptError(f"{path} is shorter than its committed rows (truncated); run "
                                 "`gear check --repair` (it rebuilds vector files from the texts)")
    return None


@contextmanager
def translated(path: Path) -> Iterator[None]:
    """Run the block; a low-level error becomes the project's one-line error (see module)."""
    try:
        yield
    except (sqlite3.Error, OSError, UnicodeDecodeError, ValueError) as exc:
        mapped = translate(exc, Path(path))
        if mapped is None:
            raise
        raise mapped from exc
