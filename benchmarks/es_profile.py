"""Where a question's time goes on Elasticsearch: the requests each retriever sends, and ms each.

Runs on an index ``benchmarks/scale.py --backend elasticsearch`` (or ``both``) built and kept
under ``--work``: starts the test cluster again on its data, opens the index as scale.py's query
phase does, and for each retriever asks its questions (after one warm-up question, which builds
what a first question builds) with every request the client sends timed
(``elastic_transport``'s ``perform_request``). Prints one Markdown table: per retriever, the
question's p50 wall ms, the requests per question, and per kind of request (method and path,
the index prefix left out) how many per question and their p50 ms; the full garbage
collections that ran during a retriever's questions; and, once all have run, what this process
holds costs a full collection (CPU ms, median of five: the kept triples and passage vectors are
tuples and arrays the collector does not walk) and what an exact scan of the kept triple vectors
would cost per question (the alternative to ``ppr``'s two triple kNN searches in the
``_msearch``; p50 CPU ms over the questions, when graph expansion has kept the triples).

    python benchmarks/scale.py --sizes 20000 --backend both --path openie --work W
    python benchmarks/es_profile.py --work W --size 20000 --queries 50
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "benchmarks")]


def timed_transport(client: Any, prefix: str, log: list[tuple[str, float]]) -> None:
    """Record ``(kind, ms)`` of every request ``client`` sends into ``log``."""
    transport = client.transport
    send = transport.perform_request

    def perform_request(method: str, target: str, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return send(method, target, *args, **kwargs)
        finally:
            path = target.split("?")[0].replace(prefix, "{p}")
            log.append((f"{method} {path}", 1000 * (time.perf_counter() - started)))

    transport.perform_request = perform_request


def full_collections() -> tuple[list[float], Any]:
    """The CPU ms of each full (generation 2) garbage collection from now on, and the callback
    to take out of ``gc.callbacks`` after."""
    spent: list[float] = []
    started: list[float] = []

    def callback(phase: str, info: dict[str, Any]) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            started[:] = [time.thread_time()]
        elif started:
            spent.append(1000 * (time.thread_time() - started.pop()))

    gc.callbacks.append(callback)
    return spent, callback


def collection_ms() -> float:
    """CPU ms of a full garbage collection of this process as it is (median of five)."""
    gc.collect()
    times = []
    for _ in range(5):
        started = time.thread_time()
        gc.collect()
        times.append(1000 * (time.thread_time() - started))
    return statistics.median(times)


def scan_ms(store: Any, vectors: list[Any]) -> tuple[int, float] | None:
    """Kept triples and the p50 CPU ms of an exact top-5 and lowest cosine over their vectors
    per query vector (None when no expansion kept them)."""
    import numpy as np

    from gear_agent.store.bm25 import top_k
    from gear_agent.store.threads import matvec

    cache = store._expansion_cache  # noqa: SLF001 - the benchmark's probe
    if cache is None or not len(cache):
        return None
    matrix = cache._vectors[np.flatnonzero(cache._alive)]  # noqa: SLF001
    times = []
    for vector in vectors:
        started = time.thread_time()
        scores = matvec(matrix, np.asarray(vector, np.float32))
        top_k(scores, 5)
        scores.min()
        times.append(1000 * (time.thread_time() - started))
    return len(matrix), statistics.median(times)


def profile(retriever: Any, questions: list[str], log: list[tuple[str, float]]) -> dict[str, Any]:
    retriever.retrieve(questions[0], 15)  # warm-up: what the first question builds
    collections, callback = full_collections()
    wall: list[float] = []
    kinds: dict[str, list[float]] = defaultdict(list)
    sent: list[int] = []
    for question in questions:
        log.clear()
        started = time.perf_counter()
        retriever.retrieve(question, 15)
        wall.append(1000 * (time.perf_counter() - started))
        sent.append(len(log))
        for kind, ms in log:
            kinds[kind].append(ms)
    gc.callbacks.remove(callback)
    n = len(questions)
    return {
        "p50": statistics.median(wall), "requests": statistics.fmean(sent), "collections": collections,
        "kinds": {k: (len(v) / n, statistics.median(v)) for k, v in sorted(kinds.items(), key=lambda kv: -sum(kv[1]))},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, required=True, help="scale.py's --work")
    parser.add_argument("--size", type=int, required=True)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--retrievers", default="hybrid,hybrid+naive_ge,ppr")
    parser.add_argument("--embedder", default="hashing-384")
    parser.add_argument("--es-heap", default="2g")
    parser.add_argument("--es-processors", type=int, default=2)
    args = parser.parse_args()
    from scale import settings
    from support import es_cluster

    from gear_agent.embedding import make_embedder
    from gear_agent.open_index import OpenIndex
    from gear_agent.retrieval.registry import make_retriever
    from gear_agent.retrieval.search import QueryEncoder
    from gear_agent.store import open_store

    questions = json.loads((args.work / f"queries-{args.size}.json").read_text(encoding="utf-8"))[: args.queries]
    cluster = es_cluster.start(1, args.es_heap, home=args.work / "es-cluster",
                               settings={"node.processors": str(args.es_processors)})
    rows = {}
    try:
        os.environ.update(GEAR_BACKEND="elasticsearch", GEAR_ES_URL=cluster.url)
        s = settings(args.work / f"es-{args.size}", args.embedder)
        embedder = make_embedder(s)
        store = open_store(s, embedder)
        log: list[tuple[str, float]] = []
        timed_transport(store._client, s.es_index_prefix, log)  # noqa: SLF001 - the benchmark's probe
        index = OpenIndex(s, embedder, store, QueryEncoder(embedder))
        for question in questions:
            index.encode(question)
        for name in args.retrievers.split(","):
            rows[name] = profile(make_retriever(name, index), questions, log)
        held_ms = collection_ms()
        scan = scan_ms(store, [index.encode(q) for q in questions])
    finally:
        cluster.close()
    print(f"\n{args.size:,} passages, Elasticsearch {cluster.version}, one node (-Xmx{args.es_heap}, "
          f"{args.es_processors} processors), {len(questions)} questions after one warm-up\n")
    print("| retriever | question p50 ms | requests per question | request (per question x p50 ms) "
          "| full collections (CPU ms each) |")
    print("|---|---|---|---|---|")
    for name, row in rows.items():
        kinds = "; ".join(f"`{k}` {n:.1f} x {ms:.1f}" for k, (n, ms) in row["kinds"].items())
        spent = ", ".join(f"{ms:.0f}" for ms in row["collections"])
        print(f"| {name} | {row['p50']:.1f} | {row['requests']:.1f} | {kinds or '-'} "
              f"| {len(row['collections'])}{f' ({spent})' if spent else ''} |")
    print(f"\nA full garbage collection of this process after the questions: {held_ms:.1f} CPU ms (median of 5).")
    if scan is not None:
        print(f"An exact top-5 and lowest cosine over the {scan[0]:,} kept triple vectors: "
              f"{scan[1]:.1f} CPU ms p50 per question.")


if __name__ == "__main__":
    main()
