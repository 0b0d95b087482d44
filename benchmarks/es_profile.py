"""Where a question's time goes on Elasticsearch: the requests each retriever sends, and ms each.

Runs on an index ``benchmarks/scale.py --backend elasticsearch`` (or ``both``) built and kept
under ``--work``: starts the test cluster again on its data, opens the index as scale.py's query
phase does, and for each retriever asks its questions (after one warm-up question, which builds
what a first question builds) with every request the client sends timed
(``elastic_transport``'s ``perform_request``). Prints one Markdown table: per retriever, the
question's p50 wall ms, the requests per question, and per kind of request (method and path,
the index prefix left out) how many per question and their p50 ms.

    python benchmarks/scale.py --sizes 20000 --backend both --path openie --work W
    python benchmarks/es_profile.py --work W --size 20000 --queries 50
"""

from __future__ import annotations

import argparse
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


def profile(retriever: Any, questions: list[str], log: list[tuple[str, float]]) -> dict[str, Any]:
    retriever.retrieve(questions[0], 15)  # warm-up: what the first question builds
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
    n = len(questions)
    return {
        "p50": statistics.median(wall), "requests": statistics.fmean(sent),
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
    finally:
        cluster.close()
    print(f"\n{args.size:,} passages, Elasticsearch {cluster.version}, one node (-Xmx{args.es_heap}, "
          f"{args.es_processors} processors), {len(questions)} questions after one warm-up\n")
    print("| retriever | question p50 ms | requests per question | request (per question x p50 ms) |")
    print("|---|---|---|---|")
    for name, row in rows.items():
        kinds = "; ".join(f"`{k}` {n:.1f} x {ms:.1f}" for k, (n, ms) in row["kinds"].items())
        print(f"| {name} | {row['p50']:.1f} | {row['requests']:.1f} | {kinds or '-'} |")


if __name__ == "__main__":
    main()
