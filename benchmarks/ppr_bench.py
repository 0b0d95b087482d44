"""PPR (HippoRAG 2) graph build and queries, global against local, on MuSiQue and at scale.

Two modes, each printing one table:

* **MuSiQue** (default): the 51 dev questions over an index of ``../shared`` (the one
  ``gear eval`` builds, all-MiniLM-L6-v2): Recall@5/10/15 and p50 ms/query of dense, ppr
  with ``ppr_method=global`` and ``local``, ``hipporag``, and how many questions have the
  same top 15 (as a set, and in the same order) under local and global::

      python benchmarks/ppr_bench.py --index .gear/eval/corpus-ba1b15c0b85f [--rebuild]

* **scale** (``--sizes``): synthetic corpora (``benchmarks/synthetic_corpus.py``) indexed
  with the stand-in embedder ``hashing-384`` by ``benchmarks/scale.py``'s build phase
  (``--path openie``), then, in a fresh process per size: the graph built from scratch
  (seconds, of which phrase embedding; peak RSS of the process, and before the build, with
  its anonymous and file-backed peaks), vertices and edges, and p50/p99 ms per query of
  global and local PPR on queries made from the corpus's triples, with their top-15
  agreement::

      nice python benchmarks/ppr_bench.py --sizes 2000,20000 --work /tmp/ppr-work
      nice python benchmarks/ppr_bench.py --sizes 100000 --work /tmp/ppr-work --reuse-graph

Indexes are kept in ``--work`` and reused. Set ``OMP_NUM_THREADS=1`` for comparable figures.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "musique_dev"


class TimedEmbedder:
    """Passes calls to an embedder and adds up the seconds and texts they took."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name = inner, inner.name
        self.seconds, self.texts = 0.0, 0

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        start = time.perf_counter()
        try:
            return self.inner.embed(texts)
        finally:
            self.seconds += time.perf_counter() - start
            self.texts += len(texts)

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return peak_rss_mib()


class MemorySampler:
    """Peaks of the process's anonymous and file-backed resident memory (``RssAnon`` and
    ``RssFile`` of ``/proc/self/status``), sampled every 0.2 s by a thread while the block
    runs. ``ru_maxrss`` counts both: the pages of the memory-mapped index files a build
    reads (SQLite's map of the triples table) are resident but shared with the page cache
    and given back under pressure, while the anonymous pages are the build's own."""

    def __init__(self) -> None:
        import threading

        self.anon = self.file = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def now() -> tuple[float, float]:
        fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines())
        return (int(fields["RssAnon"].split()[0]) / 1024, int(fields["RssFile"].split()[0]) / 1024)

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            anon, file = self.now()
            self.anon, self.file = max(self.anon, anon), max(self.file, file)

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        anon, file = self.now()
        self.anon, self.file = max(self.anon, anon), max(self.file, file)


def build_graph(store: Any, embedder: Any, threshold: float, path: Path | None) -> tuple[Any, dict]:
    """Build the graph from scratch (saved to ``path`` when given); the figures."""
    with MemorySampler() as memory:
        graph, figures = _build_graph(store, embedder, threshold, path)
    figures.update(peak_anon_mib=memory.anon, peak_file_mib=memory.file)
    return graph, figures


def _build_graph(store: Any, embedder: Any, threshold: float, path: Path | None) -> tuple[Any, dict]:
    from gear_agent.expansion.ppr_graph import PPRGraph

    timed = TimedEmbedder(embedder)
    before = rss_mib()
    start, cpu = time.perf_counter(), time.process_time()
    graph = PPRGraph.build(store, timed, threshold)  # type: ignore[arg-type]
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    saved = 0.0
    if path is not None:
        for old in path.parent.glob(f"{path.stem}*"):
            old.unlink()
        start = time.perf_counter()
        graph.save(path)
        saved = time.perf_counter() - start
    graph.adjacency()
    return graph, {
        "seconds": seconds, "cpu_seconds": cpu, "embed_seconds": timed.seconds, "phrases_embedded": timed.texts,
        "save_seconds": saved, "rss_before_mib": before, "peak_rss_mib": peak_rss_mib(),
        "vertices": graph.n_vertices, "edges": graph.n_edges, "phrases": graph.n_phrases,
        "passages": graph.n_passages, "triples": graph.n_triples,
        "graph_mib": graph.nbytes() / 2**20,
    }


def rankings(retriever: Any, queries: Sequence[str], k: int = 15) -> tuple[list[list[str]], list[float]]:
    """Each query's top ``k`` ids and ms."""
    ranked, times = [], []
    for q in queries:
        start = time.perf_counter()
        ranked.append([p.id for p in retriever.retrieve(q, k)])
        times.append(1000 * (time.perf_counter() - start))
    return ranked, times


def p50_p99(times: Sequence[float]) -> tuple[float, float]:
    ordered = sorted(times)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


def agreement(a: Sequence[Sequence[str]], b: Sequence[Sequence[str]]) -> tuple[int, int]:
    """Queries whose lists are the same set; the same list in the same order."""
    same_set = sum(set(x) == set(y) for x, y in zip(a, b))
    same_order = sum(list(x) == list(y) for x, y in zip(a, b))
    return same_set, same_order


def ppr_retrievers(store: Any, encode: Any, settings: Any, graph: Any) -> dict[str, Any]:
    from gear_agent.expansion.ppr import PPRRetriever

    return {
        method: PPRRetriever(
            store, encode, settings.model_copy(update={"ppr_method": method}), graph=graph
        )
        for method in ("global", "local")
    }


# ---- MuSiQue -----------------------------------------------------------------------------
def musique(args: argparse.Namespace) -> None:
    from gear_agent.config import GearSettings
    from gear_agent.embedding import make_embedder
    from gear_agent.evaluation.dataset import load_questions
    from gear_agent.evaluation.metrics import recall_at_k
    from gear_agent.expansion.ppr_graph import load_or_build
    from gear_agent.open_index import OpenIndex
    from gear_agent.registry import make_retriever
    from gear_agent.retrieval.search import QueryEncoder, SearchRetriever
    from gear_agent.store import open_store

    settings = GearSettings(embedding_model=args.model, index_dir=args.index, bm25_tokenizer="word")
    embedder = make_embedder(settings)
    store = open_store(settings, embedder, create=False)
    questions = load_questions(args.questions)
    path = args.index / "ppr-graph.npz"
    threshold = settings.ppr_synonym_threshold
    if args.rebuild:
        graph, figures = build_graph(store, embedder, threshold, path)
        print(f"graph built in {figures['seconds']:.1f} s ({figures['embed_seconds']:.1f} s "
              f"embedding {figures['phrases_embedded']} phrases): {figures['vertices']} vertices, "
              f"{figures['edges']} edges")
    else:
        graph = load_or_build(store, embedder, threshold, path)
    encode = QueryEncoder(embedder)
    texts = [q.question for q in questions]
    for text in texts:  # encoded once up front: ms/query is retrieval only
        encode(text)
    runtime = OpenIndex(settings, embedder, store, encode)
    rows: dict[str, Any] = {"dense": SearchRetriever(store, encode, "dense")}
    rows.update({f"ppr ({m})": r for m, r in ppr_retrievers(store, encode, settings, graph).items()})
    if "hipporag" in args.extra:
        rows["hipporag"] = make_retriever("hipporag", runtime)
    results = {}
    for name, retriever in rows.items():
        retriever.retrieve(texts[0], 15)  # warm-up outside the timings
        ranked, times = rankings(retriever, texts)
        recall = [100 * float(np.mean([recall_at_k(r, q.gold, k) for r, q in zip(ranked, questions)]))
                  for k in (5, 10, 15)]
        results[name] = (recall, statistics.median(times), ranked)
    print(f"\n{len(questions)} questions; damping {settings.ppr_damping}, seeds "
          f"{settings.ppr_seed_triples}, passage weight {settings.ppr_passage_weight}, "
          f"local: tolerance {settings.ppr_tolerance}, dense passages {settings.ppr_dense_passages}\n")
    print("| retriever | R@5 | R@10 | R@15 | p50 ms/query |\n|---|---|---|---|---|")
    for name, (recall, ms, _) in results.items():
        print(f"| {name} | {recall[0]:.1f} | {recall[1]:.1f} | {recall[2]:.1f} | {ms:.1f} |")
    same_set, same_order = agreement(results["ppr (local)"][2], results["ppr (global)"][2])
    print(f"\nlocal vs global top 15: same set for {same_set} of {len(texts)} questions, "
          f"same order for {same_order}")


# ---- scale -------------------------------------------------------------------------------
def phase_graph(args: argparse.Namespace) -> dict[str, Any]:
    """In a fresh process: build the graph of one index, then time global and local queries."""
    from gear_agent.config import GearSettings
    from gear_agent.embedding import make_embedder
    from gear_agent.retrieval.search import QueryEncoder
    from gear_agent.store import open_store

    queries = json.loads(Path(args.queries_file).read_text(encoding="utf-8"))
    settings = GearSettings(index_dir=args.index, embedding_model=args.embedder, bm25_tokenizer="word")
    embedder = make_embedder(settings)
    store = open_store(settings, embedder, create=False)
    if args.reuse_graph:  # the saved graph, brought up to date: queries only
        from gear_agent.expansion.ppr_graph import load_or_build

        start = time.perf_counter()
        graph = load_or_build(store, embedder, settings.ppr_synonym_threshold,
                              args.index / "ppr-graph.npz")
        figures = {"seconds": float("nan"), "cpu_seconds": float("nan"),
                   "embed_seconds": float("nan"), "load_seconds": time.perf_counter() - start,
                   "rss_before_mib": float("nan"), "peak_rss_mib": peak_rss_mib(),
                   "vertices": graph.n_vertices, "edges": graph.n_edges,
                   "passages": graph.n_passages, "triples": graph.n_triples}
    else:
        graph, figures = build_graph(store, embedder, settings.ppr_synonym_threshold,
                                     args.index / "ppr-graph.npz")
    encode = QueryEncoder(embedder)
    for q in queries:
        encode(q)
    from scale import read_into_page_cache  # benchmarks/ is on sys.path

    read_into_page_cache(args.index)  # as on a machine that has used the index before
    found: dict[str, Any] = {}
    for method, retriever in ppr_retrievers(store, encode, settings, graph).items():
        subset = queries if method == "local" else queries[: args.global_queries]
        retriever.retrieve(subset[0], 15)
        ranked, times = rankings(retriever, subset)
        found[method] = ranked
        figures[method] = p50_p99(times)
    n = min(len(found["global"]), len(found["local"]))
    figures["agree"] = (*agreement(found["local"][:n], found["global"][:n]), n)
    return figures


def run_child(*options: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, *options], capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{options[:3]} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def scale(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from scale import make_queries
    from synthetic_corpus import write

    work = args.work
    rows = []
    for size in [int(s) for s in args.sizes.split(",") if s.strip()]:
        data, index = work / f"data-{size}", work / f"index-{size}"
        if not (data / "openie.json").is_file():
            write(size, data)
        if not (index / "index.sqlite").is_file():
            run_child(str(ROOT / "benchmarks" / "scale.py"), "--phase", "build", "--index", str(index),
                      "--corpus", str(data / "corpus.json"), "--openie", str(data / "openie.json"),
                      "--embedder", args.embedder, "--path", "openie")
        queries = work / f"queries-{size}.json"
        queries.write_text(json.dumps(make_queries(data / "openie.json", args.queries)), encoding="utf-8")
        row = run_child(__file__, "--phase", "graph", "--index", str(index), "--queries-file",
                        str(queries), "--embedder", args.embedder,
                        "--global-queries", str(args.global_queries),
                        *(["--reuse-graph"] if args.reuse_graph else []))
        rows.append(row)
        print(f"measured {size:,} passages: {json.dumps(row)}", file=sys.stderr)
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    print("| passages / triples | vertices / edges | build s (CPU s; embed s) | peak RSS MiB (before) "
          "| of which anonymous / file-backed MiB (peaks) | global p50/p99 ms | local p50/p99 ms | top 15 same set / order |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        same_set, same_order, n = r["agree"]
        print(f"| {r['passages']:,} / {r['triples']:,} | {r['vertices']:,} / {r['edges']:,} "
              f"| {r['seconds']:.1f} ({r.get('cpu_seconds', float('nan')):.1f}; {r['embed_seconds']:.1f}) | {r['peak_rss_mib']:.0f} "
              f"({r['rss_before_mib']:.0f}) | {r.get('peak_anon_mib', float('nan')):.0f} / {r.get('peak_file_mib', float('nan')):.0f} | {r['global'][0]:.1f} / {r['global'][1]:.1f} "
              f"| {r['local'][0]:.1f} / {r['local'][1]:.1f} | {same_set} / {same_order} of {n} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, default=Path(".gear/eval/corpus-ba1b15c0b85f"))
    parser.add_argument("--questions", type=Path, default=SHARED / "questions.json")
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--rebuild", action="store_true", help="build the graph from scratch")
    parser.add_argument("--extra", default="hipporag", help="more rows: hipporag, or ''")
    parser.add_argument("--sizes", help="scale mode: passage counts, comma-separated")
    parser.add_argument("--work", type=Path, default=Path("/tmp/ppr-bench"))
    parser.add_argument("--embedder", default="hashing-384")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--global-queries", type=int, default=50,
                        help="queries for global PPR at scale (each is a full dense search)")
    parser.add_argument("--json", type=Path, help="scale mode: also write the rows here")
    parser.add_argument("--reuse-graph", action="store_true",
                        help="scale mode: load the graph saved by an earlier run (queries only)")
    parser.add_argument("--phase", choices=("graph",), help=argparse.SUPPRESS)
    parser.add_argument("--queries-file", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase == "graph":
        print(json.dumps(phase_graph(args)))
    elif args.sizes:
        scale(args)
    else:
        musique(args)


if __name__ == "__main__":
    main()
