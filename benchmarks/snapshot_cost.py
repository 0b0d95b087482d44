"""What a snapshot costs: `gear snapshot`'s time and bytes, and restoring it, per index size.

Builds the synthetic corpus (``benchmarks/synthetic_corpus.py``, about 9 OpenIE triples per
passage) at each size into a fresh embedded index through the OpenIE path
(``benchmarks/scale.py``'s ``build_index``; stand-in embedder ``hashing-384``, so no
model), then, each in a fresh process:

* **snapshot**: :func:`gear_agent.store.embedded.snapshot.take` (SQLite's online backup of
  ``index.sqlite`` into ``snapshots/``, fsync, xxh3 checksum), its seconds and bytes, and
  the same while a reader runs BM25 queries in another thread (the reader's p50 query
  time alone, and of the queries that started while the snapshot ran);
* **verify**: finding the newest good snapshot (its checksum read back);
* **restore**: ``index.sqlite`` deleted, then :func:`gear_agent.store.embedded.snapshot.restore`
  (the copy put in place; no WAL to replay).

    python benchmarks/snapshot_cost.py --sizes 10000,100000 --work /tmp/snapcost
    python benchmarks/snapshot_cost.py --sizes 100000 --work /tmp/snapcost --reuse   # the built index again

``--es-prefix PREFIX`` (with ``--es-url`` or ``GEAR_ES_URL``; credentials from the usual
``GEAR_ES_*`` settings) measures instead an Elasticsearch snapshot of an existing index:
``gear snapshot``'s own code (:func:`gear_agent.store.elasticsearch.snapshot.take_es_snapshot`)
into a repository of the benchmark's own, ``PREFIX-snapshot-cost`` (registered as type ``fs``
under the nodes' ``path.repo`` when absent, so that the index's own snapshots are neither
rotated nor counted), ``--rounds`` times in a row: the first copies every segment, the next
only what changed since (Elasticsearch snapshots are incremental; nothing changes between
rounds here, so they show the floor of a ``GEAR_SNAPSHOT_EVERY`` snapshot). Per round: the
wall time, Elasticsearch's own time, the snapshot's size and what it added to the repository
(``_snapshot/.../_status``). ``--es-restore`` also restores the last one under other index
names (``PREFIX`` made ``snapcost-restored-PREFIX``; the index itself is not touched) and
times it, then deletes those copies. The benchmark's snapshots and repository are removed at
the end unless ``--es-keep``.

    python benchmarks/snapshot_cost.py --es-url http://localhost:9200 --es-prefix gear100k --es-restore
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MODEL = "hashing-384"


def phase_build(index: Path, corpus: Path, openie: Path) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from scale import build_index

    from gear_agent.embedding.hashing import HashingEmbedder
    from gear_agent.store.embedded.store import EmbeddedStore

    shutil.rmtree(index, ignore_errors=True)
    started = time.perf_counter()
    store = EmbeddedStore.open(index, HashingEmbedder(384), tokenizer="word")
    try:
        build_index(store, corpus, openie, "openie")
        counts = {"passages": store.passages.count(), "triples": store.triples.count()}
    finally:
        store.close()
    return {**counts, "build_s": round(time.perf_counter() - started, 1)}


def _reader(index: Path, queries: list[str], stop: threading.Event, out: list[tuple[float, float]]) -> None:
    """BM25 queries until ``stop``; ``out`` gets (start, seconds) of each."""
    from gear_agent.embedding.hashing import HashingEmbedder
    from gear_agent.store.embedded.store import EmbeddedStore

    store = EmbeddedStore.open(index, HashingEmbedder(384), create=False, tokenizer="word")
    try:
        i = 0
        while not stop.is_set():
            started = time.perf_counter()
            store.passages.bm25_search(queries[i % len(queries)], k=10)
            out.append((started, time.perf_counter() - started))
            i += 1
    finally:
        store.close()


def phase_measure(index: Path, queries: list[str]) -> dict[str, Any]:
    from gear_agent.store.embedded.snapshot import SNAPSHOT_DIR, newest_good, restore, take

    shutil.rmtree(index / SNAPSHOT_DIR, ignore_errors=True)
    sizes = {p.name: p.stat().st_size for p in index.iterdir() if p.is_file()}
    alone = take(index, keep=2)
    quiet: list[tuple[float, float]] = []
    stop = threading.Event()
    reader = threading.Thread(target=_reader, args=(index, queries, stop, quiet))
    reader.start()
    time.sleep(3.0)
    stop.set()
    reader.join()
    busy: list[tuple[float, float]] = []
    stop = threading.Event()
    reader = threading.Thread(target=_reader, args=(index, queries, stop, busy))
    reader.start()
    time.sleep(1.0)
    began = time.perf_counter()
    with_reader = take(index, keep=2)
    ended = time.perf_counter()
    stop.set()
    reader.join()
    during = [d for t, d in busy if began <= t <= ended]
    started = time.perf_counter()
    good = newest_good(index)
    verify_s = time.perf_counter() - started
    work = index.parent / f"{index.name}-restore"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(index, work)
    (work / "index.sqlite").unlink()
    started = time.perf_counter()
    restored = restore(work)
    restore_s = time.perf_counter() - started
    shutil.rmtree(work, ignore_errors=True)
    assert good is not None and restored.lost is None
    return {
        "index_mb": sum(sizes.values()) / 1e6, "sqlite_mb": sizes.get("index.sqlite", 0) / 1e6,
        "vectors_mb": sum(v for k, v in sizes.items() if k.endswith(".vec")) / 1e6,
        "snapshot_mb": alone.bytes / 1e6, "snapshot_s": alone.seconds, "snapshot_reader_s": with_reader.seconds,
        "reader_p50_ms": statistics.median(d for _, d in quiet[len(quiet) // 3:]) * 1e3,
        "reader_p50_during_ms": statistics.median(during) * 1e3 if during else None, "reader_during": len(during),
        "verify_s": round(verify_s, 2), "restore_s": round(restore_s, 2),
    }


ES_REPOSITORY = "{prefix}-snapshot-cost"
"""The benchmark's own snapshot repository (the index's own snapshots stay as they are)."""
RESTORED_AS = "snapcost-restored-"
"""The name prefix of the indices ``--es-restore`` restores the snapshot into."""


def es_measure(url: str | None, prefix: str, rounds: int, restore: bool, keep: bool) -> list[dict[str, Any]]:
    """Time and bytes of ``rounds`` Elasticsearch snapshots of ``prefix`` (and a restore)."""
    from gear_agent.config import GearSettings
    from gear_agent.store.elasticsearch.client import make_client
    from gear_agent.store.elasticsearch.snapshot import indices_of, take_es_snapshot

    repository = ES_REPOSITORY.format(prefix=prefix)
    overrides: dict[str, Any] = {"es_url": url} if url else {}
    settings = GearSettings(backend="elasticsearch", es_index_prefix=prefix, es_snapshot_repository=repository,
                            snapshot_keep=rounds + 1, **overrides)
    if not settings.es_url:
        raise SystemExit("--es-prefix needs --es-url or GEAR_ES_URL")
    client = make_client(settings)
    present = [i for i in indices_of(prefix) if client.indices.exists(index=i)]
    if f"{prefix}-passages" not in present:
        raise SystemExit(f"no index {prefix}-passages at {settings.es_url}: give the prefix of an existing index")
    stats = client.indices.stats(index=",".join(present), metric="store,docs")
    primaries = stats["_all"]["primaries"]
    docs = {i: stats["indices"][i]["primaries"]["docs"]["count"] for i in present}
    base = {"prefix": prefix, "passages": docs.get(f"{prefix}-passages", 0), "triples": docs.get(f"{prefix}-triples", 0),
            "store_mb": primaries["store"]["size_in_bytes"] / 1e6}
    rows, taken, registered = [], [], False
    try:
        for round_ in range(rounds):
            started = time.perf_counter()
            line = take_es_snapshot(settings, client)  # "snapshot NAME of ... (registered now ...)"
            seconds = time.perf_counter() - started
            name = line.split()[1]
            taken.append(name)
            registered = registered or "(registered now" in line
            status = client.snapshot.status(repository=repository, snapshot=name)["snapshots"][0]["stats"]
            rows.append({**base, "round": "first" if round_ == 0 else f"again ({round_ + 1})", "seconds": seconds,
                         "es_seconds": status["time_in_millis"] / 1000,
                         "snapshot_mb": status["total"]["size_in_bytes"] / 1e6,
                         "added_mb": status["incremental"]["size_in_bytes"] / 1e6,
                         "added_files": status["incremental"]["file_count"]})
        if restore:
            started = time.perf_counter()
            answer = client.snapshot.restore(repository=repository, snapshot=taken[-1], indices=",".join(present),
                                             include_global_state=False, rename_pattern="(.+)",
                                             rename_replacement=RESTORED_AS + "$1", wait_for_completion=True)
            client.cluster.health(index=",".join(RESTORED_AS + i for i in present), wait_for_status="yellow",
                                  timeout="600s")
            rows[-1]["restore_s"] = time.perf_counter() - started
            failed = (answer.get("snapshot") or {}).get("shards", {}).get("failed")
            if failed:
                raise SystemExit(f"the restore of {taken[-1]} failed on {failed} shard(s)")
    finally:
        if restore:
            client.indices.delete(index=",".join(RESTORED_AS + i for i in present), ignore_unavailable=True)
        if not keep:  # the benchmark's own snapshots, and its repository when it registered it
            for name in taken:
                client.snapshot.delete(repository=repository, snapshot=name)
            if registered:
                client.snapshot.delete_repository(name=repository)
        client.close()
    return rows


def print_es_table(rows: list[dict[str, Any]]) -> None:
    print("| prefix | passages | triples | primaries' store (MB) | snapshot | seconds (wall) | seconds (Elasticsearch) "
          "| snapshot size (MB) | added to the repository (MB, files) | restore under other names (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        restore = f"{r['restore_s']:.2f}" if "restore_s" in r else "-"
        print(f"| {r['prefix']} | {r['passages']:,} | {r['triples']:,} | {r['store_mb']:,.2f} | {r['round']} | "
              f"{r['seconds']:.2f} | {r['es_seconds']:.2f} | {r['snapshot_mb']:,.2f} | "
              f"{r['added_mb']:,.2f} ({r['added_files']:,}) | {restore} |")


def run_phase(phase: str, **options: Any) -> dict[str, Any]:
    """One phase in a fresh process (its page cache state is the machine's, its RSS its own)."""
    command = [sys.executable, __file__, "--phase", phase, "--options", json.dumps(options, default=str)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False, cwd="/")
    if done.returncode != 0:
        raise SystemExit(f"phase {phase} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000", help="Passages per index, comma-separated.")
    parser.add_argument("--work", type=Path, default=None, help="Folder for the corpora and indexes (required).")
    parser.add_argument("--reuse", action="store_true", help="Reuse an index a previous run built.")
    parser.add_argument("--es-prefix", help="Measure an Elasticsearch snapshot of this existing index instead.")
    parser.add_argument("--es-url", help="The cluster of --es-prefix (default GEAR_ES_URL).")
    parser.add_argument("--rounds", type=int, default=2, help="Snapshots in a row (--es-prefix).")
    parser.add_argument("--es-restore", action="store_true", help="Also time a restore under other names.")
    parser.add_argument("--es-keep", action="store_true", help="Keep the benchmark's snapshots and repository.")
    parser.add_argument("--phase", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--options", default="{}", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        options = json.loads(args.options)
        if args.phase == "build":
            result = phase_build(Path(options["index"]), Path(options["corpus"]), Path(options["openie"]))
        else:
            result = phase_measure(Path(options["index"]), options["queries"])
        print(json.dumps(result))
        return
    if args.es_prefix:
        if args.rounds < 1:
            parser.error(f"--rounds must be at least 1, got {args.rounds}")
        print_es_table(es_measure(args.es_url, args.es_prefix, args.rounds, args.es_restore, args.es_keep))
        return
    if args.work is None:
        parser.error("--work is required (or --es-prefix)")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from synthetic_corpus import write

    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        corpus, openie = write(size, args.work / f"data-{size}")
        index = args.work / f"index-{size}"
        docs = json.loads(openie.read_text(encoding="utf-8"))["docs"]
        queries = [" ".join(d["extracted_triples"][0][:2]) for d in docs[:: max(1, len(docs) // 200)]]
        meta = index / "built.json"
        if args.reuse and meta.exists():
            built = json.loads(meta.read_text(encoding="utf-8"))
        else:
            built = run_phase("build", index=index, corpus=corpus, openie=openie)
            meta.write_text(json.dumps(built), encoding="utf-8")
        rows.append({"size": size, **built, **run_phase("measure", index=index, queries=queries)})
        print(json.dumps(rows[-1]), file=sys.stderr)
    print("| passages | triples | index (MB) | index.sqlite (MB) | vector files (MB) | snapshot (MB) "
          "| snapshot (s) | snapshot with a reader (s) | reader BM25 p50 (ms) alone / during (queries) | verify (s) "
          "| restore (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['passages']:,} | {r['triples']:,} | {r['index_mb']:,.0f} | {r['sqlite_mb']:,.0f} | "
              f"{r['vectors_mb']:,.0f} | {r['snapshot_mb']:,.0f} | {r['snapshot_s']:.2f} | "
              f"{r['snapshot_reader_s']:.2f} | {r['reader_p50_ms']:.2f} / {r['reader_p50_during_ms'] or 0:.2f} ({r['reader_during']:,}) | "
              f"{r['verify_s']:.2f} | {r['restore_s']:.2f} |")


if __name__ == "__main__":
    main()
