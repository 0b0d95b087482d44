"""What ``gear check`` reports, for every backend: one item per part checked, the check of
the PPR graph cache, which lives beside any index (its folder or ``GEAR_ES_CACHE_DIR``), and
the identity check of every derived structure that records the stamp it reflects
(:func:`stamp_problem`: the PPR graph, the SiReRAG pool, Elasticsearch's expansion cache).

Each backend's check (:mod:`gear_agent.store.embedded.check`,
:mod:`gear_agent.store.elasticsearch.check`) fills a :class:`CheckReport`; the backend table
(:mod:`gear_agent.store.backends`) runs it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gear_agent.store.changes import Stamp
from gear_agent.store.derived_files import PPR_GRAPH_FILE, verify


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


GRAPH_MANIFEST = Path(PPR_GRAPH_FILE).with_suffix(".json").name
"""The PPR graph's manifest (``gear_agent.expansion.ppr_graph_files`` writes it beside the
index): each file of the graph cache with its xxh3 checksum, the phrase ANN's included."""


def check_graph_cache(root: Path, report: CheckReport, stale: str | None = None) -> None:
    """The PPR graph cache's files against its manifest, and ``stale``: why it reflects no
    state of the index (the backend's check finds it). Derived: a bad or stale file makes the
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


def stamp_problem(what: str, held: Stamp | None, index_id: str, now: int,
                  known: Callable[[Stamp], bool]) -> str | None:
    """Why derived state recording ``held`` reflects no state of this index (None: it reflects
    its last commit or an earlier one, which the next use brings up to date from the change
    feed by the one rule, :func:`~gear_agent.store.changes.bring_up_to_date`).

    Args:
        what: The derived file or record, as the message names it.
        held: The stamp it records (None: none, or unreadable).
        index_id: This index's id.
        now: This index's last commit.
        known: Whether a stamp of this index at a generation up to ``now`` names one of its
            commits (the embedded store compares the commit's digest; Elasticsearch, which
            keeps no digest, whether the change feed reaches it).

    Example:
        >>> stamp_problem("pool", Stamp("a", 3, "x"), "b", 5, lambda s: True)
        'pool reflects another index (index a, generation 3, commit x); this index is b'
    """
    if held is None:
        return f"{what} records no stamp (made before index stamps): it is not trusted"
    if held.index_id != index_id:
        return f"{what} reflects another index ({held}); this index is {index_id or '(no id yet)'}"
    if held.generation > now:
        return f"{what} reflects generation {held.generation}, past this index's last commit {now} " \
               "(a rolled-back index)"
    if not known(held):
        return f"{what} reflects commit {held.commit or '-'} of generation {held.generation}; this index's " \
               f"commit {held.generation} is another (rolled back and written again), or one its change " \
               "feed no longer reaches"
    return None


def check_stamp(report: CheckReport, name: str, held: Stamp | None, problem: str | None, now: int) -> None:
    """One derived structure's identity: ok when it reflects a commit of this index (the next
    use takes in the changes since ``now``, the index's last commit), else stale, which
    ``--repair`` rebuilds."""
    if problem is None:
        behind = now - held.generation if held is not None else 0
        report.add(name, True, f"reflects {held}" + (f" ({behind} commit(s) behind: its next update takes in "
                                                      "the changes since)" if behind > 0 else ""), derived=True)
    else:
        report.add(name, False, f"stale: {problem}; --repair rebuilds it", derived=True)
