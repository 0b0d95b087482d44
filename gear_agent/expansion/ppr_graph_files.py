"""The PPR graph on disk: a base file, appended delta files, and a checksummed manifest.

A graph saved at ``ppr-graph.npz`` is:

* ``ppr-graph.npz``: the **base** segment, everything up to its save;
* ``ppr-graph.1.npz``, ``ppr-graph.2.npz``, ...: **delta** segments, one per update that
  changed something: only the vertices, phrases (with their vectors), triple ids (with the
  vertices each joins) and edge rows that update added, so a write costs what the batch
  added, not the graph; a delta after a removal also lists the passage and triple ids
  removed, which the reader takes out (as the graph did in memory, numbering the vertices
  again) before the delta's own rows. Why a delta and not a new base: the base holds every
  phrase vector (336 MB at 20k passages, 1.7 GB at 100k), so rewriting it made a delete
  of 1,000 passages cost the whole graph's bytes; the delta costs the ids removed. A
  removal that follows adds not yet saved makes the next save a base (those rows are
  numbered as before the removal);
* ``ppr-graph.phrases.hnsw``: the phrase ANN (large graphs only, a usearch index), as of the
  base (a reader takes out the rows of phrases removed since: their rows are named ``""``); not named ``.usearch``, which the store's maintenance treats as its own stray parts;
* ``ppr-graph.json``: the **manifest**: format, embedding model, synonym threshold, the
  store state the graph reflects (its **stamp**: index id, generation, commit digest,
  :class:`~gear_agent.store.changes.Stamp`), and each file with its xxh3 checksum
  (:mod:`gear_agent.store.derived_files`);
* ``ppr-graph.lock``: held (``flock``) by a process while it saves, so two processes
  saving over one index never interleave their files.

Every file is written atomically and the manifest last, so a crash leaves the previous
graph readable. A manifest of format 3 (before stamps) is still read: its graph has no
stamp, so the next update compares it with the store instead of trusting it. The graph is derived data: a file that is missing or fails its checksum
makes the reader raise ValueError and the caller rebuild from the store, never trust it;
a phrase ANN that fails is rebuilt from the phrase vectors and saved again.
After :data:`MAX_DELTAS` deltas the next save rewrites the base (compaction).
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from gear_agent.store.derived_files import verify, write_atomically

FORMAT_VERSION = 5
"""5: each segment holds ``triple_ends`` (per triple: head, tail and passage vertex), so a
graph read back takes removals in place; a removed phrase's row is named ``""``. 4: the
manifest records the stamp of the store state the graph reflects (3: its generation only).
Formats 3 and 4 are still read: such a graph rebuilds at its first removal (and has no
stamp in format 3)."""
READABLE_VERSIONS = (3, 4, FORMAT_VERSION)
MAX_DELTAS = 16
"""Delta segments after which a save rewrites the base."""


def manifest_path(path: Path) -> Path:
    return Path(path).with_suffix(".json")


def delta_path(path: Path, number: int) -> Path:
    path = Path(path)
    return path.with_name(f"{path.stem}.{number}{path.suffix}")


def ann_path(path: Path) -> Path:
    path = Path(path)
    return path.with_name(f"{path.stem}.phrases.hnsw")  # not .usearch: the store owns those


def write_segment(path: Path, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> str:
    """Write one segment (JSON ``meta`` and arrays) atomically; its checksum."""

    def write(target: Path) -> None:
        with target.open("wb") as out:
            np.savez(
                out,
                meta=np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8),
                **arrays,
            )

    return write_atomically(path, write)


def read_segment(path: Path, checksum: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """A segment written by :func:`write_segment`, checked against ``checksum``.

    Raises:
        ValueError: The file is missing, fails its checksum or cannot be read.
    """
    if not verify(Path(path), checksum):  # streamed: the file is not held twice
        raise ValueError(f"{path} is missing or fails its checksum")
    try:
        with np.load(Path(path), allow_pickle=False) as loaded:
            arrays = {name: loaded[name] for name in loaded.files}
        meta = json.loads(arrays.pop("meta").tobytes().decode("utf-8"))
    except (KeyError, ValueError, OSError) as exc:
        raise ValueError(f"{path} is not a PPR graph segment: {exc}") from exc
    return meta, arrays


def read_manifest(path: Path) -> dict[str, Any]:
    """The manifest of the graph saved at ``path``.

    Raises:
        ValueError: No manifest, an unreadable one, or another format version.
    """
    target = manifest_path(path)
    try:
        manifest = json.loads(target.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path} is not a saved PPR graph (manifest {target.name}: {exc})") from exc
    if manifest.get("format_version") not in READABLE_VERSIONS:
        raise ValueError(
            f"{path}: graph format {manifest.get('format_version')}, expected {FORMAT_VERSION}"
        )
    return manifest


def lock_path(path: Path) -> Path:
    return Path(path).with_suffix(".lock")


@contextmanager
def saving(path: Path) -> Iterator[None]:
    """Hold the graph's save lock (``flock`` on ``ppr-graph.lock``) for the block: one
    process saves at a time, so a delta is appended only to the manifest its writer read."""
    fd = os.open(lock_path(path), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def write_manifest(path: Path, manifest: dict[str, Any]) -> None:
    """Write the manifest atomically (after the files it lists)."""
    text = json.dumps({**manifest, "format_version": FORMAT_VERSION}, indent=1)
    write_atomically(manifest_path(path), lambda p: p.write_text(text, encoding="utf-8"))


def ann_is_valid(path: Path, entry: dict[str, Any] | None) -> bool:
    """Whether the manifest's phrase-ANN entry names a file with its checksum."""
    return bool(entry) and verify(Path(path).with_name(entry["file"]), entry["checksum"])  # type: ignore[index]
