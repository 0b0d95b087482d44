"""Integrity of an embedded index, like SQLite's ``PRAGMA integrity_check``: ``gear check``.

Reads everything, read-only, and reports each part: SQLite's own integrity check, the
commit counter against the database (a lost last commit), the manifest's counts against
the tables, every record's checksum, every vector chunk's checksum and finiteness (no
NaN or infinity) in ``passage.vec``, ``triple.vec`` and ``node.vec``, every BM25
segment's checksum, every ANN part's checksum, the PPR graph cache (its segments and its
phrase ANN, and its stamp: the graph must reflect a commit of this index, not of another
index made in the same folder nor of a rolled-back one), and leftovers (bytes after the committed vectors, temporary files, folders
of the previous format). Loads no model.

What ``--repair`` rebuilds: vectors are re-embedded from the texts (shown as damaged:
the stored vectors are lost, and re-embedding needs the model), postings and ANN parts
(marked *derived*, "rebuildable") rebuilt from the records and vectors, the PPR graph from
the store (:func:`repair_index`). An edited record is primary data: reported, never
guessed at. A database that is missing, fails SQLite's check or cannot be read, or lost its
last commits, is restored from the newest good snapshot when there is one
(:mod:`gear_agent.store.embedded.snapshot`: the commits after it replayed where they prove
themselves, the rest named); without one it is refused (a lost commit: ``--repair`` goes
on from the commits the database holds).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gear_agent.errors import GearError
from gear_agent.store import ann as ann_mod
from gear_agent.store.base import IndexCorruptError
from gear_agent.store.changes import Stamp
from gear_agent.store.derived_files import PPR_GRAPH_FILE, abandoned_temporaries, verify
from gear_agent.store.embedded.db import DB_FILE, INDEX_ID_KEY, Database, read_counter
from gear_agent.store.embedded.manifest import has_previous_format
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


@dataclass
class CheckItem:
    """One checked part: ``ok`` false means damage; ``derived`` damage ``--repair`` rebuilds."""

    name: str
    ok: bool
    detail: str
    derived: bool = False


@dataclass
class CheckReport:
    """Every item checked."""

    root: Path
    items: list[CheckItem] = field(default_factory=list)
    read_only: str | None = None
    """Why the index cannot be written (a read-only volume), when it cannot: it is checked,
    searched and served as it is, and ``gear check`` says "ok (read-only)"."""
    restorable_from: str | None = None
    """The newest good snapshot, described, when the database is damaged and there is one:
    ``--repair`` restores it (:mod:`gear_agent.store.embedded.snapshot`)."""

    @property
    def ok(self) -> bool:
        return all(item.ok for item in self.items)

    def add(self, name: str, ok: bool, detail: str, derived: bool = False) -> None:
        self.items.append(CheckItem(name, ok, detail, derived))

    def failing(self, *names: str) -> bool:
        """Whether any item whose name ends with one of ``names`` failed."""
        return any(not item.ok and item.name.endswith(names) for item in self.items)

    @property
    def repairable(self) -> bool:
        """Whether ``--repair`` can mend every failing item."""
        restorable = RESTORED_PARTS if self.restorable_from else ()
        return all(item.ok or item.derived or item.name.endswith(("vectors", "commit counter", *restorable))
                   for item in self.items)


RESTORED_PARTS = ("sqlite integrity_check", "tables", "index")
"""Items of a damaged database, which ``--repair`` restores from the newest good snapshot."""


def _offer_snapshot(report: CheckReport) -> None:
    """When the database failed and a good snapshot exists, say so on its item (and let
    ``--repair`` restore it)."""
    from gear_agent.store.embedded.snapshot import newest_good

    failing = [item for item in report.items if not item.ok and item.name.endswith((*RESTORED_PARTS, "commit counter"))]
    snapshot = newest_good(report.root) if failing else None
    if snapshot is None:
        return
    report.restorable_from = snapshot.describe()
    for item in failing:
        if item.name != "commit counter":  # kept when it is newer than the snapshot: see snapshot.restore
            item.detail += f"; --repair restores it from {report.restorable_from}"


def check_index(root: Path) -> CheckReport:
    """Check the index at ``root`` without changing it.

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
            _offer_snapshot(report)
        return report
    try:
        db = Database(root, timeout_s=10.0, readonly=True)
    except GearError as exc:
        report.add("sqlite integrity_check", False, str(exc))
        _offer_snapshot(report)
        return report
    report.read_only = db.read_only_reason
    stale = None
    try:
        problems = db.integrity_errors()
        report.add("sqlite integrity_check", not problems, "; ".join(problems) if problems else "ok")
        if problems:
            _offer_snapshot(report)
            return report
        with db.reading():
            _check_commits(db, report)
            _check_tables(db, root, report)
            stale = _graph_stamp_problem(db, root)
    except GearError as exc:
        report.add("tables", False, str(exc))
    finally:
        db.close()
    _offer_snapshot(report)
    _check_graph_cache(root, report, stale)
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
        index.load(parts)
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


GRAPH_MANIFEST = Path(PPR_GRAPH_FILE).with_suffix(".json").name
"""The PPR graph's manifest (``gear_agent.expansion.ppr_graph_files`` writes it beside the
index): each file of the graph cache with its xxh3 checksum, the phrase ANN's included."""


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
    held = Stamp.from_dict(manifest.get("stamp"))
    index_id = str(db.meta(INDEX_ID_KEY) or "")
    now = db.generation()
    if held is None:
        return f"{GRAPH_MANIFEST} records no stamp (saved before index stamps, generation " \
               f"{manifest.get('generation', '?')}): it is not trusted"
    if held.index_id != index_id:
        return f"{GRAPH_MANIFEST} reflects another index ({held}); this index is {index_id or '(no id yet)'}"
    if held.generation > now:
        return f"{GRAPH_MANIFEST} reflects generation {held.generation}, past this index's last commit " \
               f"{now} (a rolled-back index)"
    if stamp_at(db, held.generation, index_id) != held:
        return f"{GRAPH_MANIFEST} reflects commit {held.commit} of generation {held.generation}; this " \
               f"index's commit {held.generation} is another (rolled back and written again)"
    return None


def _check_graph_cache(root: Path, report: CheckReport, stale: str | None = None) -> None:
    """The PPR graph cache's files against its manifest, and ``stale``: why it reflects no
    state of the index (:func:`_graph_stamp_problem`). Derived: a bad or stale file makes the
    next ``ppr``/``hipporag`` query rebuild it, and ``--repair`` rebuilds it now."""
    manifest_file = root / GRAPH_MANIFEST
    if not manifest_file.exists():
        if (root / PPR_GRAPH_FILE).exists():
            report.add("PPR graph cache", False, f"{GRAPH_MANIFEST} is missing; --repair rebuilds the graph",
                       derived=True)
        return
    try:
        manifest = json.loads(manifest_file.read_text(encoding="utf-8"))
        entries = [*manifest.get("segments", []), *([manifest["ann"]] if manifest.get("ann") else [])]
        bad = [e["file"] for e in entries if not verify(root / e["file"], e["checksum"])]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        report.add("PPR graph cache", False, f"{GRAPH_MANIFEST} cannot be read ({exc}); --repair rebuilds "
                   "the graph", derived=True)
        return
    if bad:
        report.add("PPR graph cache", False, f"{', '.join(bad)} missing or failing its checksum; --repair "
                   "rebuilds it", derived=True)
    elif stale is not None:
        report.add("PPR graph cache", False, f"stale: {stale}; --repair rebuilds it", derived=True)
    else:
        report.add("PPR graph cache", True, f"{len(entries)} file(s), every checksum matches"
                   + (f", {Stamp.from_dict(manifest.get('stamp'))}" if manifest.get("stamp") else ""),
                   derived=True)


def repair_index(root: Path, report: CheckReport, embedder, tokenizer: str = "standard",  # noqa: ANN001
                 progress=None) -> list[str]:  # noqa: ANN001
    """Mend what ``report`` found that is derived (vectors, postings, ANN parts), restore a
    damaged database from the newest good snapshot, and accept a lost commit; returns what
    was done, one line each. The PPR graph cache is the caller's (it lives above the store).

    An edited record stays reported (primary data: re-index it); the rest is repaired.

    Raises:
        IndexCorruptError: the database itself is damaged and no good snapshot exists
            (nothing is repaired).
    """
    from gear_agent.store.embedded.store import EmbeddedStore

    done = []
    if report.restorable_from and report.failing(*RESTORED_PARTS, "commit counter"):
        from gear_agent.store.embedded.snapshot import restore

        done.append(restore(root).line())
        report = check_index(root)
    if report.failing("sqlite integrity_check", "tables", "format", "index"):
        raise IndexCorruptError(
            f"the index at {root} cannot be repaired: index.sqlite, which holds the primary data, is "
            "damaged (--repair rebuilds only what is derived from it) and there is no good snapshot to "
            "restore (`gear snapshot` takes one); index the corpus again into a new folder")
    if report.failing("commit counter"):
        db = Database(root, 10.0)
        try:
            held = db.accept_lost_commits()
        finally:
            db.close()
        done.append(f"went on from commit {held}; index what the lost commits added again")
    store = EmbeddedStore.open(root, embedder, create=False, tokenizer=tokenizer, verify=False)
    try:
        done.extend(store.repair(vectors=report.failing("vectors"), postings=report.failing("BM25 segments"),
                                 ann=report.failing("ANN"), progress=progress))
    finally:
        store.close()
    return done


def integrity_errors(root: Path) -> list[str]:
    """SQLite's ``quick_check`` findings for the index at ``root`` (empty: sound): what
    ``gear index`` runs before it writes (``gear check`` runs the full ``integrity_check``)."""
    db = Database(root, 10.0, readonly=True)
    try:
        return db.integrity_errors(limit=3, quick=True)
    finally:
        db.close()
