"""Large ANN parts built in pieces: time to the first query, build time, resume, peak RSS.

Indexes ``--passages`` synthetic passages (``benchmarks/synthetic_corpus.py``'s corpus,
without triples) with the model-free stand-in embedder (``hashing-384``), then runs the
embedded store's maintenance, which builds the passage ANN in pieces of at most
``--piece-rows`` rows, each committed as it finishes (``gear_agent.store.ann``). With
``--interrupt-after K`` the build is interrupted (an exception, as Ctrl-C would) after K
pieces and run again, which builds only the rest.

Prints one table: seconds to commit the passages (from then on a query is answered, by
exact search over the rows no part covers), the first query, each piece, the whole ANN
build, the resumed build, query p50 before and after, recall@10 of the ANN search against
exact search, and the process's peak RSS.

    OMP_NUM_THREADS=1 python benchmarks/ann_pieces.py --passages 300000 --interrupt-after 1
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from sirerag_structure import table  # noqa: E402
from synthetic_corpus import generate  # noqa: E402

BATCH = 4096


class Interrupted(Exception):
    """Raised after ``--interrupt-after`` pieces."""


def cpu_s() -> float:
    """User + system CPU seconds of this process so far (less dependent on a shared machine's load)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def p50_ms(store, vectors) -> float:  # noqa: ANN001 - a store, query vectors
    times = []
    for vector in vectors:
        started = time.perf_counter()
        store.passages.vector_search(vector, 10)
        times.append(1000 * (time.perf_counter() - started))
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--passages", type=int, default=300_000)
    parser.add_argument("--piece-rows", type=int, default=None, help="default: AnnPolicy's")
    parser.add_argument("--interrupt-after", type=int, default=0, metavar="K",
                        help="interrupt the build after K pieces, then resume (0: no interruption)")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--index", type=Path, default=None, help="default: a temporary folder, removed")
    args = parser.parse_args()

    from gear_agent.config import settings_from
    from gear_agent.embedding import make_embedder
    from gear_agent.ids import passage_id
    from gear_agent.store import ann
    from gear_agent.store.embedded.store import EmbeddedStore
    from gear_agent.types import Passage

    policy = ann.AnnPolicy() if args.piece_rows is None else ann.AnnPolicy(piece_rows=args.piece_rows)
    embedder = make_embedder(settings_from(embedding_model="hashing-384"))
    started = time.perf_counter()
    corpus, _ = generate(args.passages)
    passages = [Passage(passage_id(d["title"], d["text"]), d["title"], d["text"], "synthetic") for d in corpus]
    del corpus
    generate_s = time.perf_counter() - started
    folder = args.index or Path(tempfile.mkdtemp(prefix="ann-pieces-"))
    rows: list[tuple[str, str]] = [("passages", f"{len(passages):,}"),
                                   ("piece rows", f"{policy.piece_rows:,}"),
                                   ("generate corpus (not in the figures)", f"{generate_s:.0f} s")]
    try:
        store = EmbeddedStore.open(folder, embedder, ann=policy)
        started, cpu = time.perf_counter(), cpu_s()
        for lo in range(0, len(passages), BATCH):
            store.passages.add(passages[lo : lo + BATCH])
        commit_s, commit_cpu = time.perf_counter() - started, cpu_s() - cpu
        queries = [embedder.embed_one(p.content) for p in passages[:: max(1, len(passages) // args.queries)]]
        queries = queries[: args.queries]
        del passages
        started = time.perf_counter()
        exact = [[h.id for h in store.passages.vector_search(q, 10)] for q in queries[:1]]
        first_s = time.perf_counter() - started
        rows += [("commit passages (wall, CPU)", f"{commit_s:.0f} s, {commit_cpu:.0f} s"),
                 ("time to the first query (commit + first search, exact)", f"{commit_s + first_s:.1f} s"),
                 ("search p50 before the ANN (exact)", f"{p50_ms(store, queries):.1f} ms")]

        pieces: list[float] = []
        real = ann.build_part
        mark = [time.perf_counter()]

        def timed(*a, **k):  # noqa: ANN002, ANN003, ANN202 - build_part's arguments
            if args.interrupt_after and len(pieces) == args.interrupt_after and not interrupted:
                raise Interrupted(f"interrupted after {len(pieces)} pieces")
            part = real(*a, **k)
            now = time.perf_counter()
            pieces.append(now - mark[0])
            mark[0] = now
            return part

        ann.build_part = timed
        interrupted = False
        cpu = cpu_s()
        started = time.perf_counter()
        try:
            store.maintain()
        except Interrupted:
            interrupted = True
            kept = len(store.view("passage").ann.parts)
            first_run_s = time.perf_counter() - started
            rows.append((f"build interrupted after piece {args.interrupt_after}: pieces kept",
                         f"{kept} ({first_run_s:.0f} s)"))
            started = mark[0] = time.perf_counter()
            before = len(pieces)
            store.maintain()
            rows.append(("resumed build: pieces built, seconds",
                         f"{len(pieces) - before}, {time.perf_counter() - started:.0f} s"))
        ann_s, ann_cpu = sum(pieces), cpu_s() - cpu
        ann.build_part = real
        parts = store.view("passage").ann.parts
        rows += [(f"ANN piece {i + 1} ({p.stop - p.start:,} rows)", f"{s:.0f} s")
                 for i, (p, s) in enumerate(zip(parts, pieces))]
        rows += [("ANN build, all pieces (wall, CPU)", f"{ann_s:.0f} s, {ann_cpu:.0f} s"),
                 ("parts", f"{len(parts)}, rows 0..{store.view('passage').ann.covered:,}"),
                 ("search p50 with the ANN", f"{p50_ms(store, queries):.1f} ms")]
        found = sum(len(set(h.id for h in store.passages.vector_search(q, 10))
                        & {h.id for h in store.passages.exact_vector_search(q, 10)}) for q in queries)
        rows.append(("recall@10 of the ANN search vs exact", f"{found / (10 * len(queries)):.3f}"))
        del exact
        store.close()
    finally:
        if args.index is None:
            shutil.rmtree(folder, ignore_errors=True)
    rows.append(("peak RSS", f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MiB"))
    print(table(["what", "value"], rows))


if __name__ == "__main__":
    main()
