"""Kill indexing at random points: the index reopens at its last commit, and a rerun completes it.

Each trial starts a writer process that indexes a corpus in committed batches (passages
then their triples), SIGKILLs it after a random delay, checks that the index on disk is a
consistent committed state, reruns the indexing to completion and checks that nothing is
duplicated or lost. A reader process opening the index while a writer commits must always
see a whole generation. ``python benchmarks/crash_kills.py`` prints the counts.
"""

import pytest
from support.crash_trials import BATCH, N_PASSAGES, BagOfWordsEmbedder, kill_trials, reader_trial

KILLS = 12


def test_kill_indexing_at_points_spread_over_the_run(tmp_path):
    """KILLS kills, one in each twelfth of the corpus: each is sent once the index holds a
    target number of passages (read from the index, so the machine's load cannot move the
    kills); whether a kill landed mid-indexing is read from the index afterwards (not from
    the process), so a kill after the last commit counts as finished and is tried again."""
    trials, attempts = kill_trials(tmp_path, KILLS)

    landed = [t for t in trials if t.landed]
    # a kill that came after the last commit is retried at its target (up to 3 tries)
    assert len(landed) == KILLS, f"only {len(landed)} of {attempts} kills landed mid-indexing"
    for trial in trials:
        assert trial.after_kill == [], trial
        assert trial.after_rerun == [], trial
        assert trial.leftovers == 0, trial
    for trial in landed:
        # Landed = the reopened index is not complete; with every passage committed, the kill
        # came before the last triple or mark commit (the index shows which, not the process).
        assert trial.passages_at_kill <= N_PASSAGES
        assert trial.passages_at_kill % BATCH == 0  # whole batches: a commit, never half of one
        assert trial.triples_at_kill <= 2 * trial.passages_at_kill
    at_kill = sorted(t.passages_at_kill for t in landed)
    assert len(set(at_kill)) > KILLS // 3, f"the kills bunched up: {at_kill}"
    assert at_kill[-1] >= N_PASSAGES // 2, f"no kill reached the second half of the run: {at_kill}"


def test_the_checker_reports_lost_passages(tmp_path):
    """The checker itself: a state missing an early batch is not a whole commit."""
    from support.crash_trials import BagOfWordsEmbedder, corpus, problems

    from gear_agent.store.embedded.store import EmbeddedStore

    passages, triples = corpus()
    store = EmbeddedStore.open(tmp_path / "ix", BagOfWordsEmbedder())
    assert problems(store) == []
    store.passages.add(passages[1:3])  # the first passage is lost
    assert any("not a prefix" in p for p in problems(store))


@pytest.mark.slow
def test_a_reader_during_indexing_sees_whole_generations(tmp_path):
    trial = reader_trial(tmp_path / "ix")
    assert trial.error is None, trial.error
    assert trial.bad_states == []
    assert trial.opened > 0


def _timed(work, path):
    import time

    started = time.monotonic()
    work(str(path))
    return time.monotonic() - started


def test_kill_deletes_at_points_spread_over_the_run(tmp_path):
    """Kills while a child deletes the corpus batch by batch: every state is whole, a rerun
    finishes the delete, and the corpus can be indexed again."""
    import random

    from support.crash_trials import delete_kill_trial, kill_targets

    targets = kill_targets(4, random.Random(7))
    trials = [delete_kill_trial(tmp_path / f"trial-{i}", N_PASSAGES - t) for i, t in enumerate(targets)]
    for trial in trials:
        assert trial.after_kill == [] and trial.after_rerun == [] and trial.leftovers == 0, trial
    assert sum(t.landed for t in trials) >= 3, [t.passages_at_kill for t in trials]


def test_kill_ann_cache_writes(tmp_path):
    """Kills while a child builds and saves ANN parts: searches still equal exact search,
    and the next maintenance finishes the parts and leaves no temporary file."""
    from support.crash_trials import (
        SMALL_ANN,
        cache_kill_trial,
        index_everything,
        spread_trials,
    )

    from gear_agent.store.embedded.store import EmbeddedStore

    index_everything(str(tmp_path / "calibration"))
    store = EmbeddedStore.open(tmp_path / "calibration", BagOfWordsEmbedder(), ann=SMALL_ANN)
    duration = _timed(lambda _p: store.maintain(), tmp_path / "calibration")
    trials = spread_trials(tmp_path, 4, cache_kill_trial, duration)
    for trial in trials:
        assert trial.after_kill == [] and trial.after_rerun == [] and trial.leftovers == 0, trial
