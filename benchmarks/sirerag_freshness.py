"""SiReRAG's pool after a write: placing the new passages against rebuilding the trees.

For each base size, a full pool (``build_full``) is built over the first N passages of the
corpus with the extractive stand-in LLM of ``benchmarks/sirerag_structure.py`` (so the
clustering, the levels and the number of LLM calls are real; the words are not). Then
``--added`` further passages are indexed and the pool is brought up to date two ways:

* **place** (``gear index``'s write path, :func:`gear_agent.sirerag.freshness.update_pool`):
  each new passage joins its entities' aggregates and the nearest level-1 similarity
  summary, which is marked for refresh; no LLM call;
* **rebuild** (``gear sirerag build --mode full``): propositions for the new passages, the
  aggregates again, both trees clustered again; every cluster whose members changed is
  summarised again (LLM calls, counted).

Finally ``--added`` passages are deleted and the pool brought up to date (placements
dropped, summaries that held them marked). Seconds exclude the LLM's own time (the
stand-in answers at once); a real model adds its latency per call, so the calls column is
the cost that matters for a rebuild.

    OMP_NUM_THREADS=1 python benchmarks/sirerag_freshness.py \\
        --corpus ../shared/data/musique_dev/corpus.json --sizes 200,600 --added 10
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from sirerag_structure import StandInChat, table  # noqa: E402


def calls(llm) -> tuple[int, int]:  # noqa: ANN001 - an LLMClient
    usage = llm.usage.as_dict()["by_node"]
    return sum(u["calls"] for u in usage.values()), sum(u["input"] for u in usage.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--sizes", default="200,600", help="base passages, comma-separated")
    parser.add_argument("--added", type=int, default=10, help="passages added (then deleted) after the build")
    parser.add_argument("--embedding-model", default="hashing-384")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    from gear_agent.config import settings_from
    from gear_agent.embedding import make_embedder
    from gear_agent.ingest.corpus import read_corpus
    from gear_agent.llm.client import LLMClient
    from gear_agent.sirerag import SiReRAGSettings
    from gear_agent.sirerag.build import build_full
    from gear_agent.sirerag.freshness import update_pool
    from gear_agent.store.embedded.store import EmbeddedStore

    gear = settings_from(embedding_model=args.embedding_model)
    embedder = make_embedder(gear)
    corpus = read_corpus(args.corpus, gear.chunk_words, gear.chunk_overlap_words)
    settings = SiReRAGSettings(sirerag_seed=args.seed)
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        base, new = corpus[:size], corpus[size : size + args.added]
        folder = Path(tempfile.mkdtemp(prefix="sirerag-fresh-"))
        try:
            store = EmbeddedStore.open(folder / "ix", embedder)
            store.passages.add(base)
            started = time.perf_counter()
            first = LLMClient(StandInChat())
            build = build_full(store, first, settings)
            built_s = time.perf_counter() - started
            summaries = build.clusters_summarised
            rows.append((f"{size:,}", "build", f"{built_s:.1f}", *(f"{x:,}" for x in calls(first)),
                         f"{summaries:,} summarised"))
            store.passages.add(new)
            started = time.perf_counter()
            placed = update_pool(store, settings)
            place_s = time.perf_counter() - started
            assert placed is not None
            rows.append((f"{size:,}", f"place {len(new)}", f"{place_s:.2f}", "0", "0",
                         f"{placed.placed} placed, {placed.refresh} nodes marked"))
            started = time.perf_counter()
            again = LLMClient(StandInChat())
            rebuilt = build_full(store, again, settings)
            rebuild_s = time.perf_counter() - started
            rows.append((f"{size:,}", f"rebuild +{len(new)}", f"{rebuild_s:.1f}", *(f"{x:,}" for x in calls(again)),
                         f"{rebuilt.clusters_summarised:,} summarised, {rebuilt.clusters_reused:,} reused"))
            store.passages.remove([p.id for p in new])
            started = time.perf_counter()
            dropped = update_pool(store, settings)
            drop_s = time.perf_counter() - started
            assert dropped is not None
            rows.append((f"{size:,}", f"delete {len(new)}", f"{drop_s:.2f}", "0", "0",
                         f"{dropped.removed} placements/summaries touched, {dropped.refresh} marked"))
            store.close()
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    print(f"embedder {args.embedding_model}; stand-in LLM; seed {args.seed}")
    print(table(["passages", "update", "seconds", "LLM calls", "prompt tokens", "what"], rows))


if __name__ == "__main__":
    main()
