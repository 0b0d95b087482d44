"""Quality that transfers: a candidate change to ``ppr`` reported with two-fold
cross-validation on each dev set, so a change that helps only the questions it was tuned
on shows as such.

Each dev set's questions are split in two halves (even and odd positions). For a
candidate (one knob and the values to try; the first value is today's default) every
value runs over every question once (LLM-free, no LLM at all); then, per fold, the value
with the best mean of R@2, R@5 and R@15 on one half is chosen and reported on the other
half beside the default, and the reverse. A candidate is kept only if both folds gain on
both datasets::

    python benchmarks/crossval.py                        # every candidate, ~10 min on 2 cores
    python benchmarks/crossval.py --candidates names     # one of them
    python benchmarks/crossval.py --candidates mpnet --dataset HotpotQA   # one dataset

Candidates: ``names`` (``GEAR_PPR_QUERY_ENTITIES``, the restart mass of the phrases the
query names), ``seeds`` (``GEAR_PPR_SEED_TRIPLES``, the query's nearest triples that seed
the walk), ``rerank5`` (PPR's top 5 re-ordered by ``(1 - a) * PPR score / the top
score + a * the query's cosine with the passage``; measured here as a wrapper, not a
setting, until it earns one), ``passage_weight`` (``GEAR_PPR_PASSAGE_WEIGHT``, HippoRAG 2's
restart mass of the passage nodes) and ``mpnet`` (``GEAR_EMBEDDING_MODEL``: the index
built with all-mpnet-base-v2 instead of all-MiniLM-L6-v2; both indexes are the ones
``benchmarks/quality.py --embedding-model NAME`` builds, built here when missing, which
takes long for mpnet). With ``--dataset`` only one dev set runs: a candidate can be
dropped there (a fold that does not gain) but not kept.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
KS = (2, 5, 10, 15)
OBJECTIVE = (2, 5, 15)
"""The cut-offs whose mean recall chooses a value on the tuning half."""


@dataclass(frozen=True)
class Candidate:
    name: str
    knob: str
    values: tuple[float | str, ...]  # the first is today's default


CANDIDATES = {
    "names": Candidate("names", "ppr_query_entities", (0.25, 0.1, 0.5)),
    "seeds": Candidate("seeds", "ppr_seed_triples", (5, 4, 7)),
    "rerank5": Candidate("rerank5", "rerank5", (0.0, 0.25, 0.5)),
    "passage_weight": Candidate("passage_weight", "ppr_passage_weight", (0.05, 0.03, 0.1)),
    "mpnet": Candidate("mpnet", "embedding_model", ("all-MiniLM-L6-v2", "all-mpnet-base-v2")),
}
MODEL_KNOB = "embedding_model"
"""A knob that names another index (its vectors), not a setting of the same one."""


_PPR: dict[tuple[int, str], list[Any]] = {}


def _reranked(runtime: Any, retriever: Any, weight: float) -> Callable[[str], list[str]]:
    """PPR's ranking with its top 5 re-ordered by PPR score blended with the query's cosine."""

    def rank(question: str) -> list[str]:
        key = (id(runtime), question)  # one PPR run per question for every weight
        if key not in _PPR:
            _PPR[key] = retriever.retrieve(question, 15)
        ranked = _PPR[key]
        if weight == 0 or not ranked:
            return [p.id for p in ranked]
        top, rest = ranked[:5], ranked[5:]
        hits = runtime.store.passages.vector_search(runtime.encode(question), 200)
        cosine = {h.id: h.score for h in hits}
        floor = min(cosine.values(), default=0.0)
        best = max(p.score for p in top) or 1.0
        top = sorted(top, key=lambda p: -((1 - weight) * p.score / best
                                          + weight * cosine.get(p.id, floor)))
        return [p.id for p in top + rest]

    return rank


def per_question(runtime: Any, candidate: Candidate, value: float | str,
                 questions: Sequence[Any]) -> list[tuple[float, ...]]:
    """Recall@k of every question under one value of the candidate (``runtime``: the index
    of that value's embedding model for :data:`MODEL_KNOB`)."""
    from gear_agent.evaluation.metrics import recall_at_k
    from gear_agent.registry import make_retriever

    if candidate.knob == MODEL_KNOB:
        ppr = make_retriever("ppr", runtime)
        rank = lambda q: [p.id for p in ppr.retrieve(q, 15)]  # noqa: E731
    elif candidate.knob == "rerank5":
        rank = _reranked(runtime, make_retriever("ppr", runtime), value)
    else:
        changed = runtime.under(runtime.settings.model_copy(update={candidate.knob: value}))
        ppr = make_retriever("ppr", changed)
        rank = lambda q: [p.id for p in ppr.retrieve(q, 15)]  # noqa: E731
    rows = []
    for question in questions:
        ids = rank(question.question)
        rows.append(tuple(recall_at_k(ids, question.gold, k) for k in KS))
    return rows


def _mean(rows: Sequence[tuple[float, ...]]) -> tuple[float, ...]:
    n = max(len(rows), 1)
    return tuple(100 * sum(r[i] for r in rows) / n for i in range(len(KS)))


def _score(rows: Sequence[tuple[float, ...]]) -> float:
    means = dict(zip(KS, _mean(rows)))
    return sum(means[k] for k in OBJECTIVE) / len(OBJECTIVE)


def folds(results: dict[Any, list[tuple[float, ...]]], default: float | str
          ) -> list[dict[str, Any]]:
    """Tune on one half, report on the other, both ways."""
    halves = {"even": lambda i: i % 2 == 0, "odd": lambda i: i % 2 == 1}
    out = []
    for tune, report in (("even", "odd"), ("odd", "even")):
        pick = lambda rows, half: [r for i, r in enumerate(rows) if halves[half](i)]  # noqa: E731
        chosen = max(results, key=lambda v: (_score(pick(results[v], tune)), v == default))
        out.append({"tuned on": tune, "chosen": chosen,
                    "default": _mean(pick(results[default], report)),
                    "candidate": _mean(pick(results[chosen], report)),
                    "gain": _score(pick(results[chosen], report))
                    - _score(pick(results[default], report))})
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--candidates", default=",".join(CANDIDATES),
                        help=f"Comma-separated, of: {', '.join(CANDIDATES)}.")
    parser.add_argument("--limit", type=int, help="Only the first N questions of each set.")
    parser.add_argument("--dataset", choices=["MuSiQue", "HotpotQA"],
                        help="Only this dataset (default: both; one cannot keep a change).")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.candidates.split(",")) - set(CANDIDATES))
    if unknown:
        raise SystemExit(f"unknown candidate {', '.join(unknown)}: choose from "
                         f"{', '.join(CANDIDATES)}")
    from gear_agent.cli.common import load_settings
    from gear_agent.cli.progress import quiet_third_party

    quiet_third_party()
    from gear_agent.evaluation.dataset import load_questions
    from gear_agent.evaluation.replay import BENCHMARKS, open_benchmark

    lines = ["| candidate | dataset | tuned on | chosen | default R@2/5/10/15 (other half) "
             "| chosen R@2/5/10/15 (other half) | gain (mean R@2,5,15) |",
             "|---|---|---|---|---|---|---|"]
    verdicts = []
    benchmarks = [b for b in BENCHMARKS if args.dataset in (None, b.name)]
    runtimes: dict[tuple[str, str | None], Any] = {}

    def runtime(benchmark: Any, model: str | None = None) -> Any:
        """The dataset's index (under ``model``; None: the default), opened once."""
        if (benchmark.name, model) not in runtimes:
            runtimes[benchmark.name, model] = open_benchmark(
                benchmark, DATA, load_settings(None, embedding_model=model))
        return runtimes[benchmark.name, model]

    for name in args.candidates.split(","):
        candidate = CANDIDATES[name]
        gains = []
        for benchmark in benchmarks:
            questions = load_questions(benchmark.path(DATA, "questions.json"))[: args.limit]
            results = {}
            for value in candidate.values:
                index = (runtime(benchmark, str(value)) if candidate.knob == MODEL_KNOB
                         else runtime(benchmark))
                results[value] = per_question(index, candidate, value, questions)
                print(f"  {name} {benchmark.name} {value}: {_mean(results[value])}",
                      file=sys.stderr, flush=True)
            for fold in folds(results, candidate.values[0]):
                gains.append(fold["gain"])
                cells = [" / ".join(f"{x:.1f}" for x in fold[key]) for key in ("default", "candidate")]
                chosen = fold["chosen"]
                chosen = f"{chosen:g}" if isinstance(chosen, float | int) else chosen
                lines.append(f"| {name} ({candidate.knob}) | {benchmark.name} | {fold['tuned on']} "
                             f"| {chosen} | {cells[0]} | {cells[1]} | {fold['gain']:+.1f} |")
        every = len(benchmarks) == len(BENCHMARKS)
        gained = all(g > 0 for g in gains)  # a fold that does not gain drops it either way
        verdict = ("kept" if every and gained else "dropped" if not gained
                   else "not decided: one dataset only")
        verdicts.append(f"{name}: {verdict} (folds' gains "
                        + ", ".join(f"{g:+.1f}" for g in gains) + ")")
    print("\n".join(lines) + "\n\n" + "\n".join(verdicts))
    command = "python benchmarks/crossval.py" + (f" --dataset {args.dataset}" if args.dataset else "")
    print(f"\n`{command}`; halves: even and odd positions of each questions file")


if __name__ == "__main__":
    main()
