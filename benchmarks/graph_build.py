"""The PPR graph built in the process that answers, against one loaded from its saved files.

Builds the synthetic corpus (``benchmarks/synthetic_corpus.py``) at each size into a fresh
embedded index (OpenIE import, as ``gear index --openie``; the graph is *not* built by
this step), then runs two phases, each in its own process:

* **built**: opens the index with no saved graph: the first ``ppr`` query builds and
  saves it (:func:`~gear_agent.expansion.ppr_graph.load_or_build`), then the process
  answers with the graph it built (a server whose first query found no saved graph, a
  ``Gear`` object that indexed and then searches);
* **loaded**: a fresh process opens the index and loads the saved graph at its first
  ``ppr`` query, then answers the same queries.

Printed per phase: seconds to the graph (build and save, or load), RSS after it (the
process's resident memory once the graph is ready and a first query ran; anonymous
memory and file pages apart: SQLite reads the index through a memory map, whose pages
are the page cache's, shared and reclaimable), peak RSS, and
``ppr`` p50/p99 (wall, thread CPU in brackets) over ``--queries`` questions, then the same
questions again. Issue 35's target: the building process holds no more memory and answers
no slower than the loading one.

    python benchmarks/graph_build.py --sizes 20000 --embedder hashing-384
    python benchmarks/graph_build.py --sizes 150000 --work /work/scale/graph  # the issue's size
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from scale import make_queries, percentiles, rss_mib, settings  # noqa: E402 - beside this file


def rss_parts() -> dict[str, float]:
    """Anonymous and file-backed resident memory of this process now, MiB."""
    parts = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(("RssAnon:", "RssFile:")):
            parts[line.split(":")[0]] = int(line.split()[1]) / 1024
    return parts


def phase(args: argparse.Namespace) -> dict[str, Any]:
    """``built`` or ``loaded`` (see the module docstring), in this process."""
    from gear_agent.embedding import make_embedder
    from gear_agent.expansion.ppr import PPRRetriever
    from gear_agent.retrieval.search import QueryEncoder
    from gear_agent.store import open_store

    queries = json.loads(Path(args.queries_file).read_text(encoding="utf-8"))
    s = settings(args.index, args.embedder)
    embedder = make_embedder(s)
    store = open_store(s, embedder, create=False)
    encode = QueryEncoder(embedder)
    for q in queries:  # encodings are kept out of the timings
        encode(q)
    rss_open = rss_mib()
    started = time.perf_counter()
    if args.phase == "built":
        for saved in Path(args.index).glob("ppr-graph.*"):
            saved.unlink()  # this process builds it (and saves it for the next phase)
    retriever = PPRRetriever(store, encode, s)
    retriever.retrieve(queries[0], 15)  # the graph is built (built) or read (loaded) here
    ready = time.perf_counter() - started
    rss_ready, parts = rss_mib(), rss_parts()
    first = percentiles(retriever, queries)
    again = percentiles(retriever, queries)
    return {"phase": args.phase, "graph_s": ready, "rss_open_mib": rss_open, "rss_mib": rss_ready,
            "anon_mib": parts.get("RssAnon", 0.0), "file_mib": parts.get("RssFile", 0.0),
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "latency": first, "again": again, "vertices": retriever.graph.n_vertices}


def build_index(args: argparse.Namespace, size: int, work: Path) -> tuple[Path, Path]:
    from synthetic_corpus import write

    from gear_agent.embedding import make_embedder
    from gear_agent.indexing import IndexReport, add_passages, import_openie
    from gear_agent.ingest.corpus import read_corpus
    from gear_agent.ingest.openie import read_openie
    from gear_agent.store import open_store

    corpus, openie = write(size, work / f"data-{size}")
    queries = work / f"queries-{size}.json"
    queries.write_text(json.dumps(make_queries(openie, args.queries)), encoding="utf-8")
    index = work / f"index-{size}"
    if not (index / "index.sqlite").exists():
        s = settings(index, args.embedder)
        store = open_store(s, make_embedder(s), create=True)
        report = IndexReport()
        add_passages(store, read_corpus(corpus), report)
        import_openie(store, read_openie(openie), report)
        store.close()
    for stale in index.glob("ppr-graph.*"):  # the "built" phase builds it
        stale.unlink()
    return index, queries


def run_phase(name: str, index: Path, queries: Path, embedder: str) -> dict[str, Any]:
    command = [sys.executable, __file__, "--phase", name, "--index", str(index),
               "--queries-file", str(queries), "--embedder", embedder]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(f"phase {name} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def print_table(rows: list[dict[str, Any]]) -> None:
    head = ["passages", "process", "graph ready s", "RSS open MiB", "RSS with graph MiB (anon + file)", "peak RSS MiB",
            "ppr p50/p99 ms (CPU)", "again p50/p99 ms"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for row in rows:
        lat, again = row["latency"], row["again"]
        print("| " + " | ".join([
            f"{row['size']:,}", "built the graph" if row["phase"] == "built" else "loaded the saved graph",
            f"{row['graph_s']:.1f}", f"{row['rss_open_mib']:.0f}",
            f"{row['rss_mib']:.0f} ({row['anon_mib']:.0f} + {row['file_mib']:.0f})",
            f"{row['peak_rss_mib']:.0f}",
            f"{lat['p50']:.1f} / {lat['p99']:.1f} ({lat['cpu_p50']:.1f} / {lat['cpu_p99']:.1f})",
            f"{again['p50']:.1f} / {again['p99']:.1f}",
        ]) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="20000", help="Passage counts, comma-separated.")
    parser.add_argument("--embedder", default="hashing-384", help="Embedding model name.")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--work", type=Path, default=None, help="Keep the data and indexes here (reused).")
    parser.add_argument("--phase", choices=("built", "loaded"), help=argparse.SUPPRESS)
    parser.add_argument("--index", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--queries-file", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(phase(args)))
        return
    with tempfile.TemporaryDirectory(prefix="gear-graph-build-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        rows = []
        for size in (int(s) for s in args.sizes.split(",") if s.strip()):
            index, queries = build_index(args, size, work)
            for name in ("built", "loaded"):
                rows.append({"size": size, **run_phase(name, index, queries, args.embedder)})
                print(f"measured {size:,} passages: {name}", file=sys.stderr, flush=True)
        print_table(rows)


if __name__ == "__main__":
    main()
