"""The embedded index at scale: build, bytes written, incremental add, open, RSS, latency.

Generates the synthetic corpus (``benchmarks/synthetic_corpus.py``) at each size, builds
it through the real code path (``gear_agent.indexing``: committed batches of passages,
then the OpenIE triples) into a fresh embedded index, and prints one table. Every phase
runs in its own process, so open time and RSS are those of a fresh process:

* **build**: seconds (and CPU seconds of the process, all threads), and bytes the process wrote (``wchar`` of ``/proc/self/io``: every
  ``write`` the store made, commits included) divided by the final size on disk. The
  default ``--path extract`` is ``gear index --extract``'s path: passages in committed
  batches, then triple extraction (writing every 2,048 passages or 10 s), with a chat model that
  replays the corpus's OpenIE triples (``OpenIEReplayChat``, no LLM); ``--path openie``
  imports the OpenIE file in large batches instead (``gear index --openie``);
* **add 1k**: adding 1,000 more passages with their triples to the built index, by another
  process while a server process holds a warm ``ppr`` retriever; **ppr after add** is that
  server's next ``ppr`` query (it brings the PPR graph up to date with the store's change
  feed, or rebuilds it where there is none) against its warm p50 before the add;
  ``--update delete`` has the other process delete 1,000 stored passages (every n-th id, with
  their triples) instead, and ``--scratch-check 1`` compares the server's rankings after the
  update with those of a graph built from scratch on the same data (``same ranking``: ids and
  scores to 9 decimals, over 30 questions, and ids alone), and the two graphs' edges (with
  more than 20,000 synonym-eligible phrases the synonym search is approximate and its pairs
  depend on the order phrases arrived, so there the synonym pairs, and with them the scores,
  may differ, as they do after adds);
* **open**: opening the index in a new process until the first query of each kind has
  run, and the process's RSS after it: once *cold* (the index's files evicted from the
  page cache first, so they are read from disk) and the median of five *warm* opens
  (the files in the page cache, as on a machine that has used the index before);
* **p50/p99** per retriever over ``--queries`` questions made from the corpus's triples,
  in a fresh process with the index's files in the page cache (read once before),
  wall time and, in brackets, the thread's CPU time (on a shared machine the wall time
  includes waiting for a core; a query runs on one thread and reads memory-mapped files
  already in the page cache, so on an idle machine the two agree), over questions the
  process has not seen (the JSON also has ``again``: the same questions a second time);
* **ANN recall@10**: the approximate search's top 10 against exact search (where the
  store has an ANN index).

    python benchmarks/scale.py --sizes 2000,20000 --embedder hashing-384
    python benchmarks/scale.py --sizes 100000 --retrievers bm25,dense,hybrid,hybrid+naive_ge
    python benchmarks/scale.py --sizes 100000 --work /work/scale/100k --reuse build,add  # queries again
    python benchmarks/scale.py --encoder-rate      # the real encoder's passages/s, triples/s
    python benchmarks/scale.py --sizes 150000 --path openie --code /work/main --work W  # another checkout
    python benchmarks/scale.py --musique           # gear index of ../shared's MuSiQue: encoder share
    python benchmarks/scale.py --sizes 20000,100000 --backend both --work /work/scratch-es/scale
    python benchmarks/scale.py --sizes 100000 --backend elasticsearch --work W --reuse build,query \
        --update delete --retrievers ppr   # the next ppr query after another process deleted 1,000

``--backend elasticsearch`` (or ``both``, embedded then Elasticsearch at each size, one table)
builds the same corpus into the test cluster of ``tests/support/es_cluster.py`` (one node in
one JVM, ``--es-heap``, ``--es-processors``, its data under ``--work``) through the same code
path, the build inside ``ElasticsearchStore.bulk_load()``. For it,
"written / size" is the JVM's bytes written (``wchar``) over the primary store size
(``_stats``, after a flush); "size" is that store size; "open" is connecting and checking the
cluster to the first query of each kind (warm: the cluster keeps its files open); RSS is
the Python process's, and the cluster JVM's RSS after the queries is printed below the table;
the ANN recall column is "-" (no exact search to compare with on the cluster).

``--embedder hashing-384`` is the model-free stand-in (``gear_agent.embedding.hashing``), so
the encoder is out of the figures; ``--embedder all-MiniLM-L6-v2`` uses the real one.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CODE = ROOT
"""The checkout whose ``gear_agent`` the phases run (``--code``: compare two in one session)."""
DEFAULT_RETRIEVERS = "bm25,dense,hybrid,hybrid+naive_ge,ppr"
UPDATE_COUNT = 1_000
"""Passages the update phase's other process deletes (``--update delete``)."""


def io_written() -> int:
    """Bytes this process has passed to write calls so far (Linux ``wchar``)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    return 0


def rss_mib() -> float:
    """Resident set size of this process now, MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_seconds() -> float:
    """User + system CPU seconds of this process so far, all its threads (load-independent,
    unlike wall time on a shared machine)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())


def settings(index: Path, embedder: str) -> Any:
    """The settings of a phase: the embedded index at ``index``, or, when the parent set
    ``GEAR_BACKEND=elasticsearch`` (and ``GEAR_ES_URL``), the prefix named after it."""
    from gear_agent.config import GearSettings

    if os.environ.get("GEAR_BACKEND") == "elasticsearch":
        return GearSettings(index_dir=index, embedding_model=embedder, bm25_tokenizer="word",
                            backend="elasticsearch", es_index_prefix=f"scale-{Path(index).name}",
                            es_cache_dir=Path(index).with_name(Path(index).name + "-es-cache"))
    return GearSettings(index_dir=index, embedding_model=embedder, bm25_tokenizer="word")


# ---- phases, each run in a child process ------------------------------------------
def openie_replay_chat(openie: Path) -> Any:
    """A chat model that answers the extraction prompt with the OpenIE triples of the
    passage in it (the benchmark's stand-in for an LLM: no network, realistic commits)."""
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    replies = {}
    for doc in json.loads(openie.read_text(encoding="utf-8"))["docs"]:
        replies[doc["text"].strip()] = json.dumps(
            {"entities": doc["extracted_entities"], "triples": doc["extracted_triples"]}
        )

    class OpenIEReplayChat(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "openie-replay"

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[no-untyped-def]
            prompt = str(messages[-1].content)
            text = prompt.rsplit("\nPassage: ", 1)[-1].rsplit("\nReply:", 1)[0].strip()
            reply = replies.get(text, '{"entities": [], "triples": []}')
            usage = {"input_tokens": len(prompt) // 4, "output_tokens": len(reply) // 4,
                     "total_tokens": (len(prompt) + len(reply)) // 4}
            return ChatResult(generations=[ChatGeneration(message=AIMessage(reply, usage_metadata=usage))])

    return OpenIEReplayChat()


def build_index(store: Any, corpus: Path, openie: Path, path: str) -> None:
    """Passages, then triples: by the extraction path or the OpenIE import."""
    from gear_agent.indexing import IndexReport, add_passages, extract_with_llm, import_openie
    from gear_agent.ingest.corpus import read_corpus
    from gear_agent.ingest.openie import read_openie
    from gear_agent.llm.client import LLMClient

    report = IndexReport()
    add_passages(store, read_corpus(corpus), report)
    if path == "openie":
        import_openie(store, read_openie(openie), report)
    else:
        extract_with_llm(store, LLMClient(openie_replay_chat(openie)), report, concurrency=8)


def phase_build(args: argparse.Namespace) -> dict[str, Any]:
    from gear_agent.embedding import make_embedder
    from gear_agent.store import open_store

    s = settings(args.index, args.embedder)
    embedder = make_embedder(s)
    written, cpu = io_written(), cpu_seconds()
    started = time.perf_counter()
    store = open_store(s, embedder, create=True)
    # Elasticsearch: the bulk-load settings for the build (no periodic refresh, no replicas)
    with store.bulk_load() if s.backend == "elasticsearch" else contextlib.nullcontext():
        build_index(store, args.corpus, args.openie, args.path)
    seconds = time.perf_counter() - started
    counts = {"passages": store.passages.count(), "triples": store.triples.count()}
    store.close()
    return {"seconds": seconds, "cpu_s": cpu_seconds() - cpu, "written": io_written() - written, **counts}


def phase_add(args: argparse.Namespace) -> dict[str, Any]:
    from gear_agent.embedding import make_embedder
    from gear_agent.store import open_store

    s = settings(args.index, args.embedder)
    embedder = make_embedder(s)
    store = open_store(s, embedder, create=False)
    before = store.passages.count()
    written, cpu = io_written(), cpu_seconds()
    started = time.perf_counter()
    build_index(store, args.corpus, args.openie, args.path)
    seconds = time.perf_counter() - started
    added = store.passages.count() - before
    store.close()  # counted before closing
    return {"seconds": seconds, "cpu_s": cpu_seconds() - cpu, "written": io_written() - written, "added": added}


def phase_delete(args: argparse.Namespace) -> dict[str, Any]:
    """Delete 1,000 stored passages (every n-th id in id order) and their triples, in one call."""
    from gear_agent.embedding import make_embedder
    from gear_agent.store import open_store

    s = settings(args.index, args.embedder)
    embedder = make_embedder(s)
    store = open_store(s, embedder, create=False)
    ids = sorted(store.passages.ids())
    chosen = ids[:: max(1, len(ids) // UPDATE_COUNT)][:UPDATE_COUNT]
    written, cpu = io_written(), cpu_seconds()
    started = time.perf_counter()
    removed = store.passages.remove(chosen)
    seconds = time.perf_counter() - started
    store.close()
    return {"seconds": seconds, "cpu_s": cpu_seconds() - cpu, "written": io_written() - written,
            "deleted": len(removed)}


def phase_query(args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np

    from gear_agent.embedding import make_embedder
    from gear_agent.open_index import OpenIndex
    from gear_agent.parts import index_parts
    from gear_agent.registry import make_retriever
    from gear_agent.retrieval.search import QueryEncoder

    queries = json.loads(Path(args.queries_file).read_text(encoding="utf-8"))
    s = settings(args.index, args.embedder)
    embedder = make_embedder(s)
    read_into_page_cache(args.index)  # a machine that has served this index before
    rss_before = rss_mib()
    store, opened = open_to_first_query(s, embedder, queries[0])
    rss_open = rss_mib()
    runtime = OpenIndex(s, embedder, store, QueryEncoder(embedder))
    for q in queries:  # encodings are shared by every retriever and kept out of the timings
        runtime.encode(q)
    latencies: dict[str, dict[str, float]] = {}
    parts = index_parts(runtime)  # one PPR graph for every retriever, as a server has
    for name in args.retrievers.split(","):
        retriever = make_retriever(name, parts)
        warm = time.perf_counter()
        retriever.retrieve(queries[0], 15)
        first = time.perf_counter() - warm
        latencies[name] = {**percentiles(retriever, queries), "first_s": first}
        # the same questions again: what a server's caches give a question it has seen
        latencies[name]["again"] = percentiles(retriever, queries)
    recall = ann_recall(store, embedder, queries[: args.recall_queries])
    return {
        "open_s": opened, "rss_mib": rss_open, "rss_before_open_mib": rss_before,
        "latency": latencies, "ann_recall": recall, "rss_end_mib": rss_mib(),
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "np": np.__version__,
    }


def phase_update(args: argparse.Namespace) -> dict[str, Any]:
    """A server with a warm ``ppr`` retriever while another process adds 1,000 passages (or,
    ``--update delete``, deletes 1,000): its warm p50 before, the add (the ``add`` phase, in a
    child process; or the ``delete`` phase), and its next query; with ``--scratch-check``, its
    rankings then against a graph built from scratch."""
    from gear_agent.embedding import make_embedder
    from gear_agent.open_index import OpenIndex
    from gear_agent.registry import make_retriever
    from gear_agent.retrieval.search import QueryEncoder
    from gear_agent.store import open_store

    queries = json.loads(Path(args.queries_file).read_text(encoding="utf-8"))
    s = settings(args.index, args.embedder)
    embedder = make_embedder(s)
    store = open_store(s, embedder, create=False)
    runtime = OpenIndex(s, embedder, store, QueryEncoder(embedder))
    for q in queries:
        runtime.encode(q)
    retriever = make_retriever("ppr", runtime)
    started = time.perf_counter()
    retriever.retrieve(queries[0], 15)  # the graph saved by the query phase, loaded
    first = time.perf_counter() - started
    warm = percentiles(retriever, queries[1:31])
    if args.update == "delete":
        changed = {"delete": run_phase("delete", index=args.index, embedder=args.embedder, code=CODE)}
    else:
        changed = {"add": run_phase("add", index=args.index, corpus=args.corpus, openie=args.openie,
                                    embedder=args.embedder, path=args.path, code=CODE)}
    started = time.perf_counter()
    retriever.retrieve(queries[31], 15)
    after = time.perf_counter() - started
    result = {"first_s": first, "warm": warm, f"after_{args.update}_s": after, **changed,
              "warm_after": percentiles(retriever, queries[32:62])}
    if args.scratch_check:
        result["scratch"] = same_as_scratch(store, embedder, runtime, retriever, queries[32:62])
    return result


def same_as_scratch(store: Any, embedder: Any, runtime: Any, retriever: Any, queries: list[str]) -> dict[str, Any]:
    """``retriever`` (its graph brought up to date) against a ``ppr`` retriever over a graph built
    from scratch on the same data: over ``queries``, how many rank the same (ids and scores to 9
    decimals) and how many the same ids in the same order; whether the relation and contains
    edges are the same; how many synonym pairs differ (above 20,000 eligible phrases the
    synonym search is approximate and its pairs depend on the order phrases arrived)."""
    from gear_agent.expansion.ppr import PPRRetriever
    from gear_agent.expansion.ppr_graph import PPRGraph

    started = time.perf_counter()
    graph = PPRGraph.build(store, embedder, retriever.settings.ppr_synonym_threshold)
    built = time.perf_counter() - started
    scratch = PPRRetriever(store, runtime.encode, retriever.settings, graph=graph, graph_path=None)
    same = same_ids = 0
    for q in queries:
        mine, theirs = retriever.retrieve(q, 15), scratch.retrieve(q, 15)
        same_ids += [p.id for p in mine] == [p.id for p in theirs]
        same += [(p.id, round(p.score, 9)) for p in mine] == [(p.id, round(p.score, 9)) for p in theirs]

    def parts(g: Any) -> tuple[set[Any], set[Any]]:
        edges = g.edge_kinds()  # (a, b, relation count, synonym cosine, contains, weight)
        return ({(a, b, r, c) for a, b, r, _, c, _ in edges if r or c},
                {(a, b, round(y, 6)) for a, b, _, y, _, _ in edges if y})

    (mine_rc, mine_syn), (their_rc, their_syn) = parts(retriever.graph), parts(graph)
    return {"same": same, "same_ids": same_ids, "of": len(queries), "build_s": built,
            "same_relation_contains": mine_rc == their_rc, "synonym_pairs": len(their_syn),
            "synonym_differ": len(mine_syn ^ their_syn)}


def open_to_first_query(s: Any, embedder: Any, query: str) -> tuple[Any, float]:
    """Open the store and run one search of each kind (whatever is lazy loads then): the
    store and the seconds it took."""
    from gear_agent.store import open_store

    started = time.perf_counter()
    store = open_store(s, embedder, create=False)
    vector = embedder.embed_one(query)
    for collection in ("passage", "triple"):
        store.collection(collection).bm25_search(query, 1)
        hits = store.collection(collection).vector_search(vector, 1)
    store.triples.neighbours(hits[0].id, vector, 10)
    return store, time.perf_counter() - started


def evict_from_page_cache(folder: Path) -> None:
    """Ask the kernel to drop the folder's files from the page cache (``POSIX_FADV_DONTNEED``;
    no root needed), so the next open reads them from disk: a cold open."""
    os.sync()
    for path in Path(folder).rglob("*"):
        if path.is_file():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def read_into_page_cache(folder: Path) -> None:
    """Read the folder's files once, so later reads come from the page cache (the state
    of a machine that has used the index before; the cold open measures the other)."""
    for path in Path(folder).rglob("*"):
        if path.is_file():
            with path.open("rb") as handle:
                while handle.read(1 << 24):
                    pass


def phase_open(args: argparse.Namespace) -> dict[str, Any]:
    """One open to the first query in a fresh process; ``--cold 1`` evicts the files first."""
    from gear_agent.embedding import make_embedder

    queries = json.loads(Path(args.queries_file).read_text(encoding="utf-8"))
    s = settings(args.index, args.embedder)
    embedder = make_embedder(s)
    if args.cold:
        evict_from_page_cache(args.index)
    _, opened = open_to_first_query(s, embedder, queries[0])
    return {"open_s": opened, "rss_mib": rss_mib(), "cold": bool(args.cold)}


def percentiles(retriever: Any, queries: list[str]) -> dict[str, float]:
    """p50/p99 wall and thread-CPU milliseconds of ``retriever`` over ``queries``."""
    times, cpu = [], []
    for q in queries:
        t, c = time.perf_counter(), time.thread_time()
        retriever.retrieve(q, 15)
        cpu.append(1000 * (time.thread_time() - c))
        times.append(1000 * (time.perf_counter() - t))
    times.sort()
    cpu.sort()
    return {
        "p50": statistics.median(times),
        "p99": times[min(len(times) - 1, int(0.99 * len(times)))],
        "cpu_p50": statistics.median(cpu),
        "cpu_p99": cpu[min(len(cpu) - 1, int(0.99 * len(cpu)))],
    }


def ann_recall(store: Any, embedder: Any, queries: list[str]) -> dict[str, float] | None:
    """Mean recall@10 of the store's vector search against exact search, per collection.

    Tie-aware: a result counts as a true top-10 result when its exact cosine is at least
    the exact 10th best (the stand-in embedder gives many exact ties, and an id-set
    comparison would count a tied neighbour as a miss). Scores are exact in both lists
    (the store re-scores ANN candidates with the float32 vectors)."""
    exact = getattr(store, "exact_vector_search", None)
    if exact is None:
        return None
    result = {}
    for collection in ("passage", "triple"):
        hits = []
        for q in queries:
            vector = embedder.embed_one(q)
            truth = exact(collection, vector, 10)
            if not truth:
                continue
            kth = truth[-1].score
            found = store.collection(collection).vector_search(vector, 10)
            hits.append(sum(h.score >= kth - 1e-6 for h in found) / len(truth))
        result[collection] = statistics.fmean(hits) if hits else 1.0
    return result


PHASES = {"build": phase_build, "add": phase_add, "delete": phase_delete, "query": phase_query, "open": phase_open,
          "update": phase_update}


def run_phase(phase: str, **options: Any) -> dict[str, Any]:
    """Run one phase in a child process and return what it printed (JSON)."""
    command = [sys.executable, __file__, "--phase", phase]
    for key, value in options.items():
        command += [f"--{key.replace('_', '-')}", str(value)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(CODE), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(f"phase {phase} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def make_queries(openie: Path, count: int) -> list[str]:
    """Questions from random triples of the corpus: '<subject> <predicate> what?' style."""

    return questions_of(json.loads(openie.read_text(encoding="utf-8"))["docs"], count)


def questions_of(docs: list[dict[str, Any]], count: int) -> list[str]:
    """:func:`make_queries` over OpenIE docs already read."""
    import random

    rng = random.Random(7)
    queries = []
    for doc in rng.sample(docs, min(count, len(docs))):
        subject, predicate, obj = rng.choice(doc["extracted_triples"])
        queries.append(f"Who or what {predicate} {obj}?" if rng.random() < 0.5 else f"What did {subject} {predicate}?")
    return queries


def es_stats(url: str, prefix: str) -> int:
    """Primary store bytes of the prefix's indices after a flush."""
    import urllib.request

    req = urllib.request.Request(f"{url}/{prefix}-*/_flush", method="POST")
    urllib.request.urlopen(req, timeout=600).read()  # noqa: S310 - loopback
    with urllib.request.urlopen(f"{url}/{prefix}-*/_stats/store", timeout=60) as response:  # noqa: S310
        return int(json.loads(response.read())["_all"]["primaries"]["store"]["size_in_bytes"])


def jvm_written(pid: int) -> int:
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    return 0


def measure(size: int, args: argparse.Namespace, work: Path, cluster: Any = None) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from synthetic_corpus import write

    data = work / f"data-{size}"
    corpus, openie = write(size, data)
    seed = size + 1 if args.add_seed is None else args.add_seed
    extra_corpus, extra_openie = write(1000, work / f"extra-{size}-{seed}", seed=seed)
    queries_file = work / f"queries-{size}.json"
    queries_file.write_text(json.dumps(make_queries(openie, args.queries)), encoding="utf-8")
    index = work / (f"index-{size}" if cluster is None else f"es-{size}")
    row: dict[str, Any] = {"size": size, "backend": "embedded" if cluster is None else "elasticsearch"}

    def phase(name: str, saved_as: str | None = None, **options: Any) -> dict[str, Any]:
        """Run a phase, or with ``--reuse`` take its saved result from an earlier run."""
        saved = work / f"{saved_as or name}-{size}{'' if cluster is None else '-es'}.json"
        if args.reuse and name in args.reuse.split(",") and saved.exists():
            return json.loads(saved.read_text(encoding="utf-8"))
        result = run_phase(name, **options)
        saved.write_text(json.dumps(result), encoding="utf-8")
        return result

    jvm_before = 0 if cluster is None else jvm_written(cluster.process.pid)
    row["build"] = phase("build", index=index, corpus=corpus, openie=openie,
                         embedder=args.embedder, path=args.path)
    size_file = work / f"size-{size}{'' if cluster is None else '-es'}.json"
    if not (args.reuse and "build" in args.reuse.split(",") and size_file.exists()):
        if cluster is None:
            size_file.write_text(json.dumps(folder_bytes(index)), encoding="utf-8")
        else:  # the cluster's JVM did the writing: its wchar, kept with the build's figures
            row["build"]["written"] = jvm_written(cluster.process.pid) - jvm_before
            (work / f"build-{size}-es.json").write_text(json.dumps(row["build"]), encoding="utf-8")
            size_file.write_text(json.dumps(es_stats(cluster.url, f"scale-{index.name}")), encoding="utf-8")
    row["size_bytes"] = json.loads(size_file.read_text(encoding="utf-8"))
    colds = (1, 0, 0, 0, 0, 0) if cluster is None else (0, 0, 0, 0, 0)
    opens = [run_phase("open", index=index, embedder=args.embedder, queries_file=queries_file, cold=cold)
             for cold in colds]
    warm = [o for o in opens if not o["cold"]]
    row["open"] = {"cold_s": opens[0]["open_s"] if opens[0]["cold"] else None,
                   "warm_s": statistics.median(o["open_s"] for o in warm),
                   "rss_mib": statistics.median(o["rss_mib"] for o in warm)}
    row["query"] = phase("query", index=index, embedder=args.embedder, queries_file=queries_file,
                         retrievers=args.retrievers, recall_queries=args.recall_queries)
    if args.update == "delete":  # saved apart from the add's, which --reuse keeps as it was
        row["update"] = phase("update", "update-delete", index=index, embedder=args.embedder,
                              queries_file=queries_file, update="delete", code=CODE,
                              **({"scratch_check": 1} if args.scratch_check else {}))
        row["add"] = row["update"]["delete"]
    else:
        row["update"] = phase("update", index=index, corpus=extra_corpus, openie=extra_openie,
                              embedder=args.embedder, path=args.path, queries_file=queries_file, code=CODE,
                              **({"scratch_check": 1} if args.scratch_check else {}))
        row["add"] = row["update"]["add"]
    if cluster is not None:
        row["jvm_rss_mib"] = cluster.rss_bytes() / 2**20
    return row


def _seconds(phase: dict[str, Any]) -> str:
    cpu = phase.get("cpu_s")
    return f"{phase['seconds']:.1f}" + ("" if cpu is None else f" ({cpu:.0f})")


def _open(row: dict[str, Any], query: dict[str, Any]) -> str:
    opened = row.get("open")
    if opened is None:
        return f"{query['open_s']:.2f}"
    cold = "–" if opened.get("cold_s") is None else f"{opened['cold_s']:.2f}"
    return f"{cold} / {opened['warm_s']:.2f}"


def print_table(rows: list[dict[str, Any]], retrievers: list[str]) -> None:
    deleted = any("after_delete_s" in (row.get("update") or {}) for row in rows)
    head = ["backend", "passages / triples", "build s (CPU s)", "written / size", "size MB",
            f"{'delete' if deleted else 'add'} 1k s (CPU s)",
            "open s cold / warm", "RSS MiB"]
    head += [f"{r} p50/p99 ms (CPU)" for r in retrievers] + ["ANN recall@10 p/t", "peak RSS of the query run MiB"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for row in rows:
        b, q, a = row["build"], row["query"], row["add"]
        cells = [
            row.get("backend", "embedded"), f"{b['passages']:,} / {b['triples']:,}", _seconds(b),
            f"{b['written'] / max(row['size_bytes'], 1):.1f}", f"{row['size_bytes'] / 1e6:.0f}",
            _seconds(a), _open(row, q), f"{row.get('open', q)['rss_mib']:.0f}",
        ]
        for name in retrievers:
            lat = q["latency"].get(name)
            cells.append("-" if lat is None else f"{lat['p50']:.1f} / {lat['p99']:.1f}" + (
                f" ({lat['cpu_p50']:.1f} / {lat['cpu_p99']:.1f})" if "cpu_p50" in lat else ""))
        recall = q.get("ann_recall")
        if row.get("backend") == "elasticsearch":
            cells.append("-")
        else:
            cells.append("exact" if not recall else f"{recall['passage']:.3f} / {recall['triple']:.3f}")
        cells.append(f"{q['peak_rss_mib']:,.0f}" if "peak_rss_mib" in q else "-")
        print("| " + " | ".join(cells) + " |")
    change = "deleted" if deleted else "added"
    checked = any("scratch" in (row.get("update") or {}) for row in rows)
    print(f"\n| backend | passages | ppr warm p50 ms | next ppr query after another process {change} 1k s "
          f"| extra s | ppr warm p50 after ms |{' same ranking as a graph from scratch |' if checked else ''}")
    print("|---|---|---|---|---|---|" + ("---|" if checked else ""))
    for row in rows:
        u = row.get("update")
        if u:
            after = u["after_delete_s" if deleted else "after_add_s"]
            extra = after - u["warm"]["p50"] / 1000
            scratch = u.get("scratch")
            same = "-" if scratch is None else (
                f"{scratch['same']} / {scratch['of']} (ids: {scratch.get('same_ids', '-')}; relation + contains "
                f"edges {'same' if scratch.get('same_relation_contains') else 'differ'}; synonym pairs differing "
                f"{scratch.get('synonym_differ', 0):,} of {scratch.get('synonym_pairs', 0):,})")
            print(f"| {row.get('backend', 'embedded')} | {row['size']:,} | {u['warm']['p50']:.1f} | "
                  f"{after:.2f} | {extra:.2f} | {u['warm_after']['p50']:.1f} |" + (f" {same} |" if checked else ""))
    for row in rows:
        if "jvm_rss_mib" in row:
            print(f"\nElasticsearch JVM RSS after {row['size']:,} passages: {row['jvm_rss_mib']:.0f} MiB")


def encoder_rate(args: argparse.Namespace) -> None:
    """The real encoder's throughput on passages and on triples of the synthetic corpus."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from synthetic_corpus import generate

    from gear_agent.embedding.sentence_transformer import SentenceTransformerEmbedder

    corpus, openie = generate(600)
    embedder = SentenceTransformerEmbedder(args.model)
    texts = [f"{p['title']}\n{p['text']}" for p in corpus]
    triples = [" ".join(t) for d in openie["docs"] for t in d["extracted_triples"]][:4000]
    embedder.embed(texts[:32])  # warm-up
    rates = {}
    for label, batch in (("passages", texts), ("triples", triples)):
        started = time.perf_counter()
        embedder.embed(batch)
        rates[label] = len(batch) / (time.perf_counter() - started)
    print(f"| encoder | passages/s | triples/s |\n|---|---|---|\n| {embedder.name} | "
          f"{rates['passages']:.1f} | {rates['triples']:.1f} |")


def musique_share(args: argparse.Namespace) -> None:
    """`gear index` of ../shared's MuSiQue slice (corpus + OpenIE) with the real encoder:
    total seconds and the share spent inside the encoder (same run, so load cancels out)."""
    from gear_agent.config import GearSettings
    from gear_agent.embedding import make_embedder
    from gear_agent.indexing import IndexReport, add_passages, import_openie
    from gear_agent.ingest.corpus import read_corpus
    from gear_agent.ingest.openie import read_openie
    from gear_agent.store import open_store

    data = ROOT.parent / "shared" / "data" / "musique_dev"
    with tempfile.TemporaryDirectory(prefix="gear-musique-") as tmp:
        s = GearSettings(index_dir=Path(tmp) / "index", embedding_model=args.model, bm25_tokenizer="word")
        embedder = make_embedder(s)
        embedder.embed(["warm up"])
        inner, spent = embedder.embed, [0.0]

        def timed(texts):  # type: ignore[no-untyped-def]
            started = time.perf_counter()
            try:
                return inner(texts)
            finally:
                spent[0] += time.perf_counter() - started

        embedder.embed = timed  # type: ignore[method-assign]
        started = time.perf_counter()
        store = open_store(s, embedder, create=True)
        report = IndexReport()
        add_passages(store, read_corpus(data / "corpus.json"), report)
        import_openie(store, read_openie(data / "openie_gpt-3.5-turbo-1106.json"), report)
        total = time.perf_counter() - started
    print("| run | passages | triples | total s | in the encoder s | encoder share |\n|---|---|---|---|---|---|")
    print(f"| gear index MuSiQue ({embedder.name}) | {report.passages_added:,} | {report.triples_added:,} | "
          f"{total:.1f} | {spent[0]:.1f} | {100 * spent[0] / total:.1f}% |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="2000,20000", help="Passage counts, comma-separated.")
    parser.add_argument("--embedder", default="hashing-384", help="Embedding model name.")
    parser.add_argument("--retrievers", default=DEFAULT_RETRIEVERS)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--recall-queries", type=int, default=50)
    parser.add_argument("--work", type=Path, default=None, help="Keep the data and indexes here.")
    parser.add_argument("--json", type=Path, default=None, help="Also write the rows here.")
    parser.add_argument("--reuse", default="",
                        help="Phases (build,query,add) whose saved results in --work to reuse: e.g. "
                             "`--reuse build,add` measures queries again on the index built before.")
    parser.add_argument("--encoder-rate", action="store_true", help="Measure the real encoder.")
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--musique", action="store_true",
                        help="gear index of ../shared's MuSiQue slice with the real encoder: its encoder share.")
    parser.add_argument("--add-seed", type=int, default=None,
                        help="Seed of the 1,000 passages added (default: size + 1); another one adds new "
                             "passages to a kept index, e.g. `--reuse build,query --add-seed 2`.")
    parser.add_argument("--code", type=Path, default=ROOT,
                        help="Checkout whose gear_agent the phases run (default: this one).")
    parser.add_argument("--path", choices=("extract", "openie"), default="extract",
                        help="How triples are indexed: the extraction path (default) or OpenIE import.")
    parser.add_argument("--backend", choices=("embedded", "elasticsearch", "both"), default="embedded")
    parser.add_argument("--update", choices=("add", "delete"), default="add",
                        help="What another process does while the update phase's server is warm: add 1,000 "
                             "passages (default) or delete 1,000 stored ones.")
    parser.add_argument("--scratch-check", type=int, default=0, metavar="0|1",
                        help="1: the update phase compares its rankings after the update with a graph built "
                             "from scratch (a full build: minutes at 100k).")
    parser.add_argument("--es-heap", default="2g", help="Heap of the Elasticsearch test cluster's JVM.")
    parser.add_argument("--es-processors", type=int, default=1,
                        help="node.processors of the test cluster's node (its thread pools' sizes).")
    # internal: one phase in a child process
    parser.add_argument("--phase", choices=sorted(PHASES), help=argparse.SUPPRESS)
    parser.add_argument("--cold", type=int, default=0, help=argparse.SUPPRESS)
    for option in ("index", "corpus", "openie", "queries-file"):
        parser.add_argument(f"--{option}", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    global CODE
    CODE = args.code
    if args.phase:
        print(json.dumps(PHASES[args.phase](args)))
        return
    if args.encoder_rate:
        encoder_rate(args)
        return
    if args.musique:
        musique_share(args)
        return
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    retrievers = [r for r in args.retrievers.split(",") if r]
    with tempfile.TemporaryDirectory(prefix="gear-scale-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        rows = []
        cluster = None
        try:
            if args.backend != "embedded":
                sys.path.insert(0, str(ROOT / "tests"))
                from support import es_cluster

                cluster = es_cluster.start(1, args.es_heap, home=work / "es-cluster",
                                           settings={"node.processors": str(args.es_processors)})
                os.environ["GEAR_ES_URL"] = cluster.url
            for size in sizes:
                if args.backend in ("embedded", "both"):
                    os.environ.pop("GEAR_BACKEND", None)
                    rows.append(measure(size, args, work))
                    print(f"measured {size:,} passages (embedded)", file=sys.stderr, flush=True)
                if cluster is not None:
                    os.environ["GEAR_BACKEND"] = "elasticsearch"
                    rows.append(measure(size, args, work, cluster))
                    print(f"measured {size:,} passages (elasticsearch)", file=sys.stderr, flush=True)
        finally:
            if cluster is not None:
                cluster.close()
        print_table(rows, retrievers)
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
