"""An interrupted sync (SIGKILL at commits spread over the run) leaves every source in its
old version or its new one, never both and never neither; a rerun finishes it."""

from __future__ import annotations

from support.sync_crash import SOURCES, sync_kill_trials


def test_a_killed_sync_leaves_each_source_old_or_new(tmp_path):
    trials = sync_kill_trials(tmp_path, kills=3)
    for trial in trials:
        assert set(trial.after_kill) <= {"old", "new"}, trial
        assert sum(trial.after_kill.values()) == SOURCES, trial
        assert trial.after_rerun == {"new": SOURCES}, trial
    assert any(t.landed for t in trials), [t.after_kill for t in trials]
