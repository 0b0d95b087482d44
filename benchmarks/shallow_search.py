"""The lowest cosine found by the ANN's shallow beam, per beam width, on an index
``benchmarks/scale.py`` built.

PPR (HippoRAG 2) min-max normalises the query's cosines with triples and passages; the
lowest of each comes from the negated query's nearest row (``Collection.lowest_similarity``),
which the embedded store searches with its parts' *shallow* beam
(``AnnPolicy.shallow_expansion`` / ``shallow_candidates``). Per setting and collection
this prints how far above the exact lowest cosine the answer is (mean and max), how often
it is the exact one, and the median time of one call. With ``--ppr`` it also prints the
median thread-CPU ms of a ``ppr`` query under each setting, and how many of its top-15
lists equal those of the first setting. Settings are ``expansion/candidates``; a full
search (what the lowest came from before the shallow beam) uses 640 (passages) or 512
(triples) with 200 candidates.

    python benchmarks/scale.py --sizes 150000 --path openie --work /tmp/scale --retrievers ppr
    python benchmarks/shallow_search.py --index /tmp/scale/index-150000 \\
        --queries /tmp/scale/queries-150000.json --ppr

Quality cannot be measured on the synthetic corpus, and real question sets are too small
for the ANN (50,000 rows). With ``--questions``, ``--index`` is an index ``gear eval``
built (its ``--index``, real embeddings): a copy of it gets ANN parts over collections of
``--ann-min-rows`` rows or more, and the recall of ``ppr`` and ``hybrid+naive_ge+ppr`` is
printed exact and with each setting:

    gear eval --questions Q --corpus C --openie O --tokenizer word --retrievers ppr --index /tmp/ix
    python benchmarks/shallow_search.py --index /tmp/ix --questions Q
"""

from __future__ import annotations

import argparse
import gc
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from scale import read_into_page_cache, settings  # noqa: E402

from gear_agent.embedding import make_embedder  # noqa: E402
from gear_agent.open_index import OpenIndex  # noqa: E402
from gear_agent.registry import make_retriever  # noqa: E402
from gear_agent.retrieval.search import QueryEncoder  # noqa: E402
from gear_agent.store.ann import AnnPolicy  # noqa: E402
from gear_agent.store.embedded.store import EmbeddedStore  # noqa: E402

COLLECTIONS = ("passage", "triple")


def open_with(index: Path, embedder: Any, setting: str, **opened: Any) -> EmbeddedStore:
    """The index opened with the shallow beam ``setting`` (``expansion/candidates``);
    ``opened``: more ``AnnPolicy`` fields (``min_rows``, ``tail_max``) and ``tokenizer``."""
    expansion, candidates = (int(x) for x in setting.split("/"))
    tokenizer = opened.pop("tokenizer", "standard")
    policy = AnnPolicy(shallow_expansion=expansion, shallow_candidates=candidates, **opened)
    return EmbeddedStore.open(index, embedder, create=False, tokenizer=tokenizer, ann=policy)


def lowest_rows(store: EmbeddedStore, vectors: np.ndarray, exact: dict[str, np.ndarray], setting: str) -> None:
    for collection in COLLECTIONS:
        for q in vectors[:5]:
            store.collection(collection).lowest_similarity(q)
        found, times = [], []
        for q in vectors:
            started = time.perf_counter()
            found.append(store.collection(collection).lowest_similarity(q))
            times.append(time.perf_counter() - started)
        gap = np.asarray(found, dtype=np.float64) - exact[collection]
        print(f"| {setting} | {collection} | {gap.mean():.4f} | {gap.max():.4f} | "
              f"{np.mean(np.abs(gap) < 1e-5):.2f} | {statistics.median(times) * 1000:.2f} |", flush=True)


def ppr_row(store: EmbeddedStore, s: Any, embedder: Any, queries: list[str]) -> tuple[float, list[list[str]]]:
    retriever = make_retriever("ppr", OpenIndex(s, embedder, store, QueryEncoder(embedder)))
    for query in queries:
        retriever.retrieve(query, 15)
    ranked, times = [], []
    for _ in range(2):
        ranked = []
        for query in queries:
            started = time.thread_time()
            ranked.append([p.id for p in retriever.retrieve(query, 15)])
            times.append(time.thread_time() - started)
    return statistics.median(times) * 1000, ranked


def recall_rows(index: Path, questions_file: Path, chosen: list[str], min_rows: int) -> None:
    """Recall@2/5/10/15 of the PPR rows on a copy of ``index``: exact, then with ANN parts
    (collections of ``min_rows`` or more) searched with each shallow setting."""
    from gear_agent.config import GearSettings
    from gear_agent.evaluation.dataset import load_questions
    from gear_agent.evaluation.runner import evaluate

    questions = load_questions(questions_file)
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "index"
        shutil.copytree(index, copy)
        s = GearSettings(index_dir=copy, bm25_tokenizer="word")
        embedder = make_embedder(s)
        print("| ANN | expansion / candidates | retriever | R@2 | R@5 | R@10 | R@15 |")
        print("|---|---|---|---|---|---|---|")
        for setting in ["exact", *chosen]:
            if setting == "exact":
                store = EmbeddedStore.open(copy, embedder, create=False, tokenizer="word")
            else:
                store = open_with(copy, embedder, setting, tokenizer="word", min_rows=min_rows, tail_max=64)
                store.maintain()
            parts = [f"{store.view(c).ann.covered:,} {c}s" for c in COLLECTIONS
                     if store.view(c).ann.covered and setting != "exact"]
            runtime = OpenIndex(s, embedder, store, QueryEncoder(embedder))
            for name in ("ppr", "hybrid+naive_ge+ppr"):
                row = evaluate(make_retriever(name, runtime), questions)
                recall = " | ".join(f"{100 * row.recall[k]:.1f}" for k in (2, 5, 10, 15))
                print(f"| {', '.join(parts) or 'none'} | {setting} | {name} | {recall} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index", type=Path, required=True, help="An embedded index scale.py built.")
    parser.add_argument("--queries", type=Path, help="scale.py's queries-N.json.")
    parser.add_argument("--questions", type=Path, help="Questions (HippoRAG format): the recall mode.")
    parser.add_argument("--ann-min-rows", type=int, default=500, help="ANN parts from this size (recall mode).")
    parser.add_argument("--settings", default="128/20,64/10,256/50,640/200",
                        help="expansion/candidates pairs, comma-separated (the first is compared with the rest)")
    parser.add_argument("--embedder", default="hashing-384")
    parser.add_argument("--count", type=int, default=100, help="Queries used.")
    parser.add_argument("--ppr", action="store_true", help="Also time ppr and compare its lists.")
    args = parser.parse_args()
    chosen = args.settings.split(",")
    if args.questions:
        recall_rows(args.index, args.questions, chosen, args.ann_min_rows)
        return
    if not args.queries:
        parser.error("--queries (or --questions) is required")

    s = settings(args.index, args.embedder)
    embedder = make_embedder(s)
    queries = json.loads(args.queries.read_text(encoding="utf-8"))[: args.count]
    encode = QueryEncoder(embedder)
    vectors = np.stack([encode(q) for q in queries]).astype(np.float32)
    read_into_page_cache(args.index)
    reference = open_with(args.index, embedder, chosen[0])
    exact = {c: np.asarray([-reference.exact_vector_search(c, -q, 1)[0].score for q in vectors])
             for c in COLLECTIONS}
    print(f"{len(queries)} queries; {reference.passages.count():,} passages, {reference.triples.count():,} triples\n")
    print("| expansion / candidates | collection | mean above exact | max above exact | exact share | p50 ms |")
    print("|---|---|---|---|---|---|")
    for setting in chosen:
        lowest_rows(open_with(args.index, embedder, setting), vectors, exact, setting)
    if not args.ppr:
        return
    print("\n| expansion / candidates | ppr p50 CPU ms | top-15 lists equal to the first setting's | mean overlap |")
    print("|---|---|---|---|")
    first: list[list[str]] = []
    for setting in chosen:
        ms, ranked = ppr_row(open_with(args.index, embedder, setting), s, embedder, queries)
        first = first or ranked
        same = sum(a == b for a, b in zip(ranked, first))
        overlap = statistics.fmean(len(set(a) & set(b)) / max(len(b), 1) for a, b in zip(ranked, first))
        print(f"| {setting} | {ms:.1f} | {same} of {len(ranked)} | {overlap:.3f} |", flush=True)
        gc.collect()


if __name__ == "__main__":
    main()
