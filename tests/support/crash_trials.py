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
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gear_agent.ids import passage_id, triple_id  # noqa: E402
from gear_agent.store.ann import AnnPolicy  # noqa: E402
from gear_agent.store.embedded.store import EmbeddedStore, read_manifest  # noqa: E402
from gear_agent.types import Passage, Triple  # noqa: E402
from support.fakes import CountingEmbedder as BagOfWordsEmbedder  # noqa: E402

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
        store.passages.add(batch)
        store.triples.add([t for p in batch for t in by_passage[p.id]])
        store.passages.mark_extracted([p.id for p in batch])


def problems(store: EmbeddedStore) -> list[str]:
    """What is wrong with the index's state: empty when it is one whole committed state."""
    with store.snapshot():
        return _problems(store)


def _problems(store: EmbeddedStore) -> list[str]:
    found = []
    passages = list(store.passages.iterate())
    triples = list(store.triples.iterate())
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
    if store.passages.count() != len(passages) or store.triples.count() != len(triples):
        found.append("counts disagree with the stored items")
    live_rows = tuple(store.view(c).rows - int(store.view(c).dead.sum()) for c in ("passage", "triple"))
    if live_rows != (len(passages), len(triples)):
        found.append("vectors and items disagree")
    if passages:
        last = passages[-1]
        hit = store.passages.bm25_search(last.title, 1)
        if not hit or store.passages.get([hit[0].id])[0].title != last.title:
            found.append("the BM25 postings miss the newest passage")
    return found


def complete(store: EmbeddedStore) -> bool:
    """Whether the whole corpus is indexed, triples and extraction marks included."""
    return (store.passages.count() == N_PASSAGES and store.triples.count() == 2 * N_PASSAGES
            and not store.passages.unextracted())


@dataclass(frozen=True)
class KillTrial:
    """One kill.

    Attributes:
        landed: The index was not complete when the writer was killed (read from the
            index after the kill, not from whether the process was alive).
        delay_s: When the kill was sent: the committed-passage target for indexing kills,
            seconds after the work began for delete and cache kills.
        passages_at_kill: Passages in the index as reopened after the kill.
        triples_at_kill: Triples in it.
        after_kill: Problems of the reopened index (empty: a whole commit).
        after_rerun: Problems after the rerun, including anything missing.
        leftovers: Temporary files left in the index folder after the rerun.
    """

    landed: bool
    delay_s: float
    passages_at_kill: int
    triples_at_kill: int
    after_kill: list[str]
    after_rerun: list[str]
    leftovers: int


def _committed_passages(path: Path) -> int:
    try:
        manifest = read_manifest(path)
    except Exception:  # the database is being created
        return 0
    return 0 if manifest is None else int(manifest["passages"])


def _wait_for_first_commit(path: Path, writer: Any, deadline_s: float = 60.0) -> None:
    deadline = time.monotonic() + deadline_s
    while _committed_passages(path) == 0 and writer.is_alive() and time.monotonic() < deadline:
        time.sleep(0.002)


def indexing_seconds(folder: Path) -> float:
    """How long a whole indexing run takes here, from its first commit to its end."""
    context = multiprocessing.get_context("spawn")
    writer = context.Process(target=index_everything, args=(str(folder / "calibration"),))
    writer.start()
    _wait_for_first_commit(folder / "calibration", writer)
    started = time.monotonic()
    writer.join(120)
    return time.monotonic() - started


def _wait_for_passages(path: Path, target: int, writer: Any, deadline_s: float = 120.0) -> None:
    deadline = time.monotonic() + deadline_s
    while _committed_passages(path) < target and writer.is_alive() and time.monotonic() < deadline:
        time.sleep(0.001)


def kill_trial(path: Path, target: int) -> KillTrial:
    """Start a writer at ``path``, SIGKILL it as soon as ``target`` passages are committed
    (read from the index, so the kill point does not depend on the machine's load), reopen,
    rerun, check."""
    context = multiprocessing.get_context("spawn")
    writer = context.Process(target=index_everything, args=(str(path),))
    writer.start()
    _wait_for_passages(path, target, writer)
    delay_s = float(target)
    if writer.is_alive():
        os.kill(writer.pid, signal.SIGKILL)
    writer.join(30)
    reopened = EmbeddedStore.open(path, BagOfWordsEmbedder())
    after_kill = problems(reopened)
    landed = not complete(reopened)
    at_kill = (reopened.passages.count(), reopened.triples.count())
    reopened.close()
    index_everything(str(path))
    final = EmbeddedStore.open(path, BagOfWordsEmbedder())
    after_rerun = problems(final)
    if final.passages.count() != N_PASSAGES or final.triples.count() != 2 * N_PASSAGES:
        after_rerun.append(
            f"{final.passages.count()} passages and {final.triples.count()} triples after "
            f"the rerun, not {N_PASSAGES} and {2 * N_PASSAGES}"
        )
    if final.passages.unextracted():
        after_rerun.append(f"{len(final.passages.unextracted())} passages left unextracted")
    final.close()
    return KillTrial(
        landed=landed,
        delay_s=delay_s,
        passages_at_kill=at_kill[0],
        triples_at_kill=at_kill[1],
        after_kill=after_kill,
        after_rerun=after_rerun,
        leftovers=len(list(path.glob(".tmp-*"))),
    )


def kill_delays(duration_s: float, kills: int, rng: random.Random) -> list[float]:
    """``kills`` kill times spread over the whole run: one at a random point of each of
    ``kills`` equal slices of ``[0, duration_s)`` (stratified, so every part of the run is hit)."""
    width = duration_s / kills
    return [width * (i + rng.random()) for i in range(kills)]


def kill_targets(kills: int, rng: random.Random) -> list[int]:
    """``kills`` kill points spread over the whole run: a random committed-passage count in
    each of ``kills`` equal slices of ``[1, N_PASSAGES)``."""
    width = (N_PASSAGES - 1) / kills
    return [1 + int(width * (i + rng.random())) for i in range(kills)]


def kill_trials(
    folder: Path, kills: int, seed: int = 20261122, tries: int = 3
) -> tuple[list[KillTrial], int]:
    """``kills`` kills spread over a whole indexing run, each sent once the index holds a
    target number of passages (one target in each equal slice of the corpus).

    A kill that the index shows came after the last commit (the writer outran the
    poll on a loaded machine) is tried again at the same target, up to ``tries`` times, so
    the count of kills that landed mid-indexing does not depend on the machine's load.
    Every attempt is returned and checked, landed or not.

    Returns:
        Every trial and the number of attempts.
    """
    rng = random.Random(seed)
    trials: list[KillTrial] = []
    for i, target in enumerate(kill_targets(kills, rng)):
        for attempt in range(tries):
            trial = kill_trial(folder / f"trial-{i + 1}-{attempt + 1}", target)
            trials.append(trial)
            if trial.landed:
                break
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
            sizes.add(store.passages.count())
            store.close()
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


# ---- kills during delete and during cache writes -----------------------------------------
def delete_everything(path: str) -> None:
    """Delete the corpus batch by batch (one transaction per ``BATCH`` passages), in order."""
    store = EmbeddedStore.open(Path(path), BagOfWordsEmbedder())
    passages, _ = corpus()
    for start in range(0, len(passages), BATCH):
        store.passages.remove([p.id for p in passages[start : start + BATCH]])


def delete_problems(store: EmbeddedStore) -> list[str]:
    """What is wrong with a state reached by deleting the corpus in order: empty when whole."""
    with store.snapshot():
        found = []
        expected, _ = corpus()
        ids = [p.id for p in store.passages.iterate()]
        if ids != [p.id for p in expected[len(expected) - len(ids):]]:
            found.append("the passages left are not a suffix of the corpus")
        if len(ids) % BATCH:
            found.append("half a delete batch is visible")
        triples = list(store.triples.iterate())
        if len(triples) != 2 * len(ids) or not all(t.passage_id in set(ids) for t in triples):
            found.append("triples and passages disagree")
        if store.passages.count() != len(ids):
            found.append("the count disagrees with the stored passages")
        gone = expected[0]
        if len(ids) < len(expected) and any(h.id == gone.id for h in store.passages.bm25_search(gone.title, 5)):
            found.append("BM25 still finds a deleted passage")
        return found


def _started(marker: Path, writer: Any, deadline_s: float = 60.0) -> None:
    deadline = time.monotonic() + deadline_s
    while not marker.exists() and writer.is_alive() and time.monotonic() < deadline:
        time.sleep(0.002)


def _delete_with_marker(path: str) -> None:
    (Path(path) / "deleting").touch()
    delete_everything(path)


def delete_kill_trial(path: Path, target: int) -> KillTrial:
    """Index the corpus, start deleting it in a child, SIGKILL it once at most ``target``
    passages are left (read from the index), reopen, check, finish the delete, re-index."""
    index_everything(str(path))
    context = multiprocessing.get_context("spawn")
    writer = context.Process(target=_delete_with_marker, args=(str(path),))
    writer.start()
    _started(path / "deleting", writer)
    deadline = time.monotonic() + 120
    while _committed_passages(path) > target and writer.is_alive() and time.monotonic() < deadline:
        time.sleep(0.001)
    delay_s = float(target)
    if writer.is_alive():
        os.kill(writer.pid, signal.SIGKILL)
    writer.join(30)
    reopened = EmbeddedStore.open(path, BagOfWordsEmbedder())
    after_kill = delete_problems(reopened)
    at_kill = (reopened.passages.count(), reopened.triples.count())
    reopened.close()
    delete_everything(str(path))
    after_rerun = []
    emptied = EmbeddedStore.open(path, BagOfWordsEmbedder())
    if emptied.passages.count() or emptied.triples.count():
        after_rerun.append("the rerun did not delete everything")
    emptied.close()
    index_everything(str(path))  # and everything can come back
    final = EmbeddedStore.open(path, BagOfWordsEmbedder())
    after_rerun += problems(final) + ([] if complete(final) else ["the re-index is incomplete"])
    final.close()
    return KillTrial(0 < at_kill[0] < N_PASSAGES, delay_s, at_kill[0], at_kill[1], after_kill, after_rerun,
                     len(list(path.glob(".tmp-*"))))


CACHE_ROWS = 64
"""ANN thresholds for the cache trials, so a 480-passage index builds ANN parts."""


SMALL_ANN = AnnPolicy(min_rows=CACHE_ROWS, tail_max=8)
"""ANN parts from ``CACHE_ROWS`` rows on, so the small corpus gets some."""


def _maintain_with_marker(path: str) -> None:
    store = EmbeddedStore.open(Path(path), BagOfWordsEmbedder(), ann=SMALL_ANN)
    (Path(path) / "maintaining").touch()
    store.maintain()


def cache_problems(store: EmbeddedStore) -> list[str]:
    """A state after a kill during an ANN write: searches must equal exact search."""
    found = []
    embedder = BagOfWordsEmbedder()
    for text in ("Town 3 lies on river 3", "founded in 1200", "river 5"):
        for collection in ("passage", "triple"):
            vector = embedder.embed_one(text)
            got = store.collection(collection).vector_search(vector, 5)
            want = store.collection(collection).exact_vector_search(vector, 5)
            if [round(h.score, 5) for h in got] != [round(h.score, 5) for h in want]:
                found.append(f"{collection} search differs from exact search")
    return found


def cache_kill_trial(path: Path, delay_s: float) -> KillTrial:
    """Index the corpus, SIGKILL a child while it writes the ANN parts, reopen, check, rebuild."""
    index_everything(str(path))
    context = multiprocessing.get_context("spawn")
    writer = context.Process(target=_maintain_with_marker, args=(str(path),))
    writer.start()
    _started(path / "maintaining", writer)
    time.sleep(delay_s)
    if writer.is_alive():
        os.kill(writer.pid, signal.SIGKILL)
    writer.join(30)
    reopened = EmbeddedStore.open(path, BagOfWordsEmbedder(), ann=SMALL_ANN)
    covered = reopened.view("passage").ann.covered + reopened.view("triple").ann.covered
    after_kill = problems(reopened) + cache_problems(reopened)
    reopened.maintain()
    after_rerun = cache_problems(reopened)
    if reopened.view("triple").ann.covered != reopened.view("triple").rows:
        after_rerun.append("the ANN does not cover the triples after maintenance")
    reopened.close()
    landed = covered < 2 * N_PASSAGES + N_PASSAGES
    return KillTrial(landed, delay_s, covered, 0, after_kill, after_rerun, len(list(path.glob(".tmp-*"))))


def spread_trials(
    folder: Path, kills: int, trial: Any, duration_s: float, seed: int = 20261122
) -> list[KillTrial]:
    """``kills`` runs of ``trial(path, delay)`` with delays spread over ``[0, duration_s)``."""
    rng = random.Random(seed)
    return [trial(folder / f"trial-{i + 1}", delay) for i, delay in enumerate(kill_delays(duration_s, kills, rng))]
