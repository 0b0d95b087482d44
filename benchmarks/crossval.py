"""Quality that transfers: a candidate change to ``ppr`` reported with two-fold
cross-validation on each dev set, so a change that helps only the questions it was tuned
on shows as such.

Each dev set's questions are split in two halves (even and odd positions). For a
candidate (one knob and the values to try; the first value is today's default) every
value runs over every question once (LLM-free, no LLM at all); then, per fold, the value
with the best mean of R@2, R@5 and R@15 on one half is chosen and reported on the other
half beside the default, and the reverse. A candidate is kept only if both folds gain on
both datasets::

    python benchmarks/crossval.py                        # every candidate, ~25 min on 2 cores
    python benchmarks/crossval.py --candidates names     # one of them
    python benchmarks/crossval.py --candidates mpnet --dataset HotpotQA   # one dataset

Candidates (a setting, or a wrapper measured here until it earns a setting):

* ``names``: ``GEAR_PPR_QUERY_ENTITIES``, the restart mass of the phrases the query names;
* ``seeds``: ``GEAR_PPR_SEED_TRIPLES``, the query's nearest triples that seed the walk;
* ``rerank5`` (wrapper): PPR's top 5 re-ordered by ``(1 - a) * PPR score / the top score
  + a * the query's cosine with the passage``;
* ``passage_weight``: ``GEAR_PPR_PASSAGE_WEIGHT``, HippoRAG 2's restart mass of the
  passage nodes;
* ``mpnet``: ``GEAR_EMBEDDING_MODEL``, the index built with all-mpnet-base-v2 instead of
  all-MiniLM-L6-v2 (both indexes are the ones ``benchmarks/quality.py --embedding-model
  NAME`` builds, built here when missing, which takes long for mpnet);
* ``damping``: ``GEAR_PPR_DAMPING``;
* ``fuse`` (wrapper): weighted RRF of PPR's list and hybrid+naive_ge's, both 30 deep, the
  value the weight of hybrid+naive_ge's (``hybrid+naive_ge+ppr`` is weight 1, 15 deep);
* ``link_top_k`` (wrapper): only the N heaviest seed phrases keep their mass (HippoRAG 2's
  ``link_top_k``); 0: all;
* ``phrase_mean`` (wrapper): a phrase that several seed triples name gets the mean of their
  shares, as HippoRAG 2's code does, instead of the largest;
* ``synonyms``: ``GEAR_PPR_SYNONYM_THRESHOLD``; each other threshold's graph is built in
  memory from the saved graph's phrase vectors, the saved graph left as it is;
* ``name_links`` (wrapper): each capitalised span of the query that names no phrase node is
  linked to its nearest phrase node when their cosine reaches the value (HippoRAG 1's
  entity linking, the lexical spans as the entities); 0: off;
* ``titles``: ``GEAR_PPR_TITLE_WEIGHT``, chosen on all of dev before this check existed:
  whether that choice transfers;
* ``feedback`` (wrapper): a second walk, its seeds the first walk's plus the two triples of
  the first walk's top passage nearest the query at the value times their normalised score
  (pseudo-relevance feedback: a first hop's phrases seed the second); 0: the second walk
  with the first one's seeds, ``ppr``'s own ranking.

With ``--dataset`` only one dev set runs: a candidate can be dropped there (a fold that
does not gain) but not kept.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gear_agent.embedding.base import Embedder

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
    "damping": Candidate("damping", "ppr_damping", (0.5, 0.4, 0.6, 0.7)),
    "fuse": Candidate("fuse", "fuse", (0.0, 0.25, 0.5, 1.0)),
    "link_top_k": Candidate("link_top_k", "link_top_k", (0, 5, 3, 8)),
    "phrase_mean": Candidate("phrase_mean", "phrase_mean", ("max", "mean")),
    "synonyms": Candidate("synonyms", "ppr_synonym_threshold", (0.8, 0.75, 0.85, 0.9)),
    "name_links": Candidate("name_links", "name_links", (0.0, 0.9, 0.85, 0.8)),
    "titles": Candidate("titles", "ppr_title_weight", (2.0, 0.0, 1.0, 4.0)),
    "feedback": Candidate("feedback", "feedback", (0.0, 0.5, 1.0)),
}
MODEL_KNOB = "embedding_model"
"""A knob that names another index (its vectors), not a setting of the same one."""


_PPR: dict[tuple[int, str], list[Any]] = {}
_DEEP: dict[tuple[int, str], tuple[list[str], list[str]]] = {}
"""PPR's and hybrid+naive_ge's lists per (index, question), for every weight of ``fuse``."""
FUSE_DEPTH = 30
"""How deep each list of ``fuse`` is read, so that a passage only the other list holds can
enter the top 15 (lists of 15 would only re-order PPR's own)."""


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


def _fused(runtime: Any, retriever: Any, other: Any, weight: float) -> Callable[[str], list[str]]:
    """Weighted RRF of PPR's list and hybrid+naive_ge's, both :data:`FUSE_DEPTH` deep:
    ``1 / (rrf_k + PPR's rank) + weight / (rrf_k + the other's rank)``; 0 is PPR alone."""
    from gear_agent.retrieval.fusion import rrf_constant

    k = rrf_constant(runtime.settings.rrf_k)

    def rank(question: str) -> list[str]:
        key = (id(runtime), question)
        if key not in _DEEP:
            _DEEP[key] = ([p.id for p in retriever.retrieve(question, FUSE_DEPTH)],
                          [p.id for p in other.retrieve(question, FUSE_DEPTH)])
        walked, others = _DEEP[key]
        score = {pid: 1 / (k + position) for position, pid in enumerate(walked, 1)}
        if weight:
            for position, pid in enumerate(others, 1):
                score[pid] = score.get(pid, 0.0) + weight / (k + position)
        return sorted(score, key=lambda pid: -score[pid])[:15]  # stable: PPR's order on ties

    return rank


def _top_phrases(limit: int) -> Callable[..., dict[int, float]]:
    """``seed_phrase_mass`` keeping only its ``limit`` heaviest phrases (HippoRAG 2's
    ``link_top_k`` in ``graph_search_with_fact_entities``); 0: every phrase (today)."""
    from gear_agent.expansion import ppr

    whole = ppr.seed_phrase_mass

    def capped(graph: Any, triples: Any, scores: Any) -> dict[int, float]:
        mass = whole(graph, triples, scores)
        if not limit or len(mass) <= limit:
            return mass
        return dict(sorted(mass.items(), key=lambda item: (-item[1], item[0]))[:limit])

    return capped


def _mean_phrases(graph: Any, triples: Any, scores: Any) -> dict[int, float]:
    """``seed_phrase_mass`` with a phrase named by several seed triples given the mean of
    their ``score / specificity`` instead of the largest (HippoRAG 2's code since its
    ``number_of_occurs``)."""
    specificity = graph.vertex_specificity()
    shares: dict[int, list[float]] = {}
    for triple, score in zip(triples, scores):
        for phrase in (triple.subject, triple.object):
            vertex = graph.phrase_vertex(phrase)
            if vertex is not None:
                shares.setdefault(vertex, []).append(float(score) / max(int(specificity[vertex]), 1))
    return {v: sum(s) / len(s) for v, s in shares.items() if sum(s) > 0}


class _MemoEmbedder(Embedder):
    """The index's embedder remembering every text it embedded, filled first with the
    phrase vectors of the index's saved graph, so graphs built under other synonym
    thresholds embed nothing again (the vectors are the same model's)."""

    def __init__(self, inner: Embedder, graph: Any) -> None:
        self.inner, self.name = inner, inner.name
        vectors, rows = graph.phrase_vectors(), graph.phrase_rows()
        self.known = {graph.vertex_name(int(v)): vectors[r] for r, v in enumerate(rows) if v >= 0}

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.known]
        if missing:
            self.known.update(zip(missing, self.inner.embed(missing)))
        return np.stack([self.known[t] for t in texts]) if texts else self.inner.embed(texts)

_MEMO: dict[int, _MemoEmbedder] = {}


def _threshold_ppr(runtime: Any, threshold: float) -> Any:
    """A ``ppr`` retriever whose graph is built in memory under another synonym threshold
    (the index's saved graph is left as it is)."""
    from gear_agent.embedding.base import QueryEncoder
    from gear_agent.expansion.ppr import PPRRetriever
    from gear_agent.parts import ppr_retriever

    saved = ppr_retriever(runtime)
    if threshold == saved.settings.ppr_synonym_threshold:
        return saved
    if id(runtime) not in _MEMO:
        _MEMO[id(runtime)] = _MemoEmbedder(runtime.embedder, saved.graph)
    settings = runtime.settings.model_copy(update={"ppr_synonym_threshold": threshold})
    return PPRRetriever(runtime.store, QueryEncoder(_MEMO[id(runtime)]), settings, graph_path=None)


def _linked_names(runtime: Any, threshold: float) -> Callable[..., dict[int, float]]:
    """``add_query_entities`` that also links each capitalised span of the query naming no
    phrase node (none of its runs does) to its nearest phrase node by cosine, when that
    cosine reaches ``threshold`` (HippoRAG 1's linking of named entities, with the lexical
    spans as the names); the node gets the same ``weight / specificity``."""
    from gear_agent.expansion import ppr
    from gear_agent.expansion._query_entities import capitalised_spans

    whole = ppr.add_query_entities
    word = re.compile(r"\w+")

    def add(graph: Any, query: str, phrases: dict[int, float], weight: float) -> dict[int, float]:
        merged = whole(graph, query, phrases, weight)
        matches = list(word.finditer(query))
        specificity = graph.vertex_specificity()
        for start, end in capitalised_spans([m.group() for m in matches]):
            runs = [query[matches[i].start():matches[j - 1].end()]
                    for i in range(start, end) for j in range(i + 1, end + 1)]
            if any(graph.phrase_vertex(run.lower()) is not None for run in runs):
                continue  # named exactly already (or in part)
            text = runs[end - start - 1]  # the whole span
            vertices, cosines = graph.nearest_phrases(runtime.encode(text), 1)
            if len(vertices) and cosines[0] >= threshold:
                vertex = int(vertices[0])
                merged = dict(merged)
                merged[vertex] = merged.get(vertex, 0.0) + weight / max(int(specificity[vertex]), 1)
        return merged

    return add


FEEDBACK_TRIPLES = 2
"""``feedback``: the top passage's triples nearest the query added to the seeds."""


def _feedback(runtime: Any, retriever: Any, weight: float) -> Callable[[str], list[str]]:
    """A second walk whose seeds are the first one's plus the :data:`FEEDBACK_TRIPLES`
    triples of the first walk's top passage nearest the query, each at ``weight`` times its
    score normalised as the seeds' are (the lowest triple cosine to the best seed's):
    pseudo-relevance feedback, so the phrases of a first hop seed the second. 0: the second
    walk with the first one's seeds, which must give ``ppr``'s own ranking."""
    from gear_agent.expansion.ppr import choose_seeds, ppr_expand
    from gear_agent.expansion.ppr_walk import walk_of

    s, store = runtime.settings, runtime.store

    def rank(question: str) -> list[str]:
        first = retriever.retrieve(question, 15)
        vector = runtime.encode(question)
        triples, scores = choose_seeds(store, question, vector, None, s.ppr_seed_triples, None)
        if not first or not triples:
            return [p.id for p in first]
        triples, scores = list(triples), list(scores)
        held = {t.id for t in triples}
        extra = [t for t in store.triples.of_passage(first[0].id) if t not in held]
        if weight and extra:
            cosines = store.triples.vectors(extra) @ vector
            high = float(np.max(store.triples.vectors(sorted(held)) @ vector))
            low = min(store.triples.lowest_similarity(vector), float(cosines.min()))
            for i in np.argsort(-cosines)[:FEEDBACK_TRIPLES]:
                triples += store.triples.get([extra[i]])
                scores.append(weight * max(float(cosines[i]) - low, 0.0) / max(high - low, 1e-9))
        title_weight, sharpness, entities = s.knobs(seeds_given=False)
        with retriever.lock:
            graph = retriever.graph
            ranked = ppr_expand(
                store, graph, question, vector, None, 15, damping=s.ppr_damping,
                passage_weight=s.ppr_passage_weight, method=s.ppr_method,
                tolerance=s.ppr_tolerance, dense_passages=s.ppr_dense_passages,
                seeds=(triples, scores), passage_sharpness=sharpness,
                query_entity_weight=entities, walk=walk_of(graph, store, title_weight))
        return [p.id for p in ranked]

    return rank


def per_question(runtime: Any, candidate: Candidate, value: float | str,
                 questions: Sequence[Any]) -> list[tuple[float, ...]]:
    """Recall@k of every question under one value of the candidate (``runtime``: the index
    of that value's embedding model for :data:`MODEL_KNOB`)."""
    from gear_agent.registry import make_retriever

    if candidate.knob == MODEL_KNOB:
        ppr = make_retriever("ppr", runtime)
        rank = lambda q: [p.id for p in ppr.retrieve(q, 15)]  # noqa: E731
    elif candidate.knob == "rerank5":
        rank = _reranked(runtime, make_retriever("ppr", runtime), value)
    elif candidate.knob == "feedback":
        rank = _feedback(runtime, make_retriever("ppr", runtime), float(value))
    elif candidate.knob == "fuse":
        rank = _fused(runtime, make_retriever("ppr", runtime),
                      make_retriever("hybrid+naive_ge", runtime), float(value))
    elif candidate.knob == "ppr_synonym_threshold":
        ppr = _threshold_ppr(runtime, float(value))
        rank = lambda q: [p.id for p in ppr.retrieve(q, 15)]  # noqa: E731
    elif candidate.knob == "phrase_mean":
        from unittest import mock

        ppr = make_retriever("ppr", runtime)
        if value == "max":
            return _recalls(lambda q: [p.id for p in ppr.retrieve(q, 15)], questions)
        with mock.patch("gear_agent.expansion.ppr.seed_phrase_mass", _mean_phrases):
            return _recalls(lambda q: [p.id for p in ppr.retrieve(q, 15)], questions)
    elif candidate.knob == "name_links":
        from unittest import mock

        ppr = make_retriever("ppr", runtime)
        if not value:
            return _recalls(lambda q: [p.id for p in ppr.retrieve(q, 15)], questions)
        with mock.patch("gear_agent.expansion.ppr.add_query_entities",
                        _linked_names(runtime, float(value))):
            return _recalls(lambda q: [p.id for p in ppr.retrieve(q, 15)], questions)
    elif candidate.knob == "link_top_k":
        from unittest import mock

        ppr = make_retriever("ppr", runtime)
        with mock.patch("gear_agent.expansion.ppr.seed_phrase_mass", _top_phrases(int(value))):
            return _recalls(lambda q: [p.id for p in ppr.retrieve(q, 15)], questions)
    else:
        changed = runtime.under(runtime.settings.model_copy(update={candidate.knob: value}))
        ppr = make_retriever("ppr", changed)
        rank = lambda q: [p.id for p in ppr.retrieve(q, 15)]  # noqa: E731
    return _recalls(rank, questions)


def _recalls(rank: Callable[[str], list[str]], questions: Sequence[Any]) -> list[tuple[float, ...]]:
    from gear_agent.evaluation.metrics import recall_at_k

    return [tuple(recall_at_k(rank(q.question), q.gold, k) for k in KS) for q in questions]


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
    command = f"python benchmarks/crossval.py --candidates {args.candidates}" + (
        f" --dataset {args.dataset}" if args.dataset else "")
    print(f"\n`{command}`; halves: even and odd positions of each questions file")


if __name__ == "__main__":
    main()
