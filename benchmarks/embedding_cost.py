"""What re-embedding an index costs under another embedding model, from a sample.

Building a whole index under all-mpnet-base-v2 takes hours of a shared 2-core machine, so
its cost beside all-MiniLM-L6-v2's is measured here on a sample of the texts an index
embeds, each model over the same texts one after the other: passages (their stored
content), triples (their text) and phrases (the triples' subjects and objects, lowercased:
the PPR graph's nodes, about what its build embeds). It prints the CPU seconds of the
process (all threads; less sensitive to other work on the machine than wall time) per 100
passages and per 1,000 triples and phrases, and what the dataset's whole index would take
at that rate, with the vectors' size, and the ms (wall and CPU) to embed one question, the
questions embedded one at a time as a search does::

    python benchmarks/embedding_cost.py                      # both dev sets, both models
    python benchmarks/embedding_cost.py --dataset HotpotQA --models all-mpnet-base-v2

The projection leaves out what is not embedding (SQLite writes, BM25 postings, the PPR
graph's edges), which is the same for every model.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
MODELS = ("all-MiniLM-L6-v2", "all-mpnet-base-v2")


def _texts(benchmark) -> dict[str, list[str]]:
    """Every text the dataset's index embeds, by kind."""
    from gear_agent.config import GearSettings
    from gear_agent.ingest.corpus import read_corpus
    from gear_agent.ingest.openie import read_openie

    settings = GearSettings()
    passages = read_corpus(benchmark.path(DATA, "corpus.json"), settings.chunk_words,
                           settings.chunk_overlap_words, settings.record_max_words)
    triples = read_openie(benchmark.path(DATA, benchmark.openie), settings.ground_openie).triples
    phrases = dict.fromkeys(p.lower() for t in triples for p in (t.subject, t.object))
    questions = json.loads(benchmark.path(DATA, "questions.json").read_text(encoding="utf-8"))
    return {"passages": [p.content for p in passages], "triples": [t.text for t in triples],
            "phrases": list(phrases), "questions": [q["question"] for q in questions]}


def _cpu_seconds(embedder, texts: list[str]) -> float:
    started = time.process_time()
    embedder.embed(texts)
    return time.process_time() - started


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(MODELS), help="Comma-separated.")
    parser.add_argument("--dataset", choices=["MuSiQue", "HotpotQA"], help="Only this one.")
    parser.add_argument("--passages", type=int, default=32, help="Passages in the sample.")
    parser.add_argument("--short", type=int, default=256,
                        help="Triples and phrases in the sample (each).")
    parser.add_argument("--json", type=Path, help="Write the rows to this JSON file.")
    args = parser.parse_args(argv)
    from gear_agent.cli.common import load_settings
    from gear_agent.cli.progress import quiet_third_party

    quiet_third_party()
    from gear_agent.embedding import make_embedder
    from gear_agent.evaluation.replay import BENCHMARKS

    per = {"passages": 100, "triples": 1000, "phrases": 1000}
    sample = {"passages": args.passages, "triples": args.short, "phrases": args.short}
    lines = ["| dataset | model | dims | CPU s / 100 passages | CPU s / 1,000 triples | "
             "CPU s / 1,000 phrases | whole index: passages + triples + phrases | "
             "projected CPU min | vectors MiB | query ms, wall / CPU |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    rows = []
    for benchmark in BENCHMARKS:
        if args.dataset and benchmark.name != args.dataset:
            continue
        texts = _texts(benchmark)
        for model in args.models.split(","):
            embedder = make_embedder(load_settings(None, embedding_model=model))
            embedder.embed(["warm-up"])  # the model's first pass is not a text's cost
            rate = {kind: _cpu_seconds(embedder, texts[kind][: sample[kind]])
                    / max(1, min(sample[kind], len(texts[kind]))) for kind in per}
            counts = {kind: len(texts[kind]) for kind in per}
            cpu_min = sum(rate[k] * counts[k] for k in per) / 60
            mib = sum(counts.values()) * embedder.dimension * 4 / 2**20
            wall, cpu = time.perf_counter(), time.process_time()
            for question in texts["questions"]:
                embedder.embed([question])
            n = max(1, len(texts["questions"]))
            query = ((time.perf_counter() - wall) * 1000 / n, (time.process_time() - cpu) * 1000 / n)
            rows.append({"dataset": benchmark.name, "model": embedder.name,
                         "dimension": embedder.dimension, "cpu_s_per_text": rate,
                         "texts": counts, "projected_cpu_min": cpu_min, "vectors_mib": mib,
                         "query_ms_wall_cpu": query})
            lines.append(f"| {benchmark.name} | {embedder.name} | {embedder.dimension} | "
                         + " | ".join(f"{rate[k] * per[k]:.1f}" for k in per)
                         + f" | {counts['passages']:,} + {counts['triples']:,} + "
                         f"{counts['phrases']:,} | {cpu_min:.1f} | {mib:.1f} | "
                         f"{query[0]:.1f} / {query[1]:.1f} |")
    print("\n".join(lines))
    print(f"\n`python benchmarks/embedding_cost.py`; samples: the first {args.passages} "
          f"passages and {args.short} triples and phrases of each set")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
