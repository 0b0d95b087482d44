"""Crash safety of sync by source, in counts: SIGKILL a sync of edited sources, reopen, count.

24 sources (four chunks each) are indexed, then a child process syncs them to a new version
(two chunks edited, one dropped, one added per source), three sources per commit, and is
SIGKILLed after a random commit in each of ``--kills`` equal slices of the run. The
reopened index's sources are sorted into old, new, mixed (parts of both) and missing
(neither); the sync is rerun and the sources counted again. ``tests/integration/
test_sync_crash.py`` asserts the same on three kills.

    python benchmarks/sync_kills.py               # 10 kills
    python benchmarks/sync_kills.py --kills 30
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]

from support.sync_crash import SOURCES, commits, sync_kill_trials  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gear-sync-kills-") as folder:
        trials = sync_kill_trials(Path(folder), args.kills)
    after, rerun = Counter(), Counter()
    for trial in trials:
        after.update(trial.after_kill)
        rerun.update(trial.after_rerun)
    landed = sum(t.landed for t in trials)
    print(f"{len(trials)} kills of a sync of {SOURCES} sources ({commits()} commits); "
          f"{landed} left it part done (some sources old, some new)\n")
    print("| sources after the kill | old | new | mixed | missing |")
    print("|---|---:|---:|---:|---:|")
    print(f"| reopened after SIGKILL | {after['old']} | {after['new']} | {after['mixed']} | {after['missing']} |")
    print(f"| after the rerun | {rerun['old']} | {rerun['new']} | {rerun['mixed']} | {rerun['missing']} |")


if __name__ == "__main__":
    main()
