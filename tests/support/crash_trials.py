"""Kill an indexing process at a random moment and check what it left behind.

A writer process indexes a synthetic corpus into the embedded store in committed batches
(passages, then their triples, then the extracted marks). :func:`kill_trial` SIGKILLs it
after a random delay, reopens the index, checks that it is one whole committed state,
reruns the indexing to completion and checks that nothing is duplicated or lost.
:func:`reader_trial` opens the index over and over in another process while a writer
commits, and checks every state it sees.

Used by ``tests/integration/test_crash_safety.py`` (assertions) and
``benchmarks/crash_kills.py`` (the counts in the README).
"""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from index_fakes import FakeBagOfWordsEmbedder as BagOfWordsEmbedder  # noqa: E402

from gear_agent.ids import passage_id, triple_id  # noqa: E402
from gear_agent.store.embedded import EmbeddedStore  # noqa: E402
from gear_agent.types import Passage, Triple  # noqa: E402

N_PASSAGES = 480
"""Passages in the synthetic corpus; each has 2 triples."""

BATCH = 16
"""Passages per committed batch."""


def corpus() -> tuple[list[Passage], list[Triple]]:
    """The synthetic corpus: ``N_PASSAGES`` towns, two triples each."""
    passages, triples = [], []
    for i in range(N_PASSAGES):
        title, text = f"Town {i}", f"Town {i} lies on river {i % 7} and was founded in {1000 + i}."
        p = Passage(passage_id(title, text), title, text, "crash-test")
        passages.append(p)
        for s, r, o in ((title, "lies on", f"river {i % 7}"), (title, "founded in", str(1000 + i))):
            triples.append(Triple(triple_id(p.id, s, r, o), s, r, o, p.id))
    return passages, triples


def index_everything(path: str) -> None:
    """Index the whole corpus at ``path`` in batches; already stored items are skipped."""
    store = EmbeddedStore.open(Path(path), BagOfWordsEmbedder())
    passages, triples = corpus()
    by_passage: dict[str, list[Triple]] = {}
    for t in triples:
        by_passage.setdefault(t.passage_id, []).append(t)
    for start in range(0, len(passages), BATCH):
        batch = passages[start : start + BATCH]
        store.add_passages(batch)
        store.add_triples([t for p in batch for t in by_passage[p.id]])
        store.mark_extracted([p.id for p in batch])


def problems(store: EmbeddedStore) -> list[str]:
    """What is wrong with the index's state: empty when it is one whole committed state."""
    found = []
    passages = list(store.iter_passages())
    triples = list(store.iter_triples())
    ids = [p.id for p in passages]
    if len(ids) != len(set(ids)):
        found.append("duplicate passages")
    if len({t.id for t in triples}) != len(triples):
        found.append("duplicate triples")
    known = set(ids)
    if not all(t.passage_id in known for t in triples):
        found.append("a triple without its passage")
    expected, _ = corpus()
    if ids != [p.id for p in expected[: len(ids)]]:
        found.append("the passages are not a prefix of the corpus (lost or reordered)")
    if store.count("passage") != len(passages) or store.count("triple") != len(triples):
        found.append("counts disagree with the stored items")
    vectors = (store._passage_vectors.shape[0], store._triple_vectors.shape[0])
    if vectors != (len(passages), len(triples)):
        found.append("vectors and items disagree")
    return found


@dataclass(frozen=True)
class KillTrial:
    """One kill.

    Attributes:
        landed: The writer was still indexing when it was killed.
        passages_at_kill: Passages in the index as reopened after the kill.
        triples_at_kill: Triples in it.
        after_kill: Problems of the reopened index (empty: a whole commit).
        after_rerun: Problems after the rerun, including anything missing.
        leftovers: Temporary files left in the index folder after the rerun.
    """

    landed: bool
    passages_at_kill: int
    triples_at_kill: int
    after_kill: list[str]
    after_rerun: list[str]
    leftovers: int


def _wait_for_first_commit(path: Path, writer: Any, deadline_s: float = 60.0) -> None:
    deadline = time.monotonic() + deadline_s
    while not (path / "CURRENT").exists() and writer.is_alive() and time.monotonic() < deadline:
        time.sleep(0.005)


def kill_trial(path: Path, rng: random.Random, max_delay_s: float = 1.0) -> KillTrial:
    """Start a writer at ``path``, SIGKILL it after a random delay, reopen, rerun, check."""
    context = multiprocessing.get_context("spawn")
    writer = context.Process(target=index_everything, args=(str(path),))
    writer.start()
    _wait_for_first_commit(path, writer)  # start-up time varies; indexing time less so
    time.sleep(rng.uniform(0.0, max_delay_s))
    landed = writer.is_alive()
    if landed:
        os.kill(writer.pid, signal.SIGKILL)
    writer.join(30)
    reopened = EmbeddedStore.open(path, BagOfWordsEmbedder())
    after_kill = problems(reopened)
    at_kill = (reopened.count("passage"), reopened.count("triple"))
    index_everything(str(path))
    final = EmbeddedStore.open(path, BagOfWordsEmbedder())
    after_rerun = problems(final)
    if final.count("passage") != N_PASSAGES or final.count("triple") != 2 * N_PASSAGES:
        after_rerun.append(
            f"{final.count('passage')} passages and {final.count('triple')} triples after "
            f"the rerun, not {N_PASSAGES} and {2 * N_PASSAGES}"
        )
    if final.unextracted_passages():
        after_rerun.append(f"{len(final.unextracted_passages())} passages left unextracted")
    return KillTrial(
        landed=landed,
        passages_at_kill=at_kill[0],
        triples_at_kill=at_kill[1],
        after_kill=after_kill,
        after_rerun=after_rerun,
        leftovers=len(list(path.glob(".tmp-*"))),
    )


def kill_trials(folder: Path, kills: int, seed: int = 20261122) -> tuple[list[KillTrial], int]:
    """Trials until ``kills`` kills have landed mid-indexing (at most 3x as many attempts).

    Returns:
        Every trial (landed or not) and the number of attempts.
    """
    rng = random.Random(seed)
    trials: list[KillTrial] = []
    while sum(t.landed for t in trials) < kills and len(trials) < 3 * kills:
        trials.append(kill_trial(folder / f"trial-{len(trials) + 1}", rng))
    return trials, len(trials)


def _read_repeatedly(path: str, seconds: float, results: Any) -> None:
    deadline = time.monotonic() + seconds
    seen, bad = 0, []
    sizes: set[int] = set()
    try:
        while time.monotonic() < deadline:
            try:
                store = EmbeddedStore.open(Path(path), BagOfWordsEmbedder(), create=False)
            except Exception as exc:  # no commit yet
                if "no index" in str(exc):
                    continue
                raise
            found = problems(store)
            if found:
                bad.append(found)
            sizes.add(store.count("passage"))
            seen += 1
        results.put(("ok", seen, len(sizes), bad[:3]))
    except BaseException as exc:  # report to the parent
        results.put(("error", 0, 0, [repr(exc)]))


@dataclass(frozen=True)
class ReaderTrial:
    """A reader opening the index while a writer commits.

    Attributes:
        opened: Times the reader opened the index.
        distinct_states: Distinct passage counts it saw (how many commits it caught).
        bad_states: Problems of states that were not whole commits (empty when all were).
        error: An unexpected error in the reader, else None.
    """

    opened: int
    distinct_states: int
    bad_states: list[list[str]]
    error: str | None


def reader_trial(path: Path, seconds: float = 6.0) -> ReaderTrial:
    """Index at ``path`` in one process while another opens it repeatedly for ``seconds``."""
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    reader = context.Process(target=_read_repeatedly, args=(str(path), seconds, results))
    writer = context.Process(target=index_everything, args=(str(path),))
    writer.start()
    reader.start()
    writer.join(120)
    reader.join(60)
    status, opened, distinct, bad = results.get(timeout=10)
    error = bad[0] if status == "error" else None
    return ReaderTrial(opened, distinct, [] if error else bad, error)
