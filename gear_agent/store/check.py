"""Integrity of an embedded index, like SQLite's ``PRAGMA integrity_check``: ``gear check``.

Reads everything and reports each part: SQLite's own integrity check, the manifest's
counts against the tables, every record's checksum, every vector chunk's checksum and
finiteness (no NaN or infinity), every BM25 segment's checksum, every ANN part's
checksum, and leftovers (bytes after the committed vectors, temporary files, folders of
the previous format). Loads no model. ``repair`` rebuilds what is derived (BM25
postings, ANN parts) and, given an embedder, re-embeds vector chunks that fail.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gear_agent.store import ann as ann_mod
from gear_agent.store import embedded_db as edb
from gear_agent.store.derived_files import PPR_GRAPH_FILE, verify
from gear_agent.store.postings import Segment
from gear_agent.store.vectors import VectorFile


@dataclass
class CheckItem:
    """One checked part: ``ok`` false means damage; ``note`` items are information only."""

    name: str
    ok: bool
    detail: str
    derived: bool = False


@dataclass
class CheckReport:
    """Every item checked, and the damaged vector chunks (collection, start, stop)."""

    root: Path
    items: list[CheckItem] = field(default_factory=list)
    bad_chunks: list[tuple[str, int, int]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(item.ok for item in self.items)

    def add(self, name: str, ok: bool, detail: str, derived: bool = False) -> None:
        self.items.append(CheckItem(name, ok, detail, derived))


def check_index(root: Path) -> CheckReport:
    """Check the index at ``root`` without changing it.

    Example:
        >>> report = check_index(Path(".gear/index"))  # doctest: +SKIP
        >>> report.ok, [i.name for i in report.items if not i.ok]  # doctest: +SKIP
    """
    root = Path(root)
    report = CheckReport(root)
    path = root / edb.DB_FILE
    if not path.exists():
        from gear_agent.store import legacy

        if legacy.has_legacy_index(root):
            report.add("format", True, "previous format (CURRENT + gen-*): the first open migrates it")
        else:
            report.add("index", False, f"no index at {root}")
        return report
    try:
        db = edb.connect(path, timeout_s=10.0, readonly=True)
        result = [r[0] for r in db.execute("PRAGMA integrity_check").fetchall()]
    except (sqlite3.DatabaseError, edb.IndexCorruptError) as exc:
        report.add("sqlite integrity_check", False, f"{path}: {exc}")
        return report
    report.add("sqlite integrity_check", result == ["ok"], "; ".join(result[:5]))
    if result != ["ok"]:
        return report
    try:
        db.execute("BEGIN")
        _check_tables(db, root, report)
        db.execute("COMMIT")
    except (sqlite3.DatabaseError, ValueError, KeyError, TypeError) as exc:
        report.add("tables", False, f"{type(exc).__name__}: {exc}")
    finally:
        db.close()
    return report


def _check_tables(db: sqlite3.Connection, root: Path, report: CheckReport) -> None:
    meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
    dimension = int(meta.get("dimension", 0))
    for collection, table in (("passage", "passages"), ("triple", "triples")):
        stored = db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
        counted = int(meta.get(f"count:{collection}", 0))
        report.add(f"{collection} count", stored == counted, f"{stored:,} stored, manifest says {counted:,}")
    bad = []
    for row in db.execute(f"SELECT {edb.PASSAGE_COLUMNS} FROM passages"):
        try:
            edb.passage_from_row(row, root)
        except (edb.IndexCorruptError, ValueError) as exc:
            bad.append(str(exc).split(" in ")[0])
    for row in db.execute(f"SELECT {edb.TRIPLE_COLUMNS} FROM {edb.TRIPLE_FROM}"):
        try:
            edb.triple_from_row(row, root)
        except edb.IndexCorruptError as exc:
            bad.append(str(exc).split(" in ")[0])
    orphans = db.execute("SELECT COUNT(*) FROM triples WHERE passage_row NOT IN (SELECT row FROM passages)").fetchone()[0]
    report.add("record checksums", not bad, f"{len(bad)} fail: {', '.join(bad[:3])}" if bad else "all match")
    report.add("triples point at stored passages", orphans == 0, f"{orphans} orphan triples" if orphans else "yes")
    for collection in ("passage", "triple"):
        rows = int(meta.get(f"rows:{collection}", 0))
        vectors = VectorFile(root / f"{collection}.vec", dimension)
        failing, not_finite, covered = [], 0, 0
        for start, stop, checksum in db.execute(
            "SELECT start, stop, checksum FROM chunks WHERE collection=? ORDER BY start", (collection,)
        ):
            if start != covered:
                failing.append((start, stop))
            covered = stop
            if vectors.checksum(start, stop) != checksum:
                failing.append((start, stop))
            if vectors.stored_rows() >= stop:
                not_finite += int((~np.isfinite(vectors.view(rows)[start:stop]).all(axis=1)).sum())
        report.bad_chunks.extend((collection, a, b) for a, b in failing)
        ok = not failing and not_finite == 0 and covered == rows
        detail = (f"{rows:,} rows, {len(failing)} chunk(s) fail their checksum, {not_finite} rows not finite"
                  if not ok else f"{rows:,} rows, every chunk matches")
        report.add(f"{collection} vectors", ok, detail)
        extra = vectors.stored_rows() - rows
        if extra > 0:
            report.add(f"{collection} vectors tail", True,
                       f"{extra:.1f} rows after the committed ones (an interrupted write; the next write trims them)")
    bad_segments = [sid for sid, *blobs, checksum in db.execute(
        "SELECT id, term_ids, offsets, rows, tfs, lens, checksum FROM segments")
        if Segment.checksum_of(blobs) != checksum]
    report.add("BM25 segments", not bad_segments,
               f"{len(bad_segments)} fail their checksum (rebuilt from the text by --repair)" if bad_segments
               else "every segment matches", derived=True)
    for collection in ("passage", "triple"):
        parts = ann_mod.parse_parts(meta.get(f"ann:{collection}"))
        index = ann_mod.AnnIndex(root, collection)
        index.load(parts)
        report.add(f"{collection} ANN", not index.problems,
                   "; ".join(index.problems) + " (rebuilt by --repair or the next indexing run)" if index.problems
                   else f"{len(parts)} part(s), rows 0..{index.covered:,}" if parts else "none (exact search)",
                   derived=True)
    _check_graph_cache(root, report)
    leftovers = [p.name for p in root.glob(".tmp-*")]
    if leftovers:
        report.add("temporary files", True, f"{len(leftovers)} left by an interrupted write (the next write removes them)")
    if (root / "CURRENT").exists():
        report.add("previous format", True, f"migrated from {meta.get('migrated_from', '?')}; the old "
                   "CURRENT and gen-* files are no longer read and may be deleted")


GRAPH_MANIFEST = Path(PPR_GRAPH_FILE).with_suffix(".json").name
"""The PPR graph's manifest (``gear_agent.expansion.ppr_graph_files`` writes it beside the
index): each file of the graph cache with its xxh3 checksum."""


def _check_graph_cache(root: Path, report: CheckReport) -> None:
    """The PPR graph cache's files against its manifest (derived: a bad file makes the next
    ``ppr``/``hipporag`` query rebuild the graph from the store)."""
    manifest_file = root / GRAPH_MANIFEST
    if not manifest_file.exists():
        return
    try:
        manifest = json.loads(manifest_file.read_text(encoding="utf-8"))
        entries = [*manifest.get("segments", []), *([manifest["ann"]] if manifest.get("ann") else [])]
        bad = [e["file"] for e in entries if not verify(root / e["file"], e["checksum"])]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        report.add("PPR graph cache", False, f"{GRAPH_MANIFEST} cannot be read ({exc}); the next PPR "
                   "query rebuilds the graph", derived=True)
        return
    report.add("PPR graph cache", not bad,
               f"{', '.join(bad)} missing or failing its checksum; the next PPR query rebuilds the graph"
               if bad else f"{len(entries)} file(s), every checksum matches", derived=True)


def repair(store, report: CheckReport) -> list[str]:  # noqa: ANN001 - EmbeddedStore
    """Rebuild what ``report`` found damaged that can be rebuilt; returns what was done."""
    from gear_agent.store.maintenance import remove_superseded, update_ann

    done = []
    with store.transaction():
        for collection, start, stop in report.bad_chunks:
            table = "passages" if collection == "passage" else "triples"
            if collection == "passage":
                rows = store._db.execute("SELECT row, title, text FROM passages WHERE row >= ? AND row < ? "
                                         "ORDER BY row", (start, stop)).fetchall()
                texts = {r: (f"{t}\n{x}" if t else x) for r, t, x in rows}
            else:
                rows = store._db.execute(f"SELECT row, subject, predicate, object FROM {table} WHERE row >= ? "
                                         "AND row < ? ORDER BY row", (start, stop)).fetchall()
                texts = {r: f"{s} {p} {o}" for r, s, p, o in rows}
            block = np.zeros((stop - start, store.dimension), dtype=np.float32)
            if texts:
                vectors = store._embed(list(texts.values()), [f"{collection} row {r}" for r in texts])
                for i, row in enumerate(texts):
                    block[row - start] = vectors[i]
            checksum = store._vectors[collection].rewrite(start, block)
            store._db.execute("UPDATE chunks SET checksum=? WHERE collection=? AND start=?", (checksum, collection, start))
            done.append(f"re-embedded {collection} rows {start}..{stop}")
        if any(i.name == "BM25 segments" and not i.ok for i in report.items):
            for name in store._tokenizers():
                store._rebuild_postings(name)
            done.append("rebuilt the BM25 postings")
        if any(i.name.endswith("ANN") and not i.ok for i in report.items):
            done.extend(f"rebuilt ANN part {f}" for f in update_ann(store))
    with store.transaction():
        remove_superseded(store)
    return done
