"""``gear check --repair`` of an embedded index: rebuild what is derived, restore a damaged
database from the newest good snapshot (:mod:`gear_agent.store.embedded.snapshot`), accept a
lost commit. The checks themselves are :mod:`gear_agent.store.embedded.check`'s.
"""

from __future__ import annotations

from pathlib import Path

from gear_agent.store.base import IndexCorruptError
from gear_agent.store.check_report import RESTORED_PARTS, CheckReport
from gear_agent.store.embedded.check import check_index
from gear_agent.store.embedded.db import Database
from gear_agent.store.embedded.snapshot import restore
from gear_agent.store.embedded.store import EmbeddedStore


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
    done = []
    if report.restorable_from and report.failing(*RESTORED_PARTS, "commit counter"):
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
