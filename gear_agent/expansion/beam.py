"""Diverse triple beam search, GEAR's Algorithm 1 (Shen et al., section 3.3).

Starting from some triples, grow sequences of up to ``length`` triples along
the entity graph. At each step every beam proposes the ``neighbours`` triples
adjacent to its last triple that are most similar to the query, skipping
triples already in a beam; each candidate sequence is scored against the
query (:mod:`gear_agent.expansion.scorers`); within a beam the candidates are
sorted and the n-th (0-based) is multiplied by ``exp(-min(n, gamma) / gamma)``
so that one strong beam cannot fill every slot (the *diverse* part; off gives
plain beam search, the paper's Table 4 ablation); the best ``width`` over all
beams survive. The final beams are flattened breadth-first (every beam's first
triple, then every beam's second, ...), and the triples' passages, in that
order, form the expansion's ranked list.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gear_agent.config import BeamSettings
from gear_agent.embedding.base import Embedder
from gear_agent.expansion.scorers import (
    EncodingCache,
    best_of_step,
    best_per_beam,
    score_concat,
    score_sum,
    sequence_text,
)
from gear_agent.retrieval.base import RankedPassage
from gear_agent.store.base import Store


@dataclass(frozen=True)
class Beam:
    """A sequence of triple ids with its (possibly penalised) score."""

    triples: tuple[str, ...]
    score: float


def rank_penalty(n: int, gamma: float) -> float:
    """``exp(-min(n, gamma) / gamma)`` for the candidate of 0-based rank ``n`` in its beam."""
    return math.exp(-min(n, gamma) / gamma)


class TripleBeamSearch:
    """Algorithm 1 over a store's entity graph.

    Args:
        store: The index whose triples are searched.
        embedder: The encoder of sequence texts (``concat``, ``rerank``, ``shortlist``).
        settings: The ``beam_*`` section (a ``GearSettings`` is one).
        llm_in_loop: Whether an LLM is in the loop (SyncGE, the agent), which makes
            ``beam_scorer=auto`` the ``shortlist`` scorer; ``sum`` without one (NaiveGE).

    Example:
        >>> search = TripleBeamSearch(store, embedder, BeamSettings())  # doctest: +SKIP
        >>> beams = search.run(query_vector, start_triple_ids)  # doctest: +SKIP
    """

    def __init__(
        self, store: Store, embedder: Embedder, settings: BeamSettings, *, llm_in_loop: bool = False
    ) -> None:
        self.store, self.embedder, self.settings = store, embedder, settings
        self.scorer = settings.scorer_for(llm_in_loop)
        self._texts: dict[str, str] = {}
        self._encodings = EncodingCache(embedder)

    def _text(self, triple_ids: Sequence[str]) -> list[str]:
        missing = [t for t in triple_ids if t not in self._texts]
        for triple in self.store.triples.get(missing):
            self._texts[triple.id] = triple.text
        return [self._texts[t] for t in triple_ids]

    def _score(
        self, query: np.ndarray, prefix: tuple[str, ...], prefix_sum: np.ndarray | None,
        candidates: list[str], candidate_vectors: np.ndarray,
    ) -> np.ndarray:
        if self.scorer != "concat":  # rerank, shortlist re-score later, one call a step
            base = 0.0 if prefix_sum is None else prefix_sum
            return score_sum(query, candidate_vectors + base)
        prefix_texts = self._text(prefix)
        texts = [sequence_text([*prefix_texts, t]) for t in self._text(candidates)]
        return score_concat(query, texts, self.embedder)

    def _rerank(
        self, query: np.ndarray, grown_from: list[tuple[Beam, list[str], np.ndarray, np.ndarray]]
    ) -> list[tuple[Beam, list[str], np.ndarray, np.ndarray]]:
        """Keep the candidates the scorer re-scores (``rerank``: each beam's best ``rerank``
        by ``sum``; ``shortlist``: the step's best ``shortlist`` by penalised ``sum``), scored
        by ``concat``: the texts of the whole step in one encoder call (cached by text)."""
        settings = self.settings
        sums = [scores for _, _, _, scores in grown_from]
        if self.scorer == "shortlist":
            gamma = settings.gamma
            penalty = (lambda n: rank_penalty(n, gamma)) if settings.beam_diverse else (lambda n: 1.0)
            kept = best_of_step(sums, settings.shortlist_size, penalty)
        else:
            kept = best_per_beam(sums, settings.beam_rerank)
        chosen, texts = [], []
        for (beam, candidates, vectors, _), best in zip(grown_from, kept):
            if not candidates:  # a beam that cannot grow competes as it is
                chosen.append((beam, [], vectors))
                continue
            if not len(best):  # none of its sequences made the shortlist: they drop out
                continue
            prefix = self._text(beam.triples)
            picked = [candidates[i] for i in best]
            texts += [sequence_text([*prefix, t]) for t in self._text(picked)]
            chosen.append((beam, picked, vectors[best]))
        concat = self._encodings.encode(texts) @ query if texts else np.zeros(0)
        out, at = [], 0
        for beam, picked, vectors in chosen:
            out.append((beam, picked, vectors, concat[at : at + len(picked)]))
            at += len(picked)
        return out

    def run(self, query: np.ndarray, start: Sequence[str]) -> list[Beam]:
        """The final beams, best first, grown from the ``start`` triple ids."""
        start = [t for t in dict.fromkeys(start)]
        if not start:
            return []
        settings = self.settings
        vectors = self.store.triples.vectors(start)
        scores = self._score(query, (), None, start, vectors)
        order = np.lexsort((np.arange(len(start)), -scores))[: settings.beam_width]
        beams = [Beam((start[i],), float(scores[i])) for i in order]
        sums = {beam.triples: vectors[i] for beam, i in zip(beams, order)}
        gamma = settings.gamma
        for _ in range(settings.beam_length - 1):
            used = {t for beam in beams for t in beam.triples}
            pool: list[Beam] = []
            next_sums: dict[tuple[str, ...], np.ndarray] = {}
            grown_from: list[tuple[Beam, list[str], np.ndarray, np.ndarray]] = []
            proposed = self.store.triples.neighbours_many([b.triples[-1] for b in beams], query, settings.beam_neighbours)
            for beam, neighbours in zip(beams, proposed, strict=True):
                candidates = [t for t in neighbours if t not in used]
                if not candidates:  # a beam that cannot grow competes as it is
                    grown_from.append((beam, [], np.zeros((0, 0)), np.zeros(0)))
                    continue
                candidate_vectors = self.store.triples.vectors(candidates)
                cand_scores = self._score(
                    query, beam.triples, sums[beam.triples], candidates, candidate_vectors
                )
                grown_from.append((beam, candidates, candidate_vectors, cand_scores))
            if self.scorer in ("rerank", "shortlist"):
                grown_from = self._rerank(query, grown_from)
            for beam, candidates, candidate_vectors, cand_scores in grown_from:
                if not candidates:
                    pool.append(beam)
                    next_sums[beam.triples] = sums[beam.triples]
                    continue
                ranked = np.lexsort((np.arange(len(candidates)), -cand_scores))
                for n, i in enumerate(ranked):
                    penalty = rank_penalty(n, gamma) if settings.beam_diverse else 1.0
                    grown = (*beam.triples, candidates[i])
                    pool.append(Beam(grown, float(cand_scores[i]) * penalty))
                    next_sums[grown] = sums[beam.triples] + candidate_vectors[i]
            pool.sort(key=lambda b: -b.score)  # stable: earlier beams win ties
            beams = pool[: settings.beam_width]
            sums = {beam.triples: next_sums[beam.triples] for beam in beams}
        return beams


def flatten_breadth_first(beams: Sequence[Beam]) -> list[tuple[str, tuple[str, ...]]]:
    """Unique triples of the beams, position by position across beams, with the chain to each.

    Example:
        >>> flatten_breadth_first([Beam(("a", "b"), 1.0), Beam(("c", "b"), 0.9)])
        [('a', ('a',)), ('c', ('c',)), ('b', ('a', 'b'))]
    """
    seen: dict[str, tuple[str, ...]] = {}
    longest = max((len(b.triples) for b in beams), default=0)
    for position in range(longest):
        for beam in beams:
            if position < len(beam.triples) and beam.triples[position] not in seen:
                seen[beam.triples[position]] = beam.triples[: position + 1]
    return list(seen.items())


def beams_to_passages(store: Store, beams: Sequence[Beam]) -> list[RankedPassage]:
    """The passages of the flattened beams' triples, unique, in order, each with its chain.

    Scores are ``1 / rank`` (the list is only ever fused by rank).
    """
    flat = flatten_breadth_first(beams)
    passage_of = {t.id: t.passage_id for t in store.triples.get([tid for tid, _ in flat])}
    ranked: list[RankedPassage] = []
    seen: set[str] = set()
    for triple_id, chain in flat:
        pid = passage_of.get(triple_id)
        if pid is None or pid in seen:
            continue
        seen.add(pid)
        ranked.append(RankedPassage(pid, 1.0 / (len(ranked) + 1), chain))
    return ranked
