"""Kill indexing at random points: the index reopens at its last commit, and a rerun completes it.

Each trial starts a writer process that indexes a corpus in committed batches (passages
then their triples), SIGKILLs it after a random delay, checks that the index on disk is a
consistent committed state, reruns the indexing to completion and checks that nothing is
duplicated or lost. A reader process opening the index while a writer commits must always
see a whole generation.
"""

import multiprocessing
import os
import random
import signal
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from index_fakes import FakeBagOfWordsEmbedder  # noqa: E402

from gear_agent.ids import passage_id, triple_id  # noqa: E402
from gear_agent.store.embedded import EmbeddedStore  # noqa: E402
from gear_agent.types import Passage, Triple  # noqa: E402

N_PASSAGES = 480
BATCH = 16
TRIALS = 20


def corpus() -> tuple[list[Passage], list[Triple]]:
    passages, triples = [], []
    for i in range(N_PASSAGES):
        title, text = f"Town {i}", f"Town {i} lies on river {i % 7} and was founded in {1000 + i}."
        p = Passage(passage_id(title, text), title, text, "crash-test")
        passages.append(p)
        for s, r, o in ((title, "lies on", f"river {i % 7}"), (title, "founded in", str(1000 + i))):
            triples.append(Triple(triple_id(p.id, s, r, o), s, r, o, p.id))
    return passages, triples


def index_everything(path: str) -> None:
    store = EmbeddedStore.open(Path(path), FakeBagOfWordsEmbedder())
    passages, triples = corpus()
    by_passage: dict[str, list[Triple]] = {}
    for t in triples:
        by_passage.setdefault(t.passage_id, []).append(t)
    for start in range(0, len(passages), BATCH):
        batch = passages[start : start + BATCH]
        store.add_passages(batch)
        store.add_triples([t for p in batch for t in by_passage[p.id]])
        store.mark_extracted([p.id for p in batch])


def assert_consistent(store: EmbeddedStore) -> None:
    passages = list(store.iter_passages())
    triples = list(store.iter_triples())
    ids = [p.id for p in passages]
    assert len(ids) == len(set(ids)), "duplicate passages"
    assert len({t.id for t in triples}) == len(triples), "duplicate triples"
    known = set(ids)
    assert all(t.passage_id in known for t in triples), "a triple without its passage"
    expected_passages, _ = corpus()
    assert ids == [p.id for p in expected_passages[: len(ids)]], "not a prefix of the corpus"
    assert len(passages) % BATCH == 0 or len(passages) == N_PASSAGES
    assert store._passage_vectors.shape[0] == len(passages)
    assert store._triple_vectors.shape[0] == len(triples)


def wait_for_first_commit(path: Path, writer, deadline_s: float = 60.0) -> None:
    deadline = time.monotonic() + deadline_s
    while not (path / "CURRENT").exists() and writer.is_alive() and time.monotonic() < deadline:
        time.sleep(0.005)


@pytest.mark.slow
def test_kill_indexing_at_random_points(tmp_path):
    """At least TRIALS kills land while the writer is still indexing (attempts are bounded)."""
    rng = random.Random(20261122)
    context = multiprocessing.get_context("spawn")
    killed = attempts = 0
    while killed < TRIALS:
        attempts += 1
        assert attempts <= 3 * TRIALS, f"only {killed} of {attempts} kills landed mid-indexing"
        path = tmp_path / f"trial-{attempts}"
        writer = context.Process(target=index_everything, args=(str(path),))
        writer.start()
        wait_for_first_commit(path, writer)  # process start-up time varies; indexing time less so
        time.sleep(rng.uniform(0.0, 1.0))
        if writer.is_alive():
            os.kill(writer.pid, signal.SIGKILL)
            killed += 1
        writer.join(30)
        store = EmbeddedStore.open(path, FakeBagOfWordsEmbedder())
        assert_consistent(store)
        index_everything(str(path))  # the rerun completes what was left
        final = EmbeddedStore.open(path, FakeBagOfWordsEmbedder())
        assert_consistent(final)
        assert final.count("passage") == N_PASSAGES and final.count("triple") == 2 * N_PASSAGES
        assert final.unextracted_passages() == []
        assert not list(path.glob(".tmp-*"))


def read_repeatedly(path: str, seconds: float, results) -> None:
    deadline = time.monotonic() + seconds
    seen = 0
    try:
        while time.monotonic() < deadline:
            try:
                store = EmbeddedStore.open(Path(path), FakeBagOfWordsEmbedder(), create=False)
            except Exception as exc:  # no commit yet
                if "no index" in str(exc):
                    continue
                raise
            assert_consistent(store)
            seen += 1
        results.put(("ok", seen))
    except BaseException as exc:  # report to the parent
        results.put(("error", repr(exc)))


@pytest.mark.slow
def test_a_reader_during_indexing_sees_whole_generations(tmp_path):
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    reader = context.Process(target=read_repeatedly, args=(str(tmp_path / "ix"), 6.0, results))
    writer = context.Process(target=index_everything, args=(str(tmp_path / "ix"),))
    writer.start()
    reader.start()
    writer.join(120)
    reader.join(60)
    status, detail = results.get(timeout=10)
    assert status == "ok", detail
    assert detail > 0
