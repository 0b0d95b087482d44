"""What the server's read connections cost the queries: SQLite with its memory map (as a
command opens the index) against without (as ``gear serve`` reads it: ``Store.serving``).

Opens the same index twice in one process, one of them told :meth:`Store.serving`, calls
every read once on the main thread (lazy parts such as the PPR graph are built off the
clock), then runs the reads on one fresh thread per opening (so each gets a connection of
its own with its settings), alternating the two query by query (each first every other
query) over the same random offsets and questions: a page of the documents list, an entity
search, and the top 10 of several retrievers. Prints, per read and setting, the first call
(a cold connection) and the p50, p99 and mean of the rest, and the mean's change.

    python benchmarks/serve_read_cost.py --index /tmp/flood40k      # built there when absent
    python benchmarks/serve_read_cost.py --index /tmp/flood40k --queries 300
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from load_serve import build_flood_index  # noqa: E402  (the --get-flood index)

RETRIEVERS = ("bm25", "dense", "hybrid", "ppr")
"""The retrievers whose top 10 is timed (the page's LLM-free ones)."""
SETTINGS = ("memory map (a command)", "serving (gear serve)")


def reads(index: Any, questions: list[str], offsets: list[int],
          retrievers: tuple[str, ...] = RETRIEVERS) -> dict[str, Callable[[int], Any]]:
    """The timed reads over one opened index, each called with the query's number."""
    from gear_agent.registry import make_retriever
    from gear_agent.serve._web_ask import search_result
    from gear_agent.serve._web_documents import Documents
    from gear_agent.serve._web_explore import EntityGraph

    store = index.store
    documents = Documents(store, index.settings, lambda: None)
    entities = EntityGraph(store)
    out: dict[str, Callable[[int], Any]] = {
        "documents page (200)": lambda i: documents.listing(offsets[i]),
        "entity search": lambda i: entities.find(questions[i].split(" was ")[0]),
    }
    for name in retrievers:
        retriever = make_retriever(name, index)
        out[f"{name} top 10"] = (lambda r, n: lambda i: search_result(store, r, n, questions[i], 10, None))(retriever, name)
    return out


def measure(folder: Path, queries: int, seed: int, retrievers: tuple[str, ...] = RETRIEVERS) -> list[dict[str, str]]:
    from gear_agent.config import GearSettings
    from gear_agent.open_index import OpenIndex

    settings = GearSettings(index_dir=folder, embedding_model="hashing-384")
    opened = [OpenIndex.open(settings), OpenIndex.open(settings)]
    opened[1].store.serving()
    try:
        total = opened[0].store.passages.count()
        rng = random.Random(seed)
        picks = [rng.randrange(total) for _ in range(queries)]
        questions = [f"Station {i} was founded by whom, near which town?" for i in picks]
        offsets = [(i // 200) * 200 for i in picks]
        work = [reads(index, questions, offsets, retrievers) for index in opened]
        for calls in work:  # lazy parts (the PPR graph, ANN parts) built here, off the clock
            for call in calls.values():
                call(0)
        threads = [ThreadPoolExecutor(max_workers=1) for _ in opened]  # one connection each
        times: dict[tuple[str, int], list[float]] = {}
        for i in range(queries):
            for name in work[0]:
                for k in (0, 1) if i % 2 == 0 else (1, 0):  # each goes first every other query
                    start = time.perf_counter()
                    threads[k].submit(work[k][name], i).result()
                    times.setdefault((name, k), []).append(time.perf_counter() - start)
        for thread in threads:
            thread.shutdown()
    finally:
        for index in opened:
            index.store.close()
    rows = []
    for name in work[0]:
        means = []
        for k, setting in enumerate(SETTINGS):
            first, *rest = times[(name, k)]
            rest = sorted(rest) or [first]
            means.append(statistics.fmean(rest))
            rows.append({"read": name, "connection": setting, "first (cold) ms": f"{first * 1000:.1f}",
                         "p50 ms": f"{rest[len(rest) // 2] * 1000:.2f}",
                         "p99 ms": f"{rest[min(len(rest) - 1, int(0.99 * len(rest)))] * 1000:.2f}",
                         "mean ms": f"{means[-1] * 1000:.2f}"})
        rows[-1]["mean change"] = f"{(means[1] / means[0] - 1) * 100:+.0f}%"
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index", type=Path, required=True, help="The index (built there when absent).")
    parser.add_argument("--passages", type=int, default=40_000, help="Passages of an index built here.")
    parser.add_argument("--queries", type=int, default=200, help="Calls of each read per setting.")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--retrievers", default=",".join(RETRIEVERS),
                        help=f"Comma-separated retrievers to time (default {','.join(RETRIEVERS)}; empty: none).")
    args = parser.parse_args()
    if args.queries < 2:
        parser.error(f"--queries must be at least 2 (the first is the cold one), got {args.queries}")
    if not any(args.index.glob("*.sqlite")):
        build_flood_index(args.index, args.passages)
    retrievers = tuple(r.strip() for r in args.retrievers.split(",") if r.strip())
    rows = measure(args.index, args.queries, args.seed, retrievers)
    print(f"index {args.index}; {args.queries} calls of each read per setting, alternating; load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs at the end")
    keys = ["read", "connection", "first (cold) ms", "p50 ms", "p99 ms", "mean ms", "mean change"]
    print("| " + " | ".join(keys) + " |")
    print("|---|" + "---|" * (len(keys) - 1))
    for row in rows:
        print("| " + " | ".join(row.get(k, "") for k in keys) + " |")


if __name__ == "__main__":
    main()
