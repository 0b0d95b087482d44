"""Passage ANN recall@10 and latency per HNSW graph setting, on the synthetic corpus.

Embeds the passages of ``benchmarks/synthetic_corpus.py`` at ``--passages`` with the stand-in
embedder (``hashing-384``, as ``benchmarks/scale.py`` does; the vectors are cached under
``--work``), builds one usearch part per ``connectivity/expansion_add`` setting the way
``gear_agent.store.ann.build_part`` does (int8, rows minus their mean, one thread), and, per
``expansion_search``, searches 200 candidates (``candidate_count(10)``) for 50 questions made
as ``scale.py`` makes them, re-scores them exactly and prints recall@10 against exact search
(tie-aware, as ``scale.py``'s ``ann_recall``) with the median search time.

    python benchmarks/ann_graph_settings.py --passages 150000
    python benchmarks/ann_graph_settings.py --passages 100000 --graphs 16/64,24/128 --expansions 640
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import synthetic_corpus  # noqa: E402
from scale import questions_of  # noqa: E402

from gear_agent.embedding.hashing import HashingEmbedder  # noqa: E402
from gear_agent.store.ann import candidate_count  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--passages", type=int, default=150_000)
    parser.add_argument("--graphs", default="16/64,24/96,24/128,32/128",
                        help="connectivity/expansion_add pairs, comma-separated")
    parser.add_argument("--expansions", default="640,1024", help="expansion_search values")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--work", type=Path, default=Path("/tmp/ann-graph-settings"))
    args = parser.parse_args()
    from usearch.index import Index

    corpus, openie = synthetic_corpus.generate(args.passages)
    args.work.mkdir(parents=True, exist_ok=True)
    cached = args.work / f"passages-{args.passages}.npy"
    embedder = HashingEmbedder(384)
    if cached.exists():
        vectors = np.load(cached)
    else:
        vectors = embedder.embed([f"{c['title']}\n{c['text']}" for c in corpus])
        np.save(cached, vectors)
    asked = embedder.embed(questions_of(openie["docs"], args.queries))
    exact = asked @ vectors.T
    kth = np.sort(exact, axis=1)[:, -10]
    mean = vectors.mean(axis=0)
    count = candidate_count(10)
    print("| connectivity / expansion_add | build s (1 thread) | expansion_search | recall@10 | p50 ms |")
    print("|---|---|---|---|---|")
    for graph in args.graphs.split(","):
        connectivity, expansion_add = (int(x) for x in graph.split("/"))
        index = Index(ndim=vectors.shape[1], metric="ip", dtype="i8", connectivity=connectivity,
                      expansion_add=expansion_add)
        started = time.perf_counter()
        index.add(np.arange(len(vectors), dtype=np.uint64), np.ascontiguousarray(vectors - mean), threads=1)
        build = time.perf_counter() - started
        for expansion in (int(x) for x in args.expansions.split(",")):
            index.expansion_search = expansion
            recalls, times = [], []
            for row, query in enumerate(asked):
                started = time.perf_counter()
                keys = np.asarray(index.search(query, count).keys, dtype=np.int64)
                top = keys[np.argsort(-(vectors[keys] @ query))[:10]]
                times.append(time.perf_counter() - started)
                recalls.append(float(np.mean(exact[row][top] >= kth[row] - 1e-6)))
            print(f"| {connectivity} / {expansion_add} | {build:.0f} | {expansion} | "
                  f"{statistics.fmean(recalls):.3f} | {statistics.median(times) * 1000:.2f} |", flush=True)


if __name__ == "__main__":
    main()
