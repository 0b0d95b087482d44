"""Checksummed, atomically written files for derived caches (ANN indexes, graph caches).

A derived file can always be rebuilt from the primary data, so the rules are simple:
write it under a temporary name, flush it, rename it into place, and keep its checksum
(xxh3-64 of the bytes) wherever the caller records which file is current; when a later
read finds a missing file or another checksum, the cache is rebuilt, never trusted.

Example:
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> digest = write_atomically(folder / "cache.bin", lambda p: p.write_bytes(b"abc"))
    >>> verify(folder / "cache.bin", digest)
    True
"""

from __future__ import annotations

import fcntl
import os
import re
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import xxhash

_CHUNK = 1 << 22

PPR_GRAPH_FILE = "ppr-graph.npz"
"""The PPR graph cache's base file in an embedded index's folder (its manifest is the same
name with ``.json``); named here, below both the graph code and ``gear check``."""


def file_checksum(path: Path) -> str:
    """xxh3-64 of the file's bytes, as 16 hex digits."""
    digest = xxhash.xxh3_64()
    with Path(path).open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def bytes_checksum(data: bytes | memoryview) -> str:
    """xxh3-64 of ``data``, as 16 hex digits."""
    return xxhash.xxh3_64_hexdigest(data)


def fsync_dir(path: Path) -> None:
    """Flush a directory entry (a rename or a new file) to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


TEMPORARY_PREFIX = ".tmp-"
"""Temporaries are named ``.tmp-{final name}-{writer's pid}-{random token}`` beside the
file they become: the pid says whose it is, the token keeps two writes of one process (two
threads saving the same cache) apart."""
_WRITER = re.compile(r"-(\d+)(?:-[0-9a-f]{8})?$")
"""The writer's pid at the end of a temporary's name (names before the token had none)."""


def temporary_name(path: Path) -> Path:
    """A temporary for this process to write ``path`` through, its own: a new name each call."""
    return path.with_name(f"{TEMPORARY_PREFIX}{path.name}-{os.getpid()}-{secrets.token_hex(4)}")


@contextmanager
def owned_temporary(path: Path) -> Iterator[Path]:
    """A temporary for ``path`` that this process owns while the block runs: named by
    :func:`temporary_name` and held under an exclusive ``flock``, which another process's
    cleanup tests, so it is never taken for abandoned (not even by a process that cannot see
    this pid: another PID namespace, a container sharing the folder). Removed at the end
    unless the block renamed it into place.

    Example:
        >>> with owned_temporary(Path(tempfile.mkdtemp()) / "cache.bin") as tmp:  # doctest: +SKIP
        ...     tmp.write_bytes(b"abc")
    """
    while True:
        temporary = temporary_name(Path(path))
        fd = os.open(temporary, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:  # a cleanup may have removed it between its creation and the lock: another name then
            if os.stat(temporary).st_ino == os.fstat(fd).st_ino:
                break
        except FileNotFoundError:
            pass
        os.close(fd)
    try:
        yield temporary
    finally:
        temporary.unlink(missing_ok=True)
        os.close(fd)


def abandoned_temporaries(root: Path) -> list[Path]:
    """Temporaries in ``root`` whose writer is gone: no live process has the pid in its name,
    and no process holds its lock (:func:`owned_temporary`).

    A temporary a live process is still writing is not abandoned, and is kept: another
    process's (a server saving its PPR graph cache while ``gear index`` maintains the
    index, two ``gear eval`` runs over one index), and this process's own (another thread
    of a server may be saving one while a document added through its page is maintained);
    every writer removes its own temporary when its write fails.

    Example:
        >>> abandoned_temporaries(Path("/nonexistent"))
        []
    """
    return [path for path in sorted(Path(root).glob(f"{TEMPORARY_PREFIX}*"))
            if path.is_file() and not _owned(path)]


def remove_abandoned_temporaries(root: Path) -> list[Path]:
    """Remove the temporaries of :func:`abandoned_temporaries`, each under its lock (a writer
    that locks it later sees it gone and takes another name); returns those removed."""
    removed = []
    for path in abandoned_temporaries(root):
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            path.unlink(missing_ok=True)
            removed.append(path)
        except BlockingIOError:  # its writer locked it since
            pass
        finally:
            os.close(fd)
    return removed


def _owned(path: Path) -> bool:
    """Whether a live writer owns the temporary: its pid is alive, or its lock is held."""
    found = _WRITER.search(path.name)
    if found is not None and _alive(int(found.group(1))):
        return True
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return True  # gone already: nothing to remove
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # releases a lock taken here
    return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, under another user
        return True
    return True


def write_atomically(path: Path, write: Callable[[Path], None]) -> str:
    """Have ``write(temporary)`` write the file, then flush and rename it to ``path``.

    Returns:
        The checksum of what was written (see :func:`verify`).
    """
    path = Path(path)
    with owned_temporary(path) as temporary:
        write(temporary)
        with temporary.open("rb+") as handle:
            os.fsync(handle.fileno())
        digest = file_checksum(temporary)
        os.replace(temporary, path)
    fsync_dir(path.parent)
    return digest


def verify(path: Path, checksum: str) -> bool:
    """Whether ``path`` exists and has this checksum."""
    try:
        return file_checksum(path) == checksum
    except OSError:
        return False
