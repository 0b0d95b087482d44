"""Consistent online snapshots of an embedded index, and restoring the newest good one.

``gear snapshot``, the server's ``GEAR_SNAPSHOT_EVERY`` timer (:mod:`gear_agent.store.snapshot_timer`)
and ``gear check --repair`` use this module.

**What a snapshot holds.** Everything primary (the texts, triples, entity ids, the commit
log, the vector chunks' checksums) is in ``index.sqlite`` and its WAL; the vector files are
append-only (a committed row is never rewritten, except by ``--repair`` re-embedding a
damaged chunk) and are checked against the checksums in the database. So a snapshot is a
copy of the database at one commit, made with SQLite's online backup API (one read
transaction: a page-for-page copy of that commit while writers go on; readers and writers
are never blocked), plus ``snapshot.json``: its generation, the committed rows of each
vector file, the copy's xxh3 checksum. The vector files are not copied: the rows a
snapshot names stay in them, and after a restore every chunk is verified against the
snapshot's checksums (a damaged one is re-embedded from the restored texts by ``--repair``).

Layout: ``INDEX/snapshots/g{generation:010d}-{UTC time}-{ns}-{pid}/`` holding ``index.sqlite`` and
``snapshot.json``, written under a temporary name and renamed when whole and verified;
the newest ``keep`` are kept, older ones removed only once a newer one is verified.

**Restore** (:func:`restore`): the damaged ``index.sqlite``, its WAL and ``-shm`` are moved
into ``INDEX/damaged-{time}/`` (never deleted), with a copy of the vector rows past the
snapshot's. Then the commits after the snapshot are replayed from the old WAL where that
can be proved: SQLite reads the WAL's page frames over the snapshot's pages (a backup is
page for page, so page numbers agree), and the result is kept only if it passes SQLite's
``integrity_check``, holds the snapshot's commit log unchanged and a continuous one after
it, and every record checksum and every vector chunk checksum (against the append-only
vector files) matches; else the snapshot alone. The commits neither holds are named in one
line, and the generation moves past every commit the lost database made, so that nothing
derived from a lost commit (the PPR graph cache) is taken for the restored index.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from gear_agent.store.base import IndexCorruptError, StoreError
from gear_agent.store.check_report import RESTORED_PARTS, CheckReport
from gear_agent.store.derived_files import file_checksum, fsync_dir
from gear_agent.store.embedded.check import check_index
from gear_agent.store.embedded.db import (
    COUNTER_FILE,
    DB_FILE,
    WAL_AT_DAMAGE,
    Database,
    connect,
    keep_wal_at_damage,
    read_counter,
)
from gear_agent.store.embedded.errors import translated
from gear_agent.store.embedded.salvage import Salvaged, salvage

SNAPSHOT_DIR = "snapshots"
MANIFEST = "snapshot.json"
DAMAGED_PREFIX = "damaged-"
VECTOR_FILES = ("passage", "triple", "node")
DEFAULT_KEEP = 3


@dataclass(frozen=True)
class Snapshot:
    """One snapshot on disk.

    Attributes:
        path: Its folder (``INDEX/snapshots/g…``).
        generation: The commit it holds.
        taken_at: When it was taken (UTC, ISO 8601).
        bytes: Size of its database copy.
        seconds: How long taking it took.
        rows: Committed rows of each vector file at that commit.
        checksum: xxh3-64 of its database copy.
    """

    path: Path
    generation: int
    taken_at: str
    bytes: int
    seconds: float
    rows: dict[str, int]
    checksum: str

    @property
    def database(self) -> Path:
        return self.path / DB_FILE

    def line(self) -> str:
        """One line: what was taken, its cost."""
        return (f"snapshot of commit {self.generation}: {self.path} ({self.bytes / 1e6:,.1f} MB in "
                f"{self.seconds:.2f} s; vector rows {', '.join(f'{c} {n:,}' for c, n in self.rows.items() if n)} "
                "stay in the append-only vector files)")

    def describe(self) -> str:
        return f"the snapshot of commit {self.generation} ({self.taken_at}, {self.path.name})"


@dataclass(frozen=True)
class Restored:
    """What :func:`restore` did."""

    snapshot: Snapshot | None
    """The snapshot put in place; None when the database was sound and no older than the newest
    snapshot (only its lost last commits are named)."""
    generation: int
    """The commit the restored database holds (the snapshot's, or later when replayed)."""
    replayed: tuple[int, int] | None
    """The first and last commit replayed from the WAL, if any."""
    lost: tuple[int, int] | None
    """The first and last commit that could not be restored (wholly), if any."""
    lost_rows: dict[str, int]
    """Vector rows (per file) of the lost commits, kept in ``kept_in``."""
    kept_in: Path
    """Where the damaged files were moved."""
    salvaged: Salvaged | None = None
    """What was replayed from the damaged database's records (:mod:`gear_agent.store.embedded.salvage`)."""
    salvaged_from: int | None = None
    """The first commit whose records were replayed from the damaged database."""

    def line(self) -> str:
        """One line: what was restored, replayed, and lost."""
        if self.snapshot is None:
            text = "kept index.sqlite (sound, and no older than the newest snapshot)"
        else:
            text = f"restored index.sqlite from {self.snapshot.describe()}"
        if self.replayed:
            text += f"; replayed commits {_span(self.replayed)} from the WAL"
        if self.salvaged is not None and self.salvaged_from is not None:
            text += (f"; replayed {self.salvaged.describe()} of commits "
                     f"{_span((self.salvaged_from, self.salvaged.generation))}")
        if self.lost:
            added = ", ".join(f"{n:,} row(s) of {c}.vec" for c, n in self.lost_rows.items() if n) or "no vector rows"
            partly = " wholly" if self.salvaged is not None and self.salvaged.passages + self.salvaged.triples else ""
            text += (f"; could not restore commit(s) {_span(self.lost)}{partly} ({added} after the restored "
                     f"commit; their texts were only in the damaged files, kept in {self.kept_in.name}/): index what "
                     "they added again")
        else:
            text += "; nothing lost"
        return text + f" (now at commit {self.generation})"


def _span(pair: tuple[int, int]) -> str:
    return str(pair[0]) if pair[0] == pair[1] else f"{pair[0]}-{pair[1]}"


def _now() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())


# ---- taking ---------------------------------------------------------------------------
def take(root: Path, keep: int = DEFAULT_KEEP, only_if_changed: bool = False) -> Snapshot | None:
    """Snapshot the index at ``root`` now (online: writers go on) and keep the newest ``keep``.

    ``only_if_changed``: take none (None) when the newest good snapshot already holds the
    last commit (the server's timer).

    Raises:
        StoreError: no index at ``root``, ``keep`` < 1, or the snapshot could not be written
            (the disk is full, the folder read-only).
        IndexCorruptError: the index's database is damaged (a damaged commit is never
            snapshotted; ``gear check`` says what).

    Example:
        >>> snap = take(Path(".gear/index"), keep=3)  # doctest: +SKIP
        >>> snap.generation, snap.bytes  # doctest: +SKIP
    """
    root = Path(root)
    if keep < 1:
        raise StoreError(f"keep must be at least 1 snapshot, got {keep}")
    source_path = root / DB_FILE
    if not source_path.is_file():
        raise StoreError(f"no index at {root}: nothing to snapshot")
    folder = root / SNAPSHOT_DIR
    if only_if_changed:
        newest = next(iter(snapshots(root)), None)
        if newest is not None and newest.generation == _current_generation(root):
            return None
    started = time.perf_counter()
    with translated(folder):
        folder.mkdir(exist_ok=True)
        _remove_abandoned(folder)
        temporary = folder / f".tmp-{os.getpid()}-{time.monotonic_ns()}"
        temporary.mkdir()
    try:
        copy = temporary / DB_FILE
        source = connect(source_path, 60.0, readonly=True)  # its close never folds the WAL in
        try:
            target = sqlite3.connect(copy)
            try:
                with translated(source_path):
                    source.backup(target)  # one step: one read transaction, one commit
                    meta = dict(target.execute("SELECT key, value FROM meta").fetchall())
                    problems = [r[0] for r in target.execute("PRAGMA quick_check(3)").fetchall()]
            finally:
                target.close()
        finally:
            source.close()
        if problems != ["ok"]:
            keep_wal_at_damage(root)
            raise IndexCorruptError(f"{source_path} fails SQLite's check ({'; '.join(problems)}): not "
                                    "snapshotted; run `gear check`")
        generation = int(meta.get("generation", 0))
        with translated(copy):
            with copy.open("rb+") as handle:
                os.fsync(handle.fileno())
            snapshot = Snapshot(
                path=folder / f"g{generation:010d}-{_now()}-{time.time_ns() % 10**9:09d}-{os.getpid()}",
                generation=generation,
                taken_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), bytes=copy.stat().st_size,
                seconds=round(time.perf_counter() - started, 3),
                rows={c: int(meta.get(f"rows:{c}", 0)) for c in VECTOR_FILES}, checksum=file_checksum(copy))
            (temporary / MANIFEST).write_text(json.dumps(
                {"generation": snapshot.generation, "taken_at": snapshot.taken_at, "bytes": snapshot.bytes,
                 "seconds": snapshot.seconds, "rows": snapshot.rows, "checksum": snapshot.checksum,
                 "dimension": int(meta.get("dimension", 0) or 0)}, indent=1), encoding="utf-8")
            fsync_dir(temporary)
            os.replace(temporary, snapshot.path)
            fsync_dir(folder)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    _prune(root, keep)
    return snapshot


def _remove_abandoned(folder: Path) -> None:
    """Remove half-written snapshots (``.tmp-{pid}-…``) whose writer is gone (killed)."""
    for path in folder.glob(".tmp-*"):
        pid = path.name.split("-")[1]
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)
        except PermissionError:  # alive, another user's
            continue


def _current_generation(root: Path) -> int | None:
    db = Database(root, 10.0, readonly=True)
    try:
        return db.generation()
    finally:
        db.close()


def _prune(root: Path, keep: int) -> None:
    """Remove the snapshots older than the newest ``keep`` (called once a new one is written
    and verified: its checksum is that of the copy that passed SQLite's check)."""
    for old in snapshots(root)[keep:]:
        shutil.rmtree(old.path, ignore_errors=True)


# ---- reading ----------------------------------------------------------------------------
def snapshots(root: Path) -> list[Snapshot]:
    """The whole snapshots of the index at ``root`` (a manifest that reads), newest first."""
    found = []
    folder = Path(root) / SNAPSHOT_DIR
    if not folder.is_dir():
        return []
    for path in folder.glob("g*"):
        try:
            manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
            found.append(Snapshot(path, int(manifest["generation"]), str(manifest["taken_at"]),
                                  int(manifest["bytes"]), float(manifest["seconds"]),
                                  {str(k): int(v) for k, v in manifest["rows"].items()}, str(manifest["checksum"])))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
    return sorted(found, key=lambda s: (s.generation, s.taken_at, s.path.name), reverse=True)


def _sound(snapshot: Snapshot) -> bool:
    """Its copy has its checksum (so SQLite's check passed when it was taken)."""
    try:
        return file_checksum(snapshot.database) == snapshot.checksum
    except OSError:
        return False


def newest_good(root: Path) -> Snapshot | None:
    """The newest snapshot whose copy still has its checksum, or None."""
    return next((s for s in snapshots(root) if _sound(s)), None)


# ---- restoring --------------------------------------------------------------------------
def restore(root: Path) -> Restored:
    """Put the newest good snapshot in place of a damaged ``index.sqlite`` and replay what the
    old WAL proves (see the module docstring); the damaged files are moved aside, not deleted.

    Raises:
        IndexCorruptError: no good snapshot.
        StoreError: the index is read-only, or a file cannot be moved.
    """
    root = Path(root)
    snapshot = newest_good(root)
    if snapshot is None:
        raise IndexCorruptError(f"no good snapshot of the index at {root} to restore from")
    counted = read_counter(root)
    held = _sound_generation(root)
    if held is not None and held >= snapshot.generation:  # only its last commits were lost
        lost = (held + 1, counted) if counted is not None and counted > held else None
        kept_in = root / f"{DAMAGED_PREFIX}{_now()}-{os.getpid()}"
        with translated(kept_in):
            kept_in.mkdir()
            wal = root / f"{DB_FILE}-wal"
            if wal.exists():
                shutil.copyfile(wal, kept_in / wal.name)
        lost_rows = _keep_vector_tails(root, kept_in, _generation_and_rows(root / DB_FILE)[1]) if lost else {}
        generation = _move_past(root, lost[1], None) if lost else held
        return Restored(None, generation, None, lost, lost_rows, kept_in)
    kept_in = root / f"{DAMAGED_PREFIX}{_now()}-{os.getpid()}"
    work = root / f".tmp-restore-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    with translated(kept_in):
        kept_in.mkdir()
        work.mkdir()
    try:
        for name in (DB_FILE, f"{DB_FILE}-wal", f"{DB_FILE}-shm", WAL_AT_DAMAGE):
            if (root / name).exists():
                os.replace(root / name, kept_in / name)
        held_before = _generation_of(kept_in)
        candidate, replayed = _replayed(snapshot, kept_in, root, work)
        if candidate is None:
            candidate = work / DB_FILE
            shutil.copyfile(snapshot.database, candidate)
        generation, rows = _generation_and_rows(candidate)
        last_made = max(g for g in (counted, held_before, generation) if g is not None)
        lost = (generation + 1, last_made) if last_made > generation else None
        lost_rows = _keep_vector_tails(root, kept_in, rows) if lost else {}
        with translated(candidate):
            with candidate.open("rb+") as handle:
                os.fsync(handle.fileno())
            os.replace(candidate, root / DB_FILE)
            fsync_dir(root)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    salvaged = None
    if lost:
        generation = _move_past(root, last_made, snapshot)
        work.mkdir()
        try:
            salvaged = salvage(root, kept_in / DB_FILE, work, last_made)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        if salvaged is not None and salvaged.complete:
            lost = None
        if salvaged is not None:
            generation = _current_generation(root) or generation
    else:
        db = Database(root, 10.0)
        try:
            db.accept_lost_commits()  # the counter names the restored commit
        finally:
            db.close()
    salvaged_from = (replayed[1] if replayed else snapshot.generation) + 1
    return Restored(snapshot, generation, replayed, lost, lost_rows, kept_in,
                    salvaged if salvaged is not None and (salvaged.passages or salvaged.triples or salvaged.deleted
                                                          or salvaged.marked) else None, salvaged_from)


def _sound_generation(root: Path) -> int | None:
    """The generation of the index's database when it passes SQLite's check, else None."""
    if not (root / DB_FILE).exists():
        return None
    try:
        db = Database(root, 10.0, readonly=True)
    except (StoreError, IndexCorruptError):
        return None
    try:
        return None if db.integrity_errors(limit=1) else db.generation()
    except (StoreError, IndexCorruptError):
        return None
    finally:
        db.close()


def _generation_of(folder: Path) -> int | None:
    """The generation the damaged database (with its WAL) still reads as, or None."""
    if not (folder / DB_FILE).exists():
        return None
    try:
        db = sqlite3.connect(f"file:{folder / DB_FILE}?mode=ro", uri=True)
        try:
            row = db.execute("SELECT value FROM meta WHERE key='generation'").fetchone()
            return int(row[0]) if row else None
        finally:
            db.close()
    except (sqlite3.Error, ValueError, TypeError):
        return None


def _generation_and_rows(path: Path) -> tuple[int, dict[str, int]]:
    """The generation of the database at ``path`` and its committed vector rows (with
    ``dimension``, the floats per row, under that key)."""
    db = sqlite3.connect(path)
    try:
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
    finally:
        db.close()
    rows = {c: int(meta.get(f"rows:{c}", 0)) for c in VECTOR_FILES}
    return int(meta.get("generation", 0)), {**rows, "dimension": int(meta.get("dimension", 0) or 0)}


def _replayed(snapshot: Snapshot, kept_in: Path, root: Path, work: Path) -> tuple[Path | None, tuple[int, int] | None]:
    """The snapshot with the old WAL's commits read over it, when the result proves itself
    (module docstring), folded into one file; else (None, None). Of the WAL copied when the
    damage was first seen and the WAL as it is now, the one that proves the most commits."""
    best: tuple[Path | None, tuple[int, int] | None] = (None, None)
    for number, wal in enumerate((kept_in / WAL_AT_DAMAGE, kept_in / f"{DB_FILE}-wal")):
        if not wal.exists() or wal.stat().st_size == 0:
            continue
        trial = work / f"replay-{number}"
        trial.mkdir()
        shutil.copyfile(snapshot.database, trial / DB_FILE)
        shutil.copyfile(wal, trial / f"{DB_FILE}-wal")
        for name in (*(f"{c}.vec" for c in VECTOR_FILES), COUNTER_FILE):
            if (root / name).exists():
                os.link(root / name, trial / name)  # read only: the checks map them
        try:
            generation = _proves_itself(trial, snapshot)
        except (sqlite3.Error, StoreError, OSError, ValueError, IndexError, TypeError):
            generation = None
        if generation is not None and generation > (best[1][1] if best[1] else snapshot.generation):
            best = (trial / DB_FILE, (snapshot.generation + 1, generation))
    return best


def _proves_itself(trial: Path, snapshot: Snapshot) -> int | None:
    """The generation of the replayed database in ``trial`` if it passes every check (and
    fold its WAL into the file), else None."""
    db = sqlite3.connect(trial / DB_FILE, isolation_level=None)
    try:
        if db.execute("PRAGMA integrity_check(1)").fetchone()[0] != "ok":
            return None
        snap = sqlite3.connect(f"file:{snapshot.database}?mode=ro", uri=True)
        try:
            before = snap.execute("SELECT * FROM commits ORDER BY generation").fetchall()
        finally:
            snap.close()
        after = db.execute("SELECT * FROM commits ORDER BY generation").fetchall()
        generation = int(db.execute("SELECT value FROM meta WHERE key='generation'").fetchone()[0])
        if after[: len(before)] != before or [r[0] for r in after] != list(range(after[0][0], generation + 1)):
            return None
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.close()
    report = check_index(trial)  # derived parts (ANN, postings) are rebuilt by --repair anyway
    if not all(item.ok or item.derived for item in report.items if item.name != "commit counter"):
        return None
    return generation


def _keep_vector_tails(root: Path, kept_in: Path, rows: dict[str, int]) -> dict[str, int]:
    """Copy the vector rows past the restored commit (the lost commits'; the next write cuts
    the files back to the committed rows) into ``kept_in``; returns how many per file."""
    kept: dict[str, int] = {}
    row_bytes = rows.get("dimension", 0) * 4
    if not row_bytes:
        return kept
    for collection in VECTOR_FILES:
        committed, path = rows.get(collection, 0), root / f"{collection}.vec"
        if not path.exists():
            continue
        extra = path.stat().st_size // row_bytes - committed
        if extra > 0:
            with path.open("rb") as source, (kept_in / f"{collection}.vec.rows-{committed}-"
                                             f"{committed + extra}").open("wb") as target:
                source.seek(committed * row_bytes)
                shutil.copyfileobj(source, target)
            kept[collection] = extra
    return kept


def _move_past(root: Path, last_made: int, snapshot: Snapshot | None) -> int:
    """One commit whose generation follows every commit the lost database made: a derived
    file made from a lost commit then never matches the restored index."""
    db = Database(root, 10.0)
    try:
        with db.writing():
            db.set_meta("generation", last_made)
            db.set_meta("restored_from", snapshot.path.name if snapshot else "")
        return db.generation()
    finally:
        db.close()


def offer_snapshot(report: CheckReport) -> CheckReport:
    """When the database failed and a good snapshot exists, say so on its item (and let
    ``--repair`` restore it); returns ``report`` (what ``gear check`` shows:
    ``offer_snapshot(check_index(root))``)."""
    failing = [item for item in report.items if not item.ok and item.name.endswith((*RESTORED_PARTS, "commit counter"))]
    snapshot = newest_good(report.root) if failing else None
    if snapshot is None:
        return report
    report.restorable_from = snapshot.describe()
    for item in failing:
        if item.name != "commit counter":  # kept when it is newer than the snapshot: see snapshot.restore
            item.detail += f"; --repair restores it from {report.restorable_from}"
    return report
