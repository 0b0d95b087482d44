"""The beam search's sequence scorers on the MuSiQue dev questions: recall, cost, and where it goes.

For ``hybrid+naive_ge`` with each scorer (``sum``, ``concat``, ``rerank`` with several
``beam_rerank`` values, ``shortlist`` with several ``beam_shortlist`` values), in one process
over the index ``gear eval`` builds: Recall@5/10/15, median ms per question, texts encoded
per question, and the share of the time spent inside the encoder (the profile of the cost).
A variant is ``scorer[:n][@int8]``: ``n`` is ``beam_rerank`` or ``beam_shortlist``, ``@int8``
encodes the sequence texts with the int8 ONNX Runtime model (``beam_encoder=int8``; exported
and cached on first use, outside the timings)::

    OMP_NUM_THREADS=1 python benchmarks/beam_scorers.py --index .gear/eval/corpus-ba1b15c0b85f \
        --variants sum,rerank:3,rerank:5,concat,shortlist,shortlist@int8,rerank:5@int8,concat@int8
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np
from ppr_bench import TimedEmbedder  # benchmarks/ is on sys.path when this script runs

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "musique_dev"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, default=Path(".gear/eval/corpus-ba1b15c0b85f"))
    parser.add_argument("--questions", type=Path, default=SHARED / "questions.json")
    parser.add_argument("--variants", default="sum,rerank:3,rerank:5,concat,shortlist,shortlist@int8,concat@int8")
    parser.add_argument("--limit", type=int, default=None, help="only the first N questions")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch (and ONNX Runtime) threads; default: OMP_NUM_THREADS")
    args = parser.parse_args()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)

    from gear_agent.config import GearSettings
    from gear_agent.embedding import make_embedder, make_sequence_encoder
    from gear_agent.evaluation.dataset import load_questions
    from gear_agent.evaluation.metrics import recall_at_k
    from gear_agent.expansion.beam import TripleBeamSearch
    from gear_agent.expansion.naive_ge import NaiveGERetriever
    from gear_agent.open_index import OpenIndex
    from gear_agent.retrieval.search import QueryEncoder, SearchRetriever
    from gear_agent.store import open_store

    settings = GearSettings(index_dir=args.index, bm25_tokenizer="word")
    embedder = make_embedder(settings)
    store = open_store(settings, embedder, create=False)
    questions = load_questions(args.questions)[: args.limit]
    encode = QueryEncoder(embedder)
    for q in questions:
        encode(q.question)
    print(f"{len(questions)} questions, hybrid+naive_ge, {embedder.name}, "
          f"width {settings.beam_width}, length {settings.beam_length}, "
          f"threads {_threads()}\n")
    print("| scorer | R@5 | R@10 | R@15 | p50 ms/question | texts encoded/question | in the encoder |")
    print("|---|---|---|---|---|---|---|")
    for variant in args.variants.split(","):
        spec, _, encoder = variant.partition("@")
        scorer, _, n = spec.partition(":")
        s = settings.model_copy(update={
            "beam_scorer": scorer, "beam_encoder": encoder or "model",
            "beam_rerank": int(n or 3) if scorer == "rerank" else 3,
            "beam_shortlist": int(n) if n and scorer == "shortlist" else None,
        })
        sequence_encoder = make_sequence_encoder(s, embedder)
        if encoder == "int8" and sequence_encoder is embedder:  # the warning said why
            variant += " (float model)"
        timed = TimedEmbedder(sequence_encoder)
        runtime = OpenIndex(s, embedder, store, encode)
        base = SearchRetriever(store, encode, "hybrid", s.rrf_k)
        beam = TripleBeamSearch(store, timed, runtime.settings)  # type: ignore[arg-type]
        retriever = NaiveGERetriever(base, beam, encode, s.base_k, s.rrf_k)
        times, recalls = [], {k: [] for k in (5, 10, 15)}
        for q in questions:
            start = time.perf_counter()
            ranked = [p.id for p in retriever.retrieve(q.question, 15)]
            times.append(1000 * (time.perf_counter() - start))
            for k in recalls:
                recalls[k].append(recall_at_k(ranked, q.gold, k))
        total = sum(times) / 1000
        print(f"| {variant} | {100 * np.mean(recalls[5]):.1f} | {100 * np.mean(recalls[10]):.1f} "
              f"| {100 * np.mean(recalls[15]):.1f} | {statistics.median(times):.1f} "
              f"| {timed.texts / len(questions):.0f} | {100 * timed.seconds / total:.1f}% |")


def _threads() -> int:
    import torch

    return int(torch.get_num_threads())


if __name__ == "__main__":
    main()
