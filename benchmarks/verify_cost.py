"""What verifying every vector chunk costs, against the newest chunk only (issue 24, item 4).

Opens an embedded index read-only and times, for each vector file: the check a store makes
when the file is as its writer left it (its mark matches: the newest chunk only), and the
full read it makes when it is not (every committed chunk against its xxh3 checksum), warm
(the file in the page cache; median of three) and cold (evicted first with
``POSIX_FADV_DONTNEED``). The full read is what a store pays once per changed file, and
what "verify everything at every open" would pay at every open.

    python benchmarks/verify_cost.py --index /work/scratch-store/p150/ix
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

from gear_agent.store.embedded.db import Database
from gear_agent.store.embedded.vectors import CheckedVectors


def _evict(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _timed(call, *args) -> float:  # noqa: ANN001
    started = time.perf_counter()
    call(*args)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index", type=Path, required=True)
    args = parser.parse_args()
    db = Database(args.index, timeout_s=10.0, readonly=True)
    dimension = int(db.meta("dimension", 0) or 0)
    print("| file | rows | MB | chunks | newest chunk only ms | every chunk, warm ms | every chunk, cold ms | MB/s cold |")
    print("|---|---|---|---|---|---|---|---|")
    for collection in ("passage", "triple", "node"):
        vectors = CheckedVectors(db, args.index, collection, dimension)
        rows = vectors.committed_rows()
        if rows <= 0 or not vectors.path.exists():
            continue
        chunks = vectors.chunks(rows)
        start, stop, _ = chunks[-1]
        newest = statistics.median(_timed(vectors.file.checksum, start, stop) for _ in range(3))
        warm = statistics.median(_timed(vectors.bad_chunks, rows) for _ in range(3))
        _evict(vectors.path)
        cold = _timed(vectors.bad_chunks, rows)
        megabytes = vectors.path.stat().st_size / 1e6
        print(f"| {collection}.vec | {rows:,} | {megabytes:,.0f} | {len(chunks):,} | {1000 * newest:.1f} | "
              f"{1000 * warm:.0f} | {1000 * cold:.0f} | {megabytes / cold:,.0f} |")


if __name__ == "__main__":
    main()
