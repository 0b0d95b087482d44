"""The next ``ppr`` query after another process deletes passages, against a warm one.

Builds the synthetic corpus (``benchmarks/synthetic_corpus.py``) into an embedded index
with ``benchmarks/scale.py``'s build phase (OpenIE import), then, for each checkout given
with ``--code`` (default: this one), on a fresh copy of that index, in a child process
that plays the server:

* a ``ppr`` retriever is made warm (its first query builds and saves the PPR graph; then
  ``--queries`` questions give the warm p50);
* another process deletes ``--delete`` passages (every n-th stored passage id);
* the server's next ``ppr`` query is timed (it brings the graph up to date from the change
  feed, or rebuilds it), with the share of it spent saving the graph (the ``save`` stage of
  the graph's progress), and whether the graph was rebuilt (the ``read`` stage reads every
  triple only in a rebuild: its total is the store's triple count);
* its ranking over the warm questions is compared with that of a graph built from scratch
  on the same data (``same ranking``: ids and scores to 9 decimals), and so are its edges:
  relation and contains edges, and the synonym pairs (with more than 20,000 eligible
  phrases the synonym search is approximate, its pairs depend on the order phrases
  arrived, so a graph brought up to date and a build differ there, for adds as for
  removals).

One table, one row per checkout:

    python benchmarks/ppr_removals.py --sizes 20000 --code /work/main --code .
    python benchmarks/ppr_removals.py --sizes 10000 --delete 1000 --work /tmp/removals

``--embedder hashing-384`` (the default) is the model-free stand-in, so no encoder time is
in the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCALE = ROOT / "benchmarks" / "scale.py"


def _child(phase: str, code: Path, **options: Any) -> dict[str, Any]:
    """Run one phase of this file in a child process with ``code``'s gear_agent."""
    command = [sys.executable, __file__, "--phase", phase]
    for key, value in options.items():
        command += [f"--{key.replace('_', '-')}", str(value)]
    env = {**os.environ, "PYTHONPATH": str(code)}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False, cwd=code)
    if done.returncode != 0:
        raise SystemExit(f"phase {phase} ({code}) failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _open(index: Path, embedder_name: str) -> tuple[Any, Any, Any]:
    from gear_agent.config import GearSettings
    from gear_agent.embedding import make_embedder
    from gear_agent.store import open_store

    s = GearSettings(index_dir=index, embedding_model=embedder_name, bm25_tokenizer="word")
    embedder = make_embedder(s)
    return s, embedder, open_store(s, embedder, create=False)


def phase_delete(args: argparse.Namespace) -> dict[str, Any]:
    """Delete ``--delete`` passages, spread over the stored ids (another process's write)."""
    _, _, store = _open(args.index, args.embedder)
    ids = sorted(store.passages.ids())
    step = max(1, len(ids) // args.delete)
    chosen = ids[::step][: args.delete]
    started = time.perf_counter()
    store.passages.remove(chosen)
    seconds = time.perf_counter() - started
    store.close()
    return {"deleted": len(chosen), "seconds": seconds}


def phase_serve(args: argparse.Namespace) -> dict[str, Any]:
    """The server: warm ``ppr``, another process deletes, the next query, the ranking check."""
    from gear_agent.expansion.ppr_graph import PPRGraph
    from gear_agent.open_index import OpenIndex
    from gear_agent.registry import make_retriever
    from gear_agent.retrieval.search import QueryEncoder

    queries = json.loads(Path(args.queries_file).read_text(encoding="utf-8"))
    s, embedder, store = _open(args.index, args.embedder)
    runtime = OpenIndex(s, embedder, store, QueryEncoder(embedder))
    for q in queries:
        runtime.encode(q)
    retriever = make_retriever("ppr", runtime)
    started = time.perf_counter()
    retriever.retrieve(queries[0], 15)  # builds and saves the graph
    first = time.perf_counter() - started
    warm = []
    for q in queries[1:]:
        t = time.perf_counter()
        retriever.retrieve(q, 15)
        warm.append(time.perf_counter() - t)
    deleted = _child("delete", Path.cwd(), index=args.index, embedder=args.embedder, delete=args.delete)
    stages: dict[str, list[tuple[float, int, int]]] = {}

    def progress(stage: str, done: int, total: int) -> None:
        stages.setdefault(stage, []).append((time.perf_counter(), done, total))

    retriever.progress = progress
    started = time.perf_counter()
    retriever.retrieve(queries[0], 15)
    after = time.perf_counter() - started
    save = stages.get("save", [])
    save_s = save[-1][0] - save[0][0] if len(save) >= 2 else 0.0
    triples = store.triples.count()
    rebuilt = any(total == triples and triples > 0 for _, _, total in stages.get("link", []))
    retriever.progress = None

    def ranking(graph: Any) -> list[list[tuple[str, float]]]:
        from gear_agent.expansion.ppr import PPRRetriever

        other = PPRRetriever(store, QueryEncoder(embedder), graph=graph, graph_path=None)
        return [[(p.id, round(p.score, 9)) for p in other.retrieve(q, 15)] for q in queries[1:11]]

    def parts(graph: Any) -> tuple[dict[tuple[str, str], float], set[tuple[str, str]], set[tuple[str, str]]]:
        relation, contains, synonym = {}, set(), set()
        for a, b, count, cosine, joined, _ in graph.edge_kinds():
            if count:
                relation[(a, b)] = count
            if joined:
                contains.add((a, b))
            if cosine:
                synonym.add((a, b))
        return relation, contains, synonym

    with store.snapshot():
        held, scratch = retriever.graph, PPRGraph.build(store, embedder)
        same = ranking(held) == ranking(scratch)
        mine, theirs = parts(held), parts(scratch)
    return {"first_s": first, "warm_p50_s": statistics.median(warm), "after_s": after,
            "save_s": save_s, "rebuilt": rebuilt, "same_ranking": same,
            "same_relation_contains": mine[:2] == theirs[:2], "synonym_pairs": len(theirs[2]),
            "synonym_differ": len(mine[2] ^ theirs[2]),
            "deleted": deleted["deleted"], "passages": store.passages.count(), "triples": triples}


PHASES = {"delete": phase_delete, "serve": phase_serve}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="20000", help="Passage counts, comma-separated.")
    parser.add_argument("--delete", type=int, default=1000, help="Passages the other process deletes.")
    parser.add_argument("--code", type=Path, action="append", default=None,
                        help="Checkout whose gear_agent serves (repeat to compare; default: this one).")
    parser.add_argument("--embedder", default="hashing-384")
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--work", type=Path, default=None, help="Keep the data and indexes here.")
    parser.add_argument("--phase", choices=sorted(PHASES), help=argparse.SUPPRESS)
    for option in ("index", "queries-file"):
        parser.add_argument(f"--{option}", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(PHASES[args.phase](args)))
        return
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from scale import make_queries
    from synthetic_corpus import write

    codes = [c.resolve() for c in (args.code or [ROOT])]
    rows = []
    with tempfile.TemporaryDirectory(prefix="gear-removals-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for size in (int(x) for x in args.sizes.split(",") if x.strip()):
            corpus, openie = write(size, work / f"data-{size}")
            queries = work / f"queries-{size}.json"
            queries.write_text(json.dumps(make_queries(openie, args.queries + 1)), encoding="utf-8")
            built = work / f"index-{size}"
            if not built.exists():
                command = [sys.executable, str(SCALE), "--phase", "build", "--index", str(built),
                           "--corpus", str(corpus), "--openie", str(openie),
                           "--embedder", args.embedder, "--path", "openie"]
                env = {**os.environ, "PYTHONPATH": str(ROOT)}
                subprocess.run(command, check=True, env=env, capture_output=True)
            for code in codes:
                copy = work / f"index-{size}-{code.name}"
                shutil.rmtree(copy, ignore_errors=True)
                shutil.copytree(built, copy)
                row = _child("serve", code, index=copy, queries_file=queries, embedder=args.embedder,
                             delete=args.delete)
                rows.append({"size": size, "code": str(code), **row})
                shutil.rmtree(copy, ignore_errors=True)
    head = ("passages / triples after", "code", "deleted", "first ppr s", "warm p50 ms", "next ppr s",
            "extra s", "of it save s", "rebuilt", "same ranking", "same relation + contains edges",
            "synonym pairs differing / built")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print(f"| {r['passages']:,} / {r['triples']:,} | {r['code']} | {r['deleted']:,} | "
              f"{r['first_s']:.1f} | {1000 * r['warm_p50_s']:.1f} | {r['after_s']:.2f} | "
              f"{r['after_s'] - r['warm_p50_s']:.2f} | {r['save_s']:.2f} | {r['rebuilt']} | {r['same_ranking']} | "
              f"{r['same_relation_contains']} | {r['synonym_differ']:,} / {r['synonym_pairs']:,} |")


if __name__ == "__main__":
    main()
