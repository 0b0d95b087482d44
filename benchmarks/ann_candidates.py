"""Approximate nearest-neighbour candidates on our workload: faiss-cpu, usearch, hnswlib.

The vectors are the stand-in embedder's (``hashing-384``) of the triples of the synthetic
corpus (``benchmarks/synthetic_corpus.py``), the queries questions made from its triples,
as ``benchmarks/scale.py`` makes them. For each candidate, one table row: build seconds,
recall@10 against exact search (top 40 candidates re-ranked by the exact float32 cosine,
as the store does), p50/p99 ms per single query, on-disk size, seconds to open the saved
index (memory-mapped where the library can), RSS growth after opening and after 200
queries, and seconds to add 1,000 more vectors to the opened index.

    python benchmarks/ann_candidates.py --passages 20000       # about 180k triples
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

THREADS = 2


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def workload(passages: int, queries: int) -> tuple[np.ndarray, np.ndarray]:
    from synthetic_corpus import generate

    from gear_agent.embedding.hashing import HashingEmbedder

    _, openie = generate(passages)
    texts = [" ".join(t) for d in openie["docs"] for t in d["extracted_triples"]]
    rng = np.random.default_rng(7)
    picked = rng.choice(len(texts), size=queries, replace=False)
    questions = []
    for i in picked:
        words = texts[i].split()
        questions.append("Who or what " + " ".join(words[1:]) + "?")
    embedder = HashingEmbedder(384)
    return embedder.embed(texts), embedder.embed(questions)


def exact_kth(vectors: np.ndarray, queries: np.ndarray, k: int) -> list[float]:
    """The exact k-th best cosine per query: a result at least this good is a true top-k
    result (the hashing vectors have many exact ties, so id sets would undercount)."""
    return [float(np.partition(vectors @ q, len(vectors) - k)[len(vectors) - k]) for q in queries]


def rerank(vectors: np.ndarray, q: np.ndarray, keys: np.ndarray, k: int) -> list[int]:
    keys = keys[keys >= 0]
    scores = vectors[keys] @ q
    return keys[np.argsort(-scores)[:k]].tolist()


# ---- candidates -----------------------------------------------------------------------
class Faiss:
    def __init__(self, kind: str, ef_construction: int = 64) -> None:
        import faiss

        faiss.omp_set_num_threads(THREADS)
        self.faiss, self.kind, self.ef_construction = faiss, kind, ef_construction
        self.name = f"faiss HNSW32 {kind} ef{ef_construction}"

    def build(self, vectors: np.ndarray) -> None:
        f = self.faiss
        d = vectors.shape[1]
        if self.kind == "flat":
            self.index = f.IndexHNSWFlat(d, 32, f.METRIC_INNER_PRODUCT)
        else:
            self.index = f.IndexHNSWSQ(d, f.ScalarQuantizer.QT_8bit, 32, f.METRIC_INNER_PRODUCT)
            self.index.train(vectors[:20000])
        self.index.hnsw.efConstruction = self.ef_construction
        self.index.add(vectors)

    def save(self, path: Path) -> None:
        self.faiss.write_index(self.index, str(path))

    def open(self, path: Path) -> None:
        try:
            self.index = self.faiss.read_index(str(path), self.faiss.IO_FLAG_MMAP)
            self.mmap = True
        except RuntimeError:
            self.index = self.faiss.read_index(str(path))
            self.mmap = False
        self.index.hnsw.efSearch = 64

    def search(self, q: np.ndarray, k: int) -> np.ndarray:
        _, keys = self.index.search(q[None, :], k)
        return keys[0]

    def add(self, vectors: np.ndarray, start: int) -> None:
        self.index.add(vectors)


class USearch:
    def __init__(self, dtype: str, expansion_add: int = 128) -> None:
        self.dtype, self.expansion_add = dtype, expansion_add
        self.name = f"usearch {dtype} M16 ef{expansion_add}"

    def _new(self, d: int) -> Any:
        from usearch.index import Index

        return Index(ndim=d, metric="ip", dtype=self.dtype, connectivity=16,
                     expansion_add=self.expansion_add, expansion_search=64)

    def build(self, vectors: np.ndarray) -> None:
        self.index = self._new(vectors.shape[1])
        self.index.add(np.arange(len(vectors)), vectors, threads=THREADS)

    def save(self, path: Path) -> None:
        self.index.save(str(path))

    def open(self, path: Path) -> None:
        from usearch.index import Index

        self.index = Index.restore(str(path), view=True)
        self.mmap = True

    def search(self, q: np.ndarray, k: int) -> np.ndarray:
        return np.asarray(self.index.search(q, k).keys, dtype=np.int64)

    def add(self, vectors: np.ndarray, start: int) -> None:
        from usearch.index import Index

        # a viewed index is read-only: load it into memory to add
        loaded = Index.restore(self._path, view=False)
        loaded.add(np.arange(start, start + len(vectors)), vectors, threads=THREADS)
        self.index = loaded


class FaissIVF:
    def __init__(self, kind: str, nprobe: int = 32) -> None:
        import faiss

        faiss.omp_set_num_threads(THREADS)
        self.faiss, self.kind, self.nprobe = faiss, kind, nprobe
        self.name = f"faiss IVF {kind} nprobe{nprobe}"

    def build(self, vectors: np.ndarray) -> None:
        f = self.faiss
        d, n = vectors.shape[1], len(vectors)
        nlist = max(16, int(4 * np.sqrt(n)))
        quantizer = f.IndexFlatIP(d)
        if self.kind == "flat":
            self.index = f.IndexIVFFlat(quantizer, d, nlist, f.METRIC_INNER_PRODUCT)
        else:
            self.index = f.IndexIVFScalarQuantizer(quantizer, d, nlist, f.ScalarQuantizer.QT_8bit,
                                                   f.METRIC_INNER_PRODUCT)
        sample = vectors[np.random.default_rng(0).choice(n, min(n, 40 * nlist), replace=False)]
        self.index.train(sample)
        self.index.add(vectors)

    def save(self, path: Path) -> None:
        self.faiss.write_index(self.index, str(path))

    def open(self, path: Path) -> None:
        try:
            self.index = self.faiss.read_index(str(path), self.faiss.IO_FLAG_MMAP)
            self.mmap = True
        except RuntimeError:
            self.index = self.faiss.read_index(str(path))
            self.mmap = False
        self.index.nprobe = self.nprobe

    def search(self, q: np.ndarray, k: int) -> np.ndarray:
        _, keys = self.index.search(q[None, :], k)
        return keys[0]

    def add(self, vectors: np.ndarray, start: int) -> None:
        if self.mmap:
            self.index = self.faiss.read_index(self._path)
            self.index.nprobe = self.nprobe
        self.index.add(vectors)


class Hnswlib:
    name = "hnswlib M16"

    def build(self, vectors: np.ndarray) -> None:
        import hnswlib

        self.index = hnswlib.Index(space="ip", dim=vectors.shape[1])
        self.index.init_index(max_elements=len(vectors) + 10_000, ef_construction=128, M=16)
        self.index.set_num_threads(THREADS)
        self.index.add_items(vectors, np.arange(len(vectors)))

    def save(self, path: Path) -> None:
        self.index.save_index(str(path))

    def open(self, path: Path) -> None:
        import hnswlib

        self.index = hnswlib.Index(space="ip", dim=384)
        self.index.load_index(str(path), max_elements=self._n + 10_000)
        self.index.set_ef(64)
        self.mmap = False

    def search(self, q: np.ndarray, k: int) -> np.ndarray:
        keys, _ = self.index.knn_query(q, k=k)
        return keys[0].astype(np.int64)

    def add(self, vectors: np.ndarray, start: int) -> None:
        self.index.add_items(vectors, np.arange(start, start + len(vectors)))


def measure(candidate: Any, vectors: np.ndarray, extra: np.ndarray, queries: np.ndarray,
            truth: list[float], folder: Path) -> dict[str, Any]:
    path = folder / candidate.name.replace(" ", "_")
    started = time.perf_counter()
    candidate.build(vectors)
    build_s = time.perf_counter() - started
    candidate.save(path)
    candidate._path, candidate._n = str(path), len(vectors)
    del candidate.index
    gc.collect()
    rss0 = rss_mib()
    started = time.perf_counter()
    candidate.open(path)
    open_s = time.perf_counter() - started
    rss_open = rss_mib() - rss0
    hits, times = [], []
    for q, kth in zip(queries, truth):
        t = time.perf_counter()
        found = rerank(vectors, q, candidate.search(q, 40), 10)
        times.append(1000 * (time.perf_counter() - t))
        hits.append(float(np.sum(vectors[found] @ q >= kth - 1e-6)) / 10)
    rss_query = rss_mib() - rss0
    times.sort()
    started = time.perf_counter()
    candidate.add(extra, len(vectors))
    add_s = time.perf_counter() - started
    return {
        "name": candidate.name, "build_s": build_s, "recall@10": statistics.fmean(hits),
        "p50_ms": statistics.median(times), "p99_ms": times[int(0.99 * (len(times) - 1))],
        "size_mb": os.path.getsize(path) / 1e6, "open_s": open_s, "mmap": candidate.mmap,
        "rss_open_mib": rss_open, "rss_after_queries_mib": rss_query, "add_1k_s": add_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--passages", type=int, default=20000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--only", default="", help="Comma-separated name prefixes to run.")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    vectors, queries = workload(args.passages, args.queries)
    extra, vectors = vectors[-1000:], vectors[:-1000]
    truth = exact_kth(vectors, queries, 10)
    exact_times = []
    for q in queries:
        t = time.perf_counter()
        scores = vectors @ q
        np.argpartition(-scores, 10)[:10]
        exact_times.append(1000 * (time.perf_counter() - t))
    candidates = [
        USearch("i8", 64), USearch("i8", 128), USearch("f16", 64), Faiss("sq8", 40), Faiss("flat", 40),
        Hnswlib(), FaissIVF("flat", 32), FaissIVF("sq8", 32), FaissIVF("sq8", 64),
    ]
    if args.only:
        wanted = tuple(args.only.split(","))
        candidates = [c for c in candidates if c.name.startswith(wanted)]
    rows = []
    with tempfile.TemporaryDirectory(prefix="gear-ann-") as tmp:
        for candidate in candidates:
            rows.append(measure(candidate, vectors, extra, queries, truth, Path(tmp)))
            print(json.dumps(rows[-1]), file=sys.stderr)
    print(f"{len(vectors):,} vectors of dimension {vectors.shape[1]} ({vectors.nbytes / 1e6:.0f} MB "
          f"float32); exact search p50 {statistics.median(exact_times):.1f} ms; {THREADS} threads")
    print("| index | build s | recall@10 | p50 / p99 ms | size MB | open s (mmap) | RSS open / after queries MiB | add 1k s |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['name']} | {r['build_s']:.1f} | {r['recall@10']:.3f} | {r['p50_ms']:.2f} / "
              f"{r['p99_ms']:.2f} | {r['size_mb']:.0f} | {r['open_s']:.2f} ({'yes' if r['mmap'] else 'no'}) | "
              f"{r['rss_open_mib']:.0f} / {r['rss_after_queries_mib']:.0f} | {r['add_1k_s']:.2f} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
