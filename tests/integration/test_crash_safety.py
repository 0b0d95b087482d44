"""Kill indexing at random points: the index reopens at its last commit, and a rerun completes it.

Each trial starts a writer process that indexes a corpus in committed batches (passages
then their triples), SIGKILLs it after a random delay, checks that the index on disk is a
consistent committed state, reruns the indexing to completion and checks that nothing is
duplicated or lost. A reader process opening the index while a writer commits must always
see a whole generation. ``python benchmarks/crash_kills.py`` prints the counts.
"""

import pytest
from support.crash_trials import BATCH, N_PASSAGES, kill_trials, reader_trial

KILLS = 20


@pytest.mark.slow
def test_kill_indexing_at_random_points(tmp_path):
    """At least KILLS kills land while the writer is still indexing (attempts are bounded)."""
    trials, attempts = kill_trials(tmp_path, KILLS)

    landed = [t for t in trials if t.landed]
    assert len(landed) >= KILLS, f"only {len(landed)} of {attempts} kills landed mid-indexing"
    for trial in trials:
        assert trial.after_kill == [], trial
        assert trial.after_rerun == [], trial
        assert trial.leftovers == 0, trial
    for trial in landed:
        assert trial.passages_at_kill < N_PASSAGES
        assert trial.passages_at_kill % BATCH == 0  # whole batches: a commit, never half of one
    assert len({t.passages_at_kill for t in landed}) > 1, "every kill hit the same point"


def test_the_checker_reports_lost_passages(tmp_path):
    """The checker itself: a state missing an early batch is not a whole commit."""
    from support.crash_trials import BagOfWordsEmbedder, corpus, problems

    from gear_agent.store.embedded import EmbeddedStore

    passages, triples = corpus()
    store = EmbeddedStore.open(tmp_path / "ix", BagOfWordsEmbedder())
    assert problems(store) == []
    store.add_passages(passages[1:3])  # the first passage is lost
    assert any("not a prefix" in p for p in problems(store))


@pytest.mark.slow
def test_a_reader_during_indexing_sees_whole_generations(tmp_path):
    trial = reader_trial(tmp_path / "ix")
    assert trial.error is None, trial.error
    assert trial.bad_states == []
    assert trial.opened > 0
