"""Kill a sync (``gear index`` of edited sources) at random commits and check each source.

A child process syncs :data:`SOURCES` sources from their old version to their new one (each
new version changes two of its chunks, drops one and adds one) into the embedded store, one
commit per :data:`SOURCES_PER_COMMIT` sources, with an embedder slowed down so that the kill
lands while a commit is being built as well as between commits. :func:`sync_kill_trial`
SIGKILLs it once the index's generation reaches a target (read from the index, so the
machine's load cannot move the kill), reopens the index and sorts every source into old,
new, mixed (both versions, or parts of each) or missing (neither), then reruns the sync and
checks that every source is new.

Used by ``tests/integration/test_sync_crash.py`` (assertions) and
``benchmarks/sync_kills.py`` (the counts).
"""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gear_agent.ids import passage_id
from gear_agent.indexing import IndexReport
from gear_agent.sources import sync_passages
from gear_agent.store.embedded.store import EmbeddedStore, read_manifest
from gear_agent.types import Passage
from support.fakes import CountingEmbedder

SOURCES = 24
"""Sources synced, each a file of four chunks."""

SOURCES_PER_COMMIT = 3
"""Sources per commit (each has 3 new or stale chunks: a commit closes at 9)."""


class SlowEmbedder(CountingEmbedder):
    """The counting stand-in, a few milliseconds a text (a commit takes long enough to be
    killed inside)."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        time.sleep(0.004 * len(texts))
        return super().embed(texts)


def version(number: int) -> list[Passage]:
    """Every source's passages in version 1 (old) or 2 (new)."""
    passages = []
    for s in range(SOURCES):
        source = f"/sync-test/doc-{s}.txt"
        chunks = [f"Doc {s} part {c} says the river {c} rises in spring." for c in range(4)]
        if number == 2:
            chunks[1] = chunks[1].replace("spring", "autumn")
            chunks[2] = chunks[2].replace("river", "lake")
            chunks[3] = f"Doc {s} gained a new closing part."
        passages += [Passage(passage_id(f"doc {s}", c), f"doc {s}", c, source) for c in chunks]
    return passages


def sources() -> list[str]:
    return [f"/sync-test/doc-{s}.txt" for s in range(SOURCES)]


def sync_to(path: str, number: int) -> None:
    """Sync every source at ``path`` to version ``number``."""
    store = EmbeddedStore.open(Path(path), SlowEmbedder())
    sync_passages(store, version(number), sources(), IndexReport(), batch=3 * SOURCES_PER_COMMIT)
    store.close()


def states(path: Path) -> Counter[str]:
    """How many sources the index at ``path`` holds in their ``old`` or ``new`` version, how
    many ``mixed`` and how many ``missing``."""
    old = {p.source: set() for p in version(1)}
    new = {p.source: set() for p in version(2)}
    for p in version(1):
        old[p.source].add(p.id)
    for p in version(2):
        new[p.source].add(p.id)
    store = EmbeddedStore.open(path, CountingEmbedder())
    found: Counter[str] = Counter()
    with store.snapshot():
        for source in sources():
            ids = set(store.passages.ids_of_source(source))
            found["old" if ids == old[source] else "new" if ids == new[source]
                  else "missing" if not ids else "mixed"] += 1
    store.close()
    return found


@dataclass(frozen=True)
class SyncKill:
    """One kill of a sync.

    Attributes:
        target: The sync commit (1-based) after which the kill was sent.
        after_kill: Sources by state in the reopened index (``old``, ``new``, ``mixed``,
            ``missing``).
        after_rerun: The same after the sync was run again.
    """

    target: int
    after_kill: dict[str, int]
    after_rerun: dict[str, int]

    @property
    def landed(self) -> bool:
        """The kill left the sync part done (some sources old, some new)."""
        return self.after_kill.get("old", 0) > 0 and self.after_kill.get("new", 0) > 0


def _generation(path: Path) -> int:
    try:
        manifest = read_manifest(path)
    except Exception:  # being written
        return -1
    return -1 if manifest is None else int(manifest.get("generation", 0))


def sync_kill_trial(path: Path, target: int) -> SyncKill:
    """Index version 1 at ``path``, start a child syncing it to version 2, SIGKILL it once
    ``target`` of its commits are in, reopen, count, rerun, count."""
    sync_to(str(path), 1)
    start = _generation(path)
    context = multiprocessing.get_context("spawn")
    writer = context.Process(target=sync_to, args=(str(path), 2))
    writer.start()
    deadline = time.monotonic() + 120
    while _generation(path) < start + target and writer.is_alive() and time.monotonic() < deadline:
        time.sleep(0.001)
    if writer.is_alive():
        os.kill(writer.pid, signal.SIGKILL)
    writer.join(30)
    after_kill = dict(states(path))
    sync_to(str(path), 2)
    return SyncKill(target, after_kill, dict(states(path)))


def commits() -> int:
    """Commits one whole sync makes."""
    return -(-SOURCES // SOURCES_PER_COMMIT)


def sync_kill_trials(folder: Path, kills: int, seed: int = 20261128) -> list[SyncKill]:
    """``kills`` kills, one after a random commit of each equal slice of the sync."""
    rng = random.Random(seed)
    width = (commits() - 1) / kills
    targets = [1 + int(width * (i + rng.random())) for i in range(kills)]
    return [sync_kill_trial(folder / f"trial-{i}", t) for i, t in enumerate(targets)]
