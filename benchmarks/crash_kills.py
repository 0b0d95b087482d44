"""Crash safety in counts: SIGKILL indexing, deleting and cache writing, reopen, rerun, check.

Indexing: a synthetic corpus (480 passages, 960 triples, committed in batches of 16
passages) is indexed into the embedded store by a child process, SIGKILLed at ``--kills``
points spread over the run (one target committed-passage count in each equal slice of the
corpus, read from the index, so load cannot move the kills); the index is reopened and
checked (one whole commit: a prefix of the corpus, no duplicates, every triple's passage
present, vectors and BM25 matching), the indexing is rerun and checked again. A kill counts
as mid-indexing only when the reopened index is incomplete. Deleting: the same, while a
child deletes the corpus batch by batch (then the delete is finished and the corpus indexed
again). Cache writes: while a child builds and saves ANN parts (searches must still equal
exact search; the next maintenance finishes them). A reader opens the index over and over
while a writer commits. ``tests/integration/test_crash_safety.py`` asserts the same.

    python benchmarks/crash_kills.py               # 20 kills of each kind
    python benchmarks/crash_kills.py --kills 50
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]

from support.crash_trials import (  # noqa: E402
    N_PASSAGES,
    cache_kill_trial,
    delete_kill_trial,
    index_everything,
    kill_targets,
    kill_trials,
    reader_trial,
    spread_trials,
)


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
        rng = random.Random(args.seed)
        deletes = [delete_kill_trial(Path(tmp) / "deletes" / f"trial-{i}", N_PASSAGES - target)
                   for i, target in enumerate(kill_targets(args.kills, rng))]
        from support.crash_trials import SMALL_ANN, BagOfWordsEmbedder

        from gear_agent.store.embedded.store import EmbeddedStore

        index_everything(str(Path(tmp) / "calibration-cache"))
        store = EmbeddedStore.open(Path(tmp) / "calibration-cache", BagOfWordsEmbedder(), ann=SMALL_ANN)
        t0 = time.monotonic()
        store.maintain()
        caches = spread_trials(Path(tmp) / "caches", args.kills, cache_kill_trial, time.monotonic() - t0)
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
        ("delete: killed mid-delete (index neither full nor empty)", sum(t.landed for t in deletes)),
        ("delete: reopened at a whole commit", sum(not t.after_kill for t in deletes)),
        ("delete: rerun finished, corpus indexed again", sum(not t.after_rerun for t in deletes)),
        ("ANN cache write: kills", len(caches)),
        ("ANN cache write: searches equal exact search after the kill", sum(not t.after_kill for t in caches)),
        ("ANN cache write: maintenance finished after", sum(not t.after_rerun for t in caches)),
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
    broken = [t for t in [*trials, *deletes, *caches] if t.after_kill or t.after_rerun]
    for trial in broken[:3]:
        print(f"broken trial: {trial}", file=sys.stderr)
    if broken or reader.bad_states or reader.error:
        sys.exit(1)


if __name__ == "__main__":
    main()
