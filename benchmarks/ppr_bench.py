"""PPR (HippoRAG 2) on a built index: graph build cost, Recall@k and ms/query.

Usage (the MuSiQue slice of ../shared, indexed with all-MiniLM-L6-v2)::

    python benchmarks/ppr_bench.py --index /tmp/mq \\
        --questions ../shared/data/musique_dev/questions.json [--rebuild]

The graph is cached in ``<index>/ppr-graph.npz`` (as :class:`PPRRetriever` does);
``--rebuild`` ignores the cache and measures a build from scratch, phrase embedding
included. Recall@k is the share of a question's supporting paragraphs in the top k,
averaged over questions; gold ids are ``passage_id(title, paragraph_text)``.
"""

from __future__ import annotations

import argparse
import resource
import time
import tracemalloc
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from gear_agent.config import GearSettings
from gear_agent.embedding.base import Embedder
from gear_agent.embedding.sentence_transformer import SentenceTransformerEmbedder
from gear_agent.evaluation.dataset import load_questions
from gear_agent.evaluation.metrics import recall_at_k
from gear_agent.expansion.ppr import PPRRetriever
from gear_agent.expansion.ppr_graph import PPRGraph, load_or_build
from gear_agent.retrieval.base import Retriever
from gear_agent.retrieval.search import BaseRetriever, QueryEncoder
from gear_agent.store.embedded import EmbeddedStore

REFERENCE = {"ppr (reference)": (63.9, 78.9, 84.6), "dense (reference)": (65.7, 73.2, 78.8)}
"""Figures of an independent implementation on the same 51 questions (see ../shared/README.md)."""


class TimedEmbedder(Embedder):
    """Passes calls to an embedder and adds up the seconds and texts they took."""

    def __init__(self, inner: Embedder) -> None:
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


def rss_bytes() -> int:
    """Resident memory now (Linux /proc), else the peak from getrusage."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def build_graph(
    store: EmbeddedStore, embedder: Embedder, threshold: float, path: Path, rebuild: bool
) -> PPRGraph:
    timed = TimedEmbedder(embedder)
    rss_before = rss_bytes()
    tracemalloc.start()
    start = time.perf_counter()
    if rebuild:
        graph = PPRGraph.build(store, timed, threshold)
        graph.save(path)
    else:
        graph = load_or_build(store, timed, threshold, path)
    seconds = time.perf_counter() - start
    retained, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss_after = rss_bytes()
    kinds = graph.edge_kinds()
    relation = sum(1 for row in kinds if row[2] > 0)
    synonym = sum(1 for row in kinds if row[3] > 0)
    contains = sum(1 for row in kinds if row[4])
    how = "built" if rebuild else ("loaded/updated" if timed.texts == 0 else "built/updated")
    print(f"graph {how} in {seconds:.1f} s ({timed.seconds:.1f} s embedding {timed.texts} phrases)")
    print(
        f"nodes {graph.graph.vcount()} ({graph.n_phrases} phrases, {graph.n_passages} passages); "
        f"edges {graph.graph.ecount()} ({relation} relation, {synonym} synonym, {contains} contains; "
        "a pair may be relation and synonym)"
    )
    print(
        f"memory: graph ~{graph.nbytes() / 2**20:.1f} MiB (phrase vectors + igraph arrays); "
        f"Python allocations retained {retained / 2**20:.1f} MiB, peak {peak / 2**20:.1f} MiB "
        f"(tracemalloc; igraph's C arrays not included); RSS +{(rss_after - rss_before) / 2**20:.1f} "
        f"MiB (includes the embedding model's working memory when it ran); cache file "
        f"{path.stat().st_size / 2**20:.1f} MiB"
    )
    return graph


def measure(retriever: Retriever, questions: list, ks: Sequence[int]) -> tuple[list[float], float]:
    recalls = {k: [] for k in ks}
    start = time.perf_counter()
    for question in questions:
        ranked = [p.id for p in retriever.retrieve(question.question, max(ks))]
        for k in ks:
            recalls[k].append(recall_at_k(ranked, question.gold, k))
    ms = (time.perf_counter() - start) * 1000 / len(questions)
    return [100 * float(np.mean(recalls[k])) for k in ks], ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, default=Path("/tmp/mq"))
    parser.add_argument(
        "--questions",
        type=Path,
        default=Path(__file__).resolve().parents[2] / "shared/data/musique_dev/questions.json",
    )
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--graph", type=Path, help="graph cache (default <index>/ppr-graph.npz)")
    parser.add_argument("--rebuild", action="store_true", help="build the graph from scratch")
    args = parser.parse_args()

    settings = GearSettings()
    embedder = SentenceTransformerEmbedder(args.model)
    store = EmbeddedStore.open(args.index, embedder, create=False)
    questions = load_questions(args.questions)
    path = args.graph or args.index / "ppr-graph.npz"
    graph = build_graph(store, embedder, settings.ppr_synonym_threshold, path, args.rebuild)

    encode = QueryEncoder(embedder)
    for q in questions:  # encode once up front, so ms/query is retrieval only
        encode(q.question)
    ks = (5, 10, 15)
    rows = {
        "dense": measure(BaseRetriever(store, encode, "dense"), questions, ks),
        "ppr": measure(PPRRetriever(store, encode, settings, graph=graph), questions, ks),
    }
    print(
        f"\n{len(questions)} questions; damping {settings.ppr_damping}, seeds "
        f"{settings.ppr_seed_triples}, passage weight {settings.ppr_passage_weight}, "
        f"synonym threshold {settings.ppr_synonym_threshold}, no filter\n"
    )
    print(f"| {'retriever':<18} | R@5  | R@10 | R@15 | ms/query |")
    print(f"|{'-' * 20}|------|------|------|----------|")
    for name, (recall, ms) in rows.items():
        print(
            f"| {name:<18} | {recall[0]:4.1f} | {recall[1]:4.1f} | {recall[2]:4.1f} | {ms:8.1f} |"
        )
    for name, recall in REFERENCE.items():
        print(f"| {name:<18} | {recall[0]:4.1f} | {recall[1]:4.1f} | {recall[2]:4.1f} | {'':>8} |")


if __name__ == "__main__":
    main()
