"""The previous embedded format: atomic, multi-file commits as numbered generations.

Read only by ``gear migrate`` (:mod:`gear_agent.store.embedded.legacy`) and by tests that write an
index of that format; the store itself never opens one.


An index directory holds committed snapshots ``gen-000001/``, ``gen-000002/``,
... and a ``CURRENT`` file naming the live one. A commit writes the next
generation under a temporary name, flushes it to disk, renames it into place
and only then replaces ``CURRENT`` (write a temporary file, ``os.replace``).
A crash at any point leaves ``CURRENT`` naming the last complete generation;
a reader that follows ``CURRENT`` sees the old state or the new, never a mix.
The newest two generations are kept so that a reader that has just read
``CURRENT`` can still load its snapshot while a writer commits the next one.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from gear_agent.store.base import IndexCorruptError
from gear_agent.store.derived_files import fsync_dir

MANIFEST = "manifest.json"
"""The manifest file of a generation folder of the previous format."""

CURRENT = "CURRENT"
LOCK = ".lock"
_PREFIX = "gen-"
_TEMP_PREFIX = ".tmp-"
KEEP_GENERATIONS = 2


def current_generation(root: Path) -> Path | None:
    """The committed generation folder, or None for a directory with no index yet."""
    pointer = root / CURRENT
    try:
        name = pointer.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    if not name.startswith(_PREFIX) or "/" in name:
        raise IndexCorruptError(f"{pointer} names {name!r}, not a generation folder")
    return root / name


def write_json(path: Path, value: Any) -> None:
    with path.open("w", encoding="utf-8") as handle:
        json.dump(value, handle, ensure_ascii=False, indent=1)
        handle.flush()
        os.fsync(handle.fileno())


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False))
            handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())


def write_array(path: Path, array: np.ndarray) -> None:
    with path.open("wb") as handle:
        np.save(handle, np.ascontiguousarray(array, dtype=np.float32), allow_pickle=False)
        handle.flush()
        os.fsync(handle.fileno())


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise IndexCorruptError(f"{path} is not valid JSON: {exc}") from exc


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise IndexCorruptError(f"{path}:{number} is not valid JSON: {exc}") from exc
    return rows


def read_array(path: Path, dimension: int) -> np.ndarray:
    try:
        array = np.load(path, allow_pickle=False)
    except ValueError as exc:
        raise IndexCorruptError(f"{path} is not a readable array: {exc}") from exc
    if array.ndim != 2 or array.shape[1] != dimension:
        if array.size == 0:
            return np.zeros((0, dimension), dtype=np.float32)
        raise IndexCorruptError(f"{path} has shape {array.shape}, expected (n, {dimension})")
    return array.astype(np.float32, copy=False)


def commit_generation(root: Path, write_files: Callable[[Path], None]) -> Path:
    """Write a new generation with ``write_files(folder)`` and make it current, atomically.

    The caller must hold the index lock.
    """
    root.mkdir(parents=True, exist_ok=True)
    discard_temporaries(root)
    live = current_generation(root)
    number = int(live.name[len(_PREFIX) :]) + 1 if live else 1
    temporary = root / f"{_TEMP_PREFIX}{_PREFIX}{number:06d}-{os.getpid()}"
    temporary.mkdir()
    write_files(temporary)
    fsync_dir(temporary)
    final = root / f"{_PREFIX}{number:06d}"
    if final.exists():  # left by a crash after the rename but before CURRENT moved
        shutil.rmtree(final)
    os.replace(temporary, final)
    pointer_tmp = root / f"{_TEMP_PREFIX}{CURRENT}-{os.getpid()}"
    pointer_tmp.write_text(final.name, encoding="utf-8")
    with pointer_tmp.open("rb+") as handle:
        os.fsync(handle.fileno())
    os.replace(pointer_tmp, root / CURRENT)
    fsync_dir(root)
    prune_generations(root, keep=KEEP_GENERATIONS)
    return final


def discard_temporaries(root: Path) -> None:
    """Remove half-written generations left by a crashed writer (caller holds the lock)."""
    for leftover in root.glob(f"{_TEMP_PREFIX}*"):
        if leftover.is_dir():
            shutil.rmtree(leftover, ignore_errors=True)
        else:
            leftover.unlink(missing_ok=True)


def prune_generations(root: Path, keep: int) -> None:
    """Delete all but the newest ``keep`` committed generations (never the current one)."""
    live = current_generation(root)
    generations = sorted(p for p in root.glob(f"{_PREFIX}*") if p.is_dir())
    for old in generations[:-keep]:
        if live is None or old.name != live.name:
            shutil.rmtree(old, ignore_errors=True)
    # Generations newer than CURRENT exist only after a crash between rename and pointer.
    if live is not None:
        for orphan in generations:
            if orphan.name > live.name:
                shutil.rmtree(orphan, ignore_errors=True)


def read_legacy_manifest(root: Path) -> dict[str, Any] | None:
    """The previous format's manifest, or None when there is no such index."""
    live = current_generation(Path(root))
    if live is None:
        return None
    try:
        manifest = read_json(live / MANIFEST)
    except FileNotFoundError as exc:
        raise IndexCorruptError(f"{live} named by CURRENT is missing its manifest; run `gear check`") from exc
    return {**manifest, "format_version": 1}
