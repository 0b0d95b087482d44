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

import os
from collections.abc import Callable
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
"""Temporaries are named ``.tmp-{final name}-{writer's pid}`` beside the file they become."""


def temporary_name(path: Path) -> Path:
    """The temporary that this process writes ``path`` through."""
    return path.with_name(f"{TEMPORARY_PREFIX}{path.name}-{os.getpid()}")


def abandoned_temporaries(root: Path) -> list[Path]:
    """Temporaries in ``root`` whose writer is gone (its pid names no live process).

    A temporary a live process is still writing is not abandoned, and is kept: another
    process's (a server saving its PPR graph cache while ``gear index`` maintains the
    index), and this process's own (another thread of a server may be saving one while a
    document added through its page is maintained); every writer removes its own
    temporary when its write fails.

    Example:
        >>> abandoned_temporaries(Path("/nonexistent"))
        []
    """
    found = []
    for path in sorted(Path(root).glob(f"{TEMPORARY_PREFIX}*")):
        writer = path.name.rsplit("-", 1)[-1]
        if path.is_file() and (not writer.isdigit() or not _alive(int(writer))):
            found.append(path)
    return found


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
    temporary = temporary_name(path)
    try:
        write(temporary)
        with temporary.open("rb+") as handle:
            os.fsync(handle.fileno())
        digest = file_checksum(temporary)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    fsync_dir(path.parent)
    return digest


def verify(path: Path, checksum: str) -> bool:
    """Whether ``path`` exists and has this checksum."""
    try:
        return file_checksum(path) == checksum
    except OSError:
        return False
