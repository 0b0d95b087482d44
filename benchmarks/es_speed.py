"""The Elasticsearch backend before and after a change, in one run: build and query time.

Builds the synthetic corpus of ``benchmarks/synthetic_corpus.py`` (stand-in ``hashing-384``
embedder, so the encoder is out of the figures) into one one-node test cluster twice, once
with the backend module as it is at ``--before`` (default ``main``, read with ``git show``)
and once with the working tree's, through the same code path (``gear_agent.indexing``; the
current backend inside ``bulk_load()``), then times ``--retrievers`` over ``--queries``
questions on each index, alternating before/after question by question so load on the
machine falls on both alike. Prints one Markdown table.

    python benchmarks/es_speed.py --size 2000                 # before = main
    python benchmarks/es_speed.py --size 2000 --before c0826a3
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "benchmarks")]

from scale import build_index, make_queries  # noqa: E402
from support import es_cluster  # noqa: E402
from synthetic_corpus import write  # noqa: E402

from gear_agent.config import GearSettings  # noqa: E402
from gear_agent.embedding import make_embedder  # noqa: E402
from gear_agent.open_index import OpenIndex  # noqa: E402
from gear_agent.registry import make_retriever  # noqa: E402
from gear_agent.retrieval.search import QueryEncoder  # noqa: E402
from gear_agent.store.elasticsearch.store import ElasticsearchStore  # noqa: E402


def store_class_at(rev: str) -> type:
    """``ElasticsearchStore`` as the backend (``elasticsearch.py`` with its ``es_queries``) was
    at git revision ``rev``; the other ES modules are the working tree's."""

    def load(path: str, name: str, namespace: dict[str, Any]) -> types.ModuleType:
        new, old = path.split("|")  # the module's path since store/ became packages, and before
        shown = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{new}"], capture_output=True, text=True)
        if shown.returncode != 0:
            shown = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{old}"], capture_output=True,
                                   text=True, check=True)
        source = shown.stdout
        for line in ("from gear_agent.store import es_queries as q\n",
                     "from gear_agent.store.elasticsearch import queries as q\n"):
            source = source.replace(line, "")
        module = types.ModuleType(name)
        module.__dict__.update(namespace)
        sys.modules[name] = module
        exec(compile(source, f"{rev}:{path}", "exec"), module.__dict__)  # noqa: S102 - our own code at rev
        return module

    queries = load("gear_agent/store/elasticsearch/queries.py|gear_agent/store/es_queries.py", "_es_queries_before", {})
    backend = load("gear_agent/store/elasticsearch/store.py|gear_agent/store/elasticsearch.py", "_elasticsearch_before", {"q": queries})
    return backend.ElasticsearchStore


def build(cls: type, s: GearSettings, embedder: Any, corpus: Path, openie: Path) -> tuple[Any, float]:
    store = cls(s, embedder, create=True)
    started = time.perf_counter()
    load = store.bulk_load() if hasattr(store, "bulk_load") else contextlib.nullcontext()
    with load:
        build_index(store, corpus, openie, "openie")
    return store, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=2000)
    parser.add_argument("--before", default="main", help="git revision of the 'before' backend")
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--retrievers", default="bm25,dense,hybrid,hybrid+naive_ge")
    parser.add_argument("--heap", default="1g")
    parser.add_argument("--work", type=Path, default=None, help="where the corpus and the cluster's data go")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="gear-es-speed-"))
    work.mkdir(parents=True, exist_ok=True)
    corpus, openie = write(args.size, work / f"data-{args.size}")
    questions = make_queries(openie, args.queries)
    cluster = es_cluster.start(1, args.heap, home=work / "cluster")
    try:
        variants = {f"before ({args.before})": store_class_at(args.before), "after (working tree)": ElasticsearchStore}
        rows: dict[str, dict[str, Any]] = {}
        runtimes = {}
        for n, (label, cls) in enumerate(variants.items()):
            s = GearSettings(backend="elasticsearch", es_url=cluster.url, es_index_prefix=f"speed-{n}",
                             embedding_model="hashing-384",
                             es_cache_dir=work / f"cache-{n}")
            embedder = make_embedder(s)
            store, seconds = build(cls, s, embedder, corpus, openie)
            rows[label] = {"build_s": seconds, "triples": store.triples.count()}
            runtimes[label] = OpenIndex(s, embedder, store, QueryEncoder(embedder))
            for question in questions:
                runtimes[label].encode(question)
        for name in args.retrievers.split(","):
            retrievers = {label: make_retriever(name, rt) for label, rt in runtimes.items()}
            times: dict[str, list[float]] = {label: [] for label in retrievers}
            for retriever in retrievers.values():
                retriever.retrieve(questions[0], 15)  # warm-up
            for question in questions:
                for label, retriever in retrievers.items():
                    started = time.perf_counter()
                    retriever.retrieve(question, 15)
                    times[label].append(1000 * (time.perf_counter() - started))
            for label in retrievers:
                rows[label][name] = statistics.median(times[label])
    finally:
        cluster.close()
    names = args.retrievers.split(",")
    print(f"\n{args.size:,} passages, Elasticsearch {cluster.version}, one node (-Xmx{args.heap}), "
          f"{args.queries} questions, p50 ms\n")
    print("| backend | build s | triples | " + " | ".join(f"{n} p50 ms" for n in names) + " |")
    print("|---|---|---|" + "---|" * len(names))
    for label, row in rows.items():
        cells = " | ".join(f"{row[n]:.0f}" for n in names)
        print(f"| {label} | {row['build_s']:.0f} | {row['triples']:,} | {cells} |")
    after, before = rows[list(rows)[1]], rows[list(rows)[0]]
    print("\nratio before/after: build " + f"{before['build_s'] / after['build_s']:.1f}x, "
          + ", ".join(f"{n} {before[n] / after[n]:.1f}x" for n in names))


if __name__ == "__main__":
    main()
