"""The SiReRAG pool as derived state: brought up to date from the change feed by the one rule.

The pool records the stamp of the commit it reflects (node meta ``stamp``, see
:class:`~gear_agent.store.changes.Stamp`) and :class:`SiReRAGPool` implements
:class:`~gear_agent.store.changes.Derived`, so :func:`~gear_agent.store.changes.bring_up_to_date`
keeps it fresh as it keeps the PPR graph: equal stamps are fresh, a stamp of this index's
history takes the changes since, any other is rebuilt.

What the changes do to the pool (no LLM on this path):

* **Added passages are placed** in the trees: each joins the proposition aggregates of
  the entities its stored triples name (relatedness tree), and, in a full pool, the level-1
  similarity summary nearest to it by cosine (similarity tree). A placed passage counts
  as one of that node's passages in the ``sirerag`` retriever; the node is **marked for
  refresh**, since its text does not mention the passage yet. On the write path of an
  ablation pool (``persist``) the aggregates are instead recomputed from the stored triples
  (:func:`~gear_agent.sirerag.build.build_ablation`: no LLM, only changed aggregates
  embedded), which is exactly a rebuild's pool. A full pool's summaries and the new
  passages' propositions need the LLM: ``gear sirerag build --mode full`` re-summarises
  (and reclusters) them, and clears the placements it supersedes.
* **Removed passages** leave every node's provenance in the commit that deletes them (the
  store does it); here their placements are dropped and the summaries that had them as
  children are marked for refresh.
* **Rebuild** (a stamp the store does not know: a rolled-back index, or a pool of no
  recorded stamp): the placements are made again from scratch (every passage under no
  node is placed); with ``persist`` an ablation pool is built again.

The write path (``gear index``) brings the pool up to date and saves it (``persist``);
the ``sirerag`` retriever brings its own copy up to date on first use, in memory, when
another process wrote and did not (it never writes to the index).
``benchmarks/sirerag_freshness.py`` measures placing against rebuilding.

Example:
    >>> pool = SiReRAGPool(store, persist=True)  # doctest: +SKIP
    >>> pool.update(store)  # doctest: +SKIP
    PoolUpdate(placed=3, unplaced=0, removed=0, refresh=4, rebuilt=False)
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from gear_agent.sirerag.pool_meta import PLACED_KEY, REFRESH_KEY, STAMP_KEY
from gear_agent.sirerag.propositions import entity_keys
from gear_agent.store.backends import node_store_of
from gear_agent.store.base import Store
from gear_agent.store.changes import Changes, Stamp, bring_up_to_date
from gear_agent.store.nodes import NodeStore
from gear_agent.types import Node

PoolProgress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``: stage ``sirerag pool`` (passages placed)."""

PLACE_BATCH = 4096
"""Passages placed per batch (one progress step each)."""


@dataclass(frozen=True)
class PoolUpdate:
    """What one update did.

    Attributes:
        placed: Passages placed under at least one node.
        unplaced: Added passages no node took (no aggregate names their entities, and no
            similarity summary exists): found by the passage half of the pool only.
        removed: Removed passages whose placements were dropped or whose summaries were marked.
        refresh: Nodes marked for refresh after the update (all of them, not only new).
        rebuilt: The pool was rebuilt (a stamp the store does not know).
    """

    placed: int = 0
    unplaced: int = 0
    removed: int = 0
    refresh: int = 0
    rebuilt: bool = False


def _no_progress(stage: str, done: int, total: int) -> None:
    return None


class SiReRAGPool:
    """The pool's freshness: its stamp, the placements since its last build, the nodes
    marked for refresh (:class:`~gear_agent.store.changes.Derived`).

    Args:
        store: The index (its backend keeps nodes).
        persist: Save the placements with the stamp (the write path); else kept in memory.
        settings: The SiReRAG knobs an ablation rebuild on the write path uses.
    """

    def __init__(self, store: Store, *, persist: bool, settings: object | None = None) -> None:
        self.nodes: NodeStore = node_store_of(store)
        self.persist, self.settings = persist, settings
        self._lock = threading.Lock()
        self._report: PoolProgress = _no_progress
        self._load()

    def _load(self) -> None:
        nodes = self.nodes
        self.mode = nodes.get_meta("mode")
        self.stamp: Stamp | None = Stamp.from_dict(_json(nodes.get_meta(STAMP_KEY), None))
        self.placed: dict[str, list[str]] = {
            str(k): [str(p) for p in v] for k, v in _json(nodes.get_meta(PLACED_KEY), {}).items()}
        self.refresh: set[str] = {str(i) for i in _json(nodes.get_meta(REFRESH_KEY), [])}
        self._saved = (self.stamp, _dump(self.placed), sorted(self.refresh))
        self._stats = PoolUpdate()
        self._ablation_due = False

    # ---- reading --------------------------------------------------------------------
    def placed_under(self, node_ids: Sequence[str]) -> dict[str, list[str]]:
        """Passages placed under each of ``node_ids`` since the last build (empty lists left out)."""
        return {n: list(self.placed[n]) for n in node_ids if self.placed.get(n)}

    # ---- updating -------------------------------------------------------------------
    def update(self, store: Store, progress: PoolProgress | None = None) -> PoolUpdate:
        """Bring the pool to the store's latest commit (:func:`bring_up_to_date`), and with
        ``persist`` save what changed. An index with no pool: nothing to do."""
        with self._lock:
            self._report, self._stats, self._ablation_due = progress or _no_progress, PoolUpdate(), False
            try:
                recorded = Stamp.from_dict(_json(self.nodes.get_meta(STAMP_KEY), None))
                if self.persist or recorded != self._saved[0]:
                    self._load()  # a build (or another writer) recorded a newer pool
                if self.mode is None:
                    return PoolUpdate()
                with store.snapshot():
                    changed = bring_up_to_date(self, store)
                if self._ablation_due:  # writes: outside the snapshot
                    from gear_agent.sirerag.build import build_ablation

                    build_ablation(store, self.settings)  # type: ignore[arg-type]
                    rebuilt = self._stats.rebuilt
                    self._load()
                    self._stats = PoolUpdate(rebuilt=rebuilt)
                elif changed and self.persist:
                    self.save()
                return self._stats
            finally:
                self._report = _no_progress

    def can_apply(self, changes: Changes) -> bool:
        """Every complete change feed is applied (adds placed, removals dropped)."""
        return changes.complete

    def apply(self, store: Store, changes: Changes) -> None:
        if self.persist and self.mode == "ablation" and not changes.empty:
            self._ablation_due = True  # exact: the aggregates recomputed (no LLM)
            return
        removed = self._remove(changes.passages_removed)
        placed, unplaced = self._place(store, list(changes.passages_added))
        self._stats = PoolUpdate(placed, unplaced, removed, len(self.refresh))

    def rebuild(self, store: Store, generation: int) -> None:
        if self.persist and self.mode == "ablation":
            self._ablation_due = True
            self._stats = PoolUpdate(rebuilt=True)
            return
        self.placed, self.refresh = {}, set()
        under = {p for ps in self.nodes.passages_of([n.id for n in self.nodes.iterate()]).values() for p in ps}
        placed, unplaced = self._place(store, [p for p in store.passages.ids() if p not in under])
        self._stats = PoolUpdate(placed, unplaced, 0, len(self.refresh), rebuilt=True)

    def save(self) -> None:
        """Record the stamp, placements and refresh marks beside the nodes (one commit), when
        they differ from what is recorded."""
        now = (self.stamp, _dump(self.placed), sorted(self.refresh))
        if now == self._saved:
            return
        self.nodes.set_meta({
            STAMP_KEY: json.dumps(None if self.stamp is None else self.stamp.as_dict()),
            PLACED_KEY: now[1], REFRESH_KEY: json.dumps(now[2]),
        })
        self._saved = now

    # ---- the work -----------------------------------------------------------------
    def _remove(self, passage_ids: Sequence[str]) -> int:
        gone = set(passage_ids)
        if not gone:
            return 0
        touched = 0
        for node, pids in list(self.placed.items()):
            kept = [p for p in pids if p not in gone]
            touched += len(pids) - len(kept)
            if kept:
                self.placed[node] = kept
            else:
                del self.placed[node]
        for node in self.nodes.iterate():
            if node.kind == "summary" and gone.intersection(node.children):
                self.refresh.add(node.id)
                touched += 1
        return touched

    def _place(self, store: Store, passage_ids: list[str]) -> tuple[int, int]:
        """Place each passage under the aggregates of its triples' entities and (a full
        pool) the nearest level-1 similarity summary; returns (placed, unplaced)."""
        if not passage_ids:
            return 0, 0
        aggregates: dict[str, str] = {}
        summaries: list[Node] = []
        for node in self.nodes.iterate():
            if node.kind == "aggregate" and node.entity:
                aggregates.setdefault(node.entity, node.id)
            elif node.kind == "summary" and node.tree == "similarity" and node.level == 1:
                summaries.append(node)
        summary_vectors = self.nodes.vectors([n.id for n in summaries]) if summaries else None
        placed = unplaced = 0
        for start in range(0, len(passage_ids), PLACE_BATCH):
            self._report("sirerag pool", start, len(passage_ids))
            batch = passage_ids[start : start + PLACE_BATCH]
            targets: list[set[str]] = [set() for _ in batch]
            for i, triple_ids in enumerate(store.triples.of_passages(batch)):
                for triple in store.triples.get(triple_ids):
                    for entity in entity_keys([triple.subject, triple.object]):
                        if entity in aggregates:
                            targets[i].add(aggregates[entity])
            if summary_vectors is not None:
                nearest = np.argmax(self.nodes.passage_vectors(batch) @ summary_vectors.T, axis=1)
                for i, row in enumerate(nearest):
                    targets[i].add(summaries[int(row)].id)
            for pid, nodes in zip(batch, targets):
                for node in sorted(nodes):
                    under = self.placed.setdefault(node, [])
                    if pid not in under:
                        under.append(pid)
                    self.refresh.add(node)
                placed += bool(nodes)
                unplaced += not nodes
        self._report("sirerag pool", len(passage_ids), len(passage_ids))
        return placed, unplaced


def _json(text: str | None, default: object) -> object:
    if not text:
        return default
    try:
        return json.loads(text)
    except ValueError:
        return default


def _dump(placed: dict[str, list[str]]) -> str:
    return json.dumps(placed, sort_keys=True)


def update_pool(store: Store, settings: object | None = None,
                progress: PoolProgress | None = None) -> PoolUpdate | None:
    """The write path's step: bring the index's SiReRAG pool up to date and save it (None
    for a backend that keeps no nodes; an empty update for an index with no pool).

    Example:
        >>> update_pool(store)  # after `gear index` added passages  # doctest: +SKIP
        PoolUpdate(placed=12, unplaced=0, removed=0, refresh=9, rebuilt=False)
    """
    from gear_agent.store.nodes import HasNodes

    if not isinstance(store, HasNodes):
        return None
    return SiReRAGPool(store, persist=True, settings=settings).update(store, progress)
