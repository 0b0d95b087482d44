"""Integrity of an embedded index, like SQLite's ``PRAGMA integrity_check``: ``gear check``.

Reads everything, read-only, and reports each part: SQLite's own integrity check, the
commit counter against the database (a lost last commit), the manifest's counts against
the tables, every record's checksum, every vector chunk's checksum and finiteness (no
NaN or infinity) in ``passage.vec``, ``triple.vec`` and ``node.vec``, every BM25
segment's checksum, every ANN part's checksum, the PPR graph cache (its segments and its
phrase ANN, and its stamp: the graph must reflect a commit of this index, not of another
index made in the same folder nor of a rolled-back one), the SiReRAG pool's stamp likewise
(where the index has a pool), and leftovers (bytes after the committed vectors, temporary files, folders
of the previous format). Loads no model.

What ``--repair`` rebuilds: vectors are re-embedded from the texts (shown as damaged:
the stored vectors are lost, and re-embedding needs the model), postings and ANN parts
(marked *derived*, "rebuildable") rebuilt from the records and vectors, the PPR graph from
the store (:func:`gear_agent.store.embedded.repair.repair_index`). An edited record is primary data: reported, never
guessed at. A database that is missing, fails SQLite's check or cannot be read, or lost its
last commits, is restored from the newest good snapshot when there is one
(:mod:`gear_agent.store.embedded.snapshot`: the commits after it replayed where they prove
themselves, the rest named); without one it is refused (a lost commit: ``--repair`` goes
on from the commits the database holds).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from gear_agent.errors import GearError
from gear_agent.store import ann as ann_mod
from gear_agent.store.base import IndexCorruptError
from gear_agent.store.changes import Stamp
from gear_agent.store.check_report import (
    GRAPH_MANIFEST,
    CheckReport,
    check_graph_cache,
    check_stamp,
    stamp_problem,
)
from gear_agent.store.derived_files import abandoned_temporaries
from gear_agent.store.embedded.db import DB_FILE, INDEX_ID_KEY, Database, read_counter
from gear_agent.store.embedded.manifest import has_previous_format
from gear_agent.store.embedded.nodes import META_PREFIX
from gear_agent.store.embedded.postings import Segment
from gear_agent.store.embedded.records import (
    PASSAGE_COLUMNS,
    TRIPLE_COLUMNS,
    TRIPLE_FROM,
    passage_from_row,
    triple_from_row,
)
from gear_agent.store.embedded.state import stamp_at
from gear_agent.store.embedded.vectors import CheckedVectors

VECTOR_COLLECTIONS = ("passage", "triple", "node")


def check_index(root: Path) -> CheckReport:
    """Check the index at ``root`` without changing it (``gear check`` adds the newest good
    snapshot where the database failed: :func:`gear_agent.store.embedded.snapshot.offer_snapshot`).

    Example:
        >>> report = check_index(Path(".gear/index"))  # doctest: +SKIP
        >>> report.ok, [i.name for i in report.items if not i.ok]  # doctest: +SKIP
    """
    root = Path(root)
    report = CheckReport(root)
    if not (root / DB_FILE).exists():
        if has_previous_format(root):
            report.add("format", False, "previous format (CURRENT + gen-*): convert it with `gear migrate`")
        else:
            report.add("index", False, f"no index at {root}")
        return report
    try:
        db = Database(root, timeout_s=10.0, readonly=True)
    except GearError as exc:
        report.add("sqlite integrity_check", False, str(exc))
        return report
    report.read_only = db.read_only_reason
    stale = None
    try:
        problems = db.integrity_errors()
        report.add("sqlite integrity_check", not problems, "; ".join(problems) if problems else "ok")
        if problems:
            return report
        with db.reading():
            _check_commits(db, report)
            _check_tables(db, root, report)
            stale = _graph_stamp_problem(db, root)
            _check_pool(db, report)
    except GearError as exc:
        report.add("tables", False, str(exc))
    finally:
        db.close()
    check_graph_cache(root, report, stale)
    leftovers = abandoned_temporaries(root)
    if leftovers:
        report.add("temporary files", True, f"{len(leftovers)} left by an interrupted write (the next write removes them)")
    return report


def _check_commits(db: Database, report: CheckReport) -> None:
    counted, held = read_counter(db.root), db.generation()
    if counted is None:
        report.add("commit counter", True, f"generation {held}; index.generation is missing or unreadable "
                   "(rewritten by the next commit)")
    elif counted > held:
        report.add("commit counter", False, f"{counted} commits were made, index.sqlite holds {held}: the last "
                   "commit(s) were lost (WAL damaged or removed); --repair goes on from commit "
                   f"{held}, then index what they added again")
    else:
        report.add("commit counter", True, f"generation {held}")


def _check_tables(db: Database, root: Path, report: CheckReport) -> None:
    meta = dict(db.rows("SELECT key, value FROM meta"))
    if "embedding_model" not in meta:  # a first run killed before its first commit
        leftovers = [p.name for p in root.glob("*.vec") if p.stat().st_size]
        report.add("manifest", True, "no commit yet: the first indexing run did not finish; run `gear index` "
                   "again" + (f" (it trims {', '.join(leftovers)})" if leftovers else ""))
        return
    dimension = int(meta.get("dimension", 0) or 0)
    for collection, table in (("passage", "passages"), ("triple", "triples")):
        stored = db.one(f"SELECT COUNT(*) FROM {table}")[0]  # type: ignore[index]
        counted = int(meta.get(f"count:{collection}", 0))
        report.add(f"{collection} count", stored == counted, f"{stored:,} stored, manifest says {counted:,}")
    bad = []
    for block in db.batches(f"SELECT {PASSAGE_COLUMNS} FROM passages"):
        bad.extend(_failing(passage_from_row, block, root))
    for block in db.batches(f"SELECT {TRIPLE_COLUMNS} FROM {TRIPLE_FROM}"):
        bad.extend(_failing(triple_from_row, block, root))
    orphans = db.one("SELECT COUNT(*) FROM triples WHERE passage_row NOT IN (SELECT row FROM passages)")[0]  # type: ignore[index]
    report.add("record checksums", not bad, f"{len(bad)} fail: {', '.join(bad[:3])}" if bad else "all match")
    report.add("triples point at stored passages", orphans == 0, f"{orphans} orphan triples" if orphans else "yes")
    for collection in VECTOR_COLLECTIONS:
        rows = int(meta.get(f"rows:{collection}", 0))
        if collection == "node" and rows == 0:
            continue
        _check_vectors(CheckedVectors(db, root, collection, dimension), rows, report)
    bad_segments = []
    for block in db.batches("SELECT id, term_ids, offsets, rows, tfs, lens, checksum FROM segments", size=64):
        for sid, *blobs, checksum in block:
            if not all(isinstance(b, bytes) for b in blobs) or Segment.checksum_of(blobs) != checksum:
                bad_segments.append(sid)
    report.add("BM25 segments", not bad_segments,
               f"{len(bad_segments)} fail their checksum (rebuilt from the text by --repair)" if bad_segments
               else "every segment matches", derived=True)
    for collection in ("passage", "triple"):
        parts = ann_mod.parse_parts(meta.get(f"ann:{collection}"))
        index = ann_mod.AnnIndex(root, collection)
        index.load(parts, index_id=str(meta.get(INDEX_ID_KEY) or ""))  # a part of another index is refused
        report.add(f"{collection} ANN", not index.problems,
                   "; ".join(index.problems) + " (rebuilt by --repair or the next indexing run)" if index.problems
                   else f"{len(parts)} part(s), rows 0..{index.covered:,}" if parts else "none (exact search)",
                   derived=True)
    if (root / "CURRENT").exists():
        report.add("previous format", True, f"migrated from {meta.get('migrated_from', '?')}; the old "
                   "CURRENT and gen-* files are no longer read and may be deleted")


def _failing(decode, block, root: Path) -> list[str]:  # noqa: ANN001 - a record decoder
    bad = []
    for row in block:
        try:
            decode(row, root)
        except IndexCorruptError as exc:
            bad.append(str(exc).split(" in ")[0])
    return bad


def _check_vectors(vectors: CheckedVectors, rows: int, report: CheckReport) -> None:
    name = f"{vectors.collection} vectors"
    stored = vectors.file.stored_rows()
    if stored < rows:
        what = "is missing" if not vectors.path.exists() else f"holds {int(stored):,} of them (truncated)"
        report.add(name, False, f"{rows:,} rows committed, {vectors.path.name} {what}; --repair re-embeds "
                   "them from the texts")
        return
    failing = vectors.bad_chunks(rows)
    not_finite = 0
    if rows:
        matrix = vectors.view(rows)
        for start in range(0, rows, 65_536):
            not_finite += int((~np.isfinite(matrix[start : start + 65_536]).all(axis=1)).sum())
    ok = not failing and not_finite == 0
    detail = (f"{rows:,} rows, {len(failing)} chunk(s) fail their checksum, {not_finite} rows not finite "
              "(re-embedded from the texts by --repair)" if not ok else f"{rows:,} rows, every chunk matches")
    report.add(name, ok, detail)
    if stored > rows:
        report.add(f"{name} tail", True,
                   f"{stored - rows:.1f} rows after the committed ones (an interrupted write; the next write trims them)")


def _graph_stamp_problem(db: Database, root: Path) -> str | None:
    """Why the saved PPR graph reflects no state of this index (None: it reflects its last
    commit or an earlier one, which the next update brings up to date from the change feed,
    or there is no readable graph manifest)."""
    try:
        manifest = json.loads((root / GRAPH_MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict):
        return None
    return _stamp_problem(db, GRAPH_MANIFEST, Stamp.from_dict(manifest.get("stamp")))


def _stamp_problem(db: Database, what: str, held: Stamp | None) -> str | None:
    """(Inside a read.) :func:`~gear_agent.store.check_report.stamp_problem` against this index:
    its id, its last commit, and the digest of the commit ``held`` names."""
    index_id = str(db.meta(INDEX_ID_KEY) or "")
    return stamp_problem(what, held, index_id, db.generation(),
                         lambda stamp: stamp_at(db, stamp.generation, index_id) == stamp)


def _check_pool(db: Database, report: CheckReport) -> None:
    """(Inside a read.) The SiReRAG pool's stamp (node meta ``sirerag:stamp``), where the index
    has a pool (``sirerag:mode``)."""
    if db.meta(f"{META_PREFIX}mode") is None:
        return
    try:
        held = Stamp.from_dict(json.loads(db.meta(f"{META_PREFIX}stamp") or "null"))
    except ValueError:
        held = None
    check_stamp(report, "SiReRAG pool", held, _stamp_problem(db, "the SiReRAG pool", held), db.generation())


def integrity_errors(root: Path) -> list[str]:
    """SQLite's ``quick_check`` findings for the index at ``root`` (empty: sound): what
    ``gear index`` runs before it writes (``gear check`` runs the full ``integrity_check``)."""
    db = Database(root, 10.0, readonly=True)
    try:
        return db.integrity_errors(limit=3, quick=True)
    finally:
        db.close()
