"""Crash safety in counts: SIGKILL indexing at random moments, reopen, rerun, check.

Each trial indexes a synthetic corpus (480 passages, 960 triples, committed in batches of
16 passages) into the embedded store in a child process and SIGKILLs it after a random
delay; then the index is reopened and checked (one whole commit: a prefix of the corpus,
no duplicates, every triple's passage present, vectors matching), the indexing is rerun
and the result checked again (everything there exactly once, nothing left unextracted,
no temporary files). A last trial has a reader open the index over and over while a
writer commits. ``tests/integration/test_crash_safety.py`` asserts the same.

    python benchmarks/crash_kills.py               # until 20 kills land mid-indexing
    python benchmarks/crash_kills.py --kills 50
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]

from support.crash_trials import N_PASSAGES, kill_trials, reader_trial  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kills", type=int, default=20, help="Kills that must land mid-indexing.")
    parser.add_argument("--seed", type=int, default=20261122)
    args = parser.parse_args()
    if args.kills < 1:
        parser.error("--kills must be at least 1")

    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        trials, attempts = kill_trials(Path(tmp) / "kills", args.kills, args.seed)
        reader = reader_trial(Path(tmp) / "reader")
    landed = [t for t in trials if t.landed]
    at_kill = [t.passages_at_kill for t in landed] or [0]
    rows = [
        ("writer processes started", attempts),
        ("killed mid-indexing (SIGKILL)", len(landed)),
        ("finished before the kill (not counted)", attempts - len(landed)),
        (
            "passages committed at the kill: min / median / max",
            f"{min(at_kill)} / {statistics.median(at_kill):g} / {max(at_kill)} of {N_PASSAGES}",
        ),
        ("reopened at a whole commit", sum(not t.after_kill for t in trials)),
        ("reopened broken", sum(bool(t.after_kill) for t in trials)),
        ("rerun complete, no duplicates, nothing lost", sum(not t.after_rerun for t in trials)),
        ("rerun with duplicates or losses", sum(bool(t.after_rerun) for t in trials)),
        ("temporary files left after the rerun", sum(t.leftovers for t in trials)),
        ("reader: index opened while a writer committed", reader.opened),
        ("reader: distinct commits seen", reader.distinct_states),
        ("reader: states that were not a whole commit", len(reader.bad_states)),
        ("reader: errors", 0 if reader.error is None else reader.error),
        ("wall time (s)", f"{time.monotonic() - started:.0f}"),
    ]
    print("| count | value |")
    print("|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")
    broken = [t for t in trials if t.after_kill or t.after_rerun]
    for trial in broken[:3]:
        print(f"broken trial: {trial}", file=sys.stderr)
    if broken or reader.bad_states or reader.error:
        sys.exit(1)


if __name__ == "__main__":
    main()
