"""Personalized PageRank over the phrase-passage graph, the HippoRAG 2 way.

HippoRAG 2 (Gutiérrez et al., 2025, "From RAG to Memory", section 3.2) links the query
to its most similar triples ("query to triple"), optionally lets an LLM drop the
irrelevant ones ("recognition memory"), and seeds a PPR walk:

* each phrase node of a kept triple gets the triple's score divided by the phrase's
  specificity, the number of passages it occurs in (a phrase in three passages gets a
  third of what it would get in one); a phrase in several kept triples takes its best;
* every passage node gets its dense score times ``passage_weight`` (0.05).

Triple and passage scores are cosines min-max normalised over the whole collection,
as HippoRAG 2 does. The walk uses damping 0.5; passages are ranked by their node's
PPR probability. When no seed triple survives (none found, the filter rejected all,
or none of their phrases is in the graph), the ranking falls back to dense passage
retrieval, as HippoRAG 2 does.

Two ways to compute the walk (``method``, setting ``ppr_method``):

* ``local`` (default): Andersen-Chung-Lang push (:mod:`gear_agent.expansion._ppr_push`)
  from a sparse restart vector: the seed phrases plus the ``dense_passages`` passages
  nearest the query (found by the store's vector search, ANN at scale); min-max
  normalisation uses the lowest passage cosine, found by searching with the negated query.
  The passages beyond that list get an estimated uniform mass whose walk is computed once
  per graph (:func:`tail_mass`, :func:`_local`). Its per-query cost follows the seeds'
  neighbourhood and the tolerance, not the graph's size (docs/ppr.md has the figures).
* ``global``: every passage gets restart mass (a dense search over all passages) and the
  walk is a power iteration over the whole graph: HippoRAG 2's exact computation, kept to
  check the local one against (``benchmarks/ppr_bench.py`` counts the questions whose
  top 15 agree).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np
from scipy import sparse

from gear_agent.config import PPRSettings
from gear_agent.embedding.base import QueryEncoder
from gear_agent.expansion._ppr_push import push_personalized_pagerank
from gear_agent.expansion._query_entities import query_entity_vertices
from gear_agent.expansion.ppr_graph import GraphProgress, PPRGraph, cache_path, load_or_build
from gear_agent.expansion.ppr_walk import Walk, walk_of
from gear_agent.filters import Where
from gear_agent.retrieval.base import RankedPassage, Retriever, check_request
from gear_agent.retrieval.filtering import keep_top_passing
from gear_agent.store.base import Store
from gear_agent.store.multi_search import Search, search_all
from gear_agent.types import Hit, Triple

if TYPE_CHECKING:
    import igraph as ig

logger = logging.getLogger(__name__)

FilterFn = Callable[[str, list[Triple]], list[Triple]]
"""Recognition memory: given the query and candidate triples, the ones to keep."""

__all__ = [
    "FilterFn",
    "PPRRetriever",
    "add_query_entities",
    "dense_passage_weights",
    "passage_mass",
    "personalized_pagerank",
    "ppr_expand",
    "seed_phrase_mass",
    "seed_phrase_weights",
    "sparse_personalized_pagerank",
    "tail_mass",
]


def personalized_pagerank(graph: ig.Graph, reset: np.ndarray, damping: float = 0.5) -> np.ndarray:
    """Personalized PageRank of every vertex, by igraph's PRPACK solver with edge weights.

    Solves ``p = (1 - d) r + d M p`` where ``r`` is ``reset`` scaled to sum 1 and
    ``M[j, i] = w_ij / s_i`` (``s_i`` the weighted degree of ``i``); a vertex without
    edges hands its mass back according to ``r`` (igraph's convention), so ``p`` sums
    to 1. Edge weights are the ``weight`` attribute (1 when absent); the graph is
    walked as undirected.

    Args:
        graph: The graph (any igraph graph; :attr:`PPRGraph.graph` here).
        reset: Non-negative restart mass per vertex, not all zero; scaled to sum 1.
        damping: Probability ``d`` of following an edge rather than restarting.

    Returns:
        The PPR probability of each vertex, float64, summing to 1.

    Raises:
        ValueError: ``reset`` has the wrong length, a negative or non-finite entry, or
            sums to 0; or ``damping`` is outside (0, 1).

    Example:
        >>> import igraph as ig
        >>> g = ig.Graph(n=3, edges=[(0, 1), (1, 2)])
        >>> personalized_pagerank(g, np.array([1.0, 0.0, 0.0])).round(4).tolist()
        [0.5833, 0.3333, 0.0833]
    """
    reset = _checked_reset(reset, graph.vcount(), damping)
    weights = "weight" if "weight" in graph.es.attributes() else None
    scores = graph.personalized_pagerank(
        directed=False,
        damping=damping,
        reset=reset.tolist(),
        weights=weights,
        implementation="prpack",
    )
    return np.asarray(scores, dtype=np.float64)


def sparse_personalized_pagerank(
    transition: sparse.csr_array,
    dangling: np.ndarray,
    reset: np.ndarray,
    damping: float = 0.5,
    tol: float = 1e-10,
) -> np.ndarray:
    """The same PPR as :func:`personalized_pagerank`, by power iteration on a sparse matrix.

    Iterates ``p <- d M p + (d * mass of dangling vertices + 1 - d) r`` from ``p = r``
    until the L1 change is below ``tol``; the error shrinks by ``d`` per step, so with
    d = 0.5 about 35 steps reach 1e-10. Used at query time because the walk matrix is
    built once per graph (:meth:`PPRGraph.transition`), while igraph's PRPACK prepares
    the graph again on every call (about 30x slower here).

    Args:
        transition: Column-stochastic ``M`` (columns of dangling vertices all zero).
        dangling: True for vertices without edges.
        reset: Non-negative restart mass, not all zero; scaled to sum 1.
        damping: Probability of following an edge.
        tol: L1 change at which to stop.

    Example:
        >>> m = sparse.csr_array(np.array([[0, .5, 0], [1, 0, 1], [0, .5, 0]]))
        >>> sparse_personalized_pagerank(m, np.zeros(3, bool), np.array([1., 0, 0])).round(4).tolist()
        [0.5833, 0.3333, 0.0833]
    """
    r = _checked_reset(reset, transition.shape[0], damping)
    p = r.copy()
    steps = int(np.ceil(np.log(tol / 2) / np.log(damping))) + 1  # 2 d^n <= tol bounds the error
    for _ in range(max(steps, 1)):
        following = damping * (transition @ p)
        following += (damping * p[dangling].sum() + 1.0 - damping) * r
        change = np.abs(following - p).sum()
        p = following
        if change < tol:
            break
    return p


def _checked_reset(reset: np.ndarray, n: int, damping: float) -> np.ndarray:
    reset = np.asarray(reset, dtype=np.float64)
    if reset.shape != (n,):
        raise ValueError(f"reset has shape {reset.shape}; the graph has {n} vertices")
    if not np.all(np.isfinite(reset)) or np.any(reset < 0) or reset.sum() <= 0:
        raise ValueError("reset must be finite and non-negative with a positive sum")
    if not 0.0 < damping < 1.0:
        raise ValueError(f"damping must be in (0, 1), got {damping}")
    return reset / reset.sum()


def _min_max(hits: Sequence[Hit]) -> tuple[float, float]:
    """Lowest and highest score of a full (best-first) hit list; (0, 1) when empty."""
    if not hits:
        return 0.0, 1.0
    return hits[-1].score, hits[0].score


def _normalise(score: float, low: float, high: float) -> float:
    return 1.0 if high <= low else (score - low) / (high - low)


def seed_phrase_mass(
    graph: PPRGraph, triples: Sequence[Triple], triple_scores: Sequence[float]
) -> dict[int, float]:
    """Restart mass of the seed phrases by vertex: triple score / specificity (HippoRAG 2).

    Each subject and object of a seed triple that is a phrase node gets the triple's
    score divided by the number of passages the phrase occurs in; a phrase in several
    seed triples keeps its largest share. Phrases with no mass are left out.
    """
    mass: dict[int, float] = {}
    specificity = graph.vertex_specificity()
    for triple, score in zip(triples, triple_scores):
        for phrase in (triple.subject, triple.object):
            vertex = graph.phrase_vertex(phrase)
            if vertex is not None:
                share = float(score) / max(int(specificity[vertex]), 1)
                if share > mass.get(vertex, 0.0):
                    mass[vertex] = share
    return mass


def seed_phrase_weights(
    graph: PPRGraph, triples: Sequence[Triple], triple_scores: Sequence[float]
) -> np.ndarray:
    """:func:`seed_phrase_mass` as a dense vector over all vertices.

    Example:
        >>> seed_phrase_weights(graph, [triple], [1.0])  # doctest: +SKIP
    """
    weights = np.zeros(graph.n_vertices, dtype=np.float64)
    for vertex, share in seed_phrase_mass(graph, triples, triple_scores).items():
        weights[vertex] = share
    return weights


def add_query_entities(
    graph: PPRGraph, query: str, phrases: dict[int, float], weight: float
) -> dict[int, float]:
    """``phrases`` plus ``weight`` / specificity for each phrase node the query names
    (:func:`~gear_agent.expansion._query_entities.query_entity_vertices`); a new dict.

    The query's names seed the walk beside its nearest triples, weighted like them by
    node specificity: a name in one passage counts in full, one in 26 passages a 26th.
    """
    found = query_entity_vertices(query, graph.phrase_vertex)
    if not found:
        return phrases
    specificity = graph.vertex_specificity()
    merged = dict(phrases)
    for vertex in found:
        merged[vertex] = merged.get(vertex, 0.0) + weight / max(int(specificity[vertex]), 1)
    return merged


def passage_mass(
    graph: PPRGraph, passage_hits: Sequence[Hit], low: float, high: float,
    passage_weight: float = 0.05, sharpness: float = 1.0,
) -> dict[int, float]:
    """Restart mass of passages by vertex: dense score min-max normalised over
    ``[low, high]``, to the power ``sharpness``, times ``passage_weight`` (HippoRAG 2 with
    sharpness 1).

    HippoRAG 2 spreads ``0.05 x score`` over every passage; on a corpus of thousands that
    sum outweighs the seed phrases many times, so the walk is mostly the dense ranking
    smoothed over the graph. A sharpness above 1 keeps the mass on the passages nearest the
    query (``GEAR_PPR_PASSAGE_SHARPNESS``; 1 by default: docs/ppr.md has the measurements).
    """
    vertex_of = graph.passage_vertex
    if high <= low:
        return {v: passage_weight for h in passage_hits if (v := vertex_of(h.id)) is not None}
    span = high - low
    return {v: passage_weight * max((h.score - low) / span, 0.0) ** sharpness
            for h in passage_hits if (v := vertex_of(h.id)) is not None}


def dense_passage_weights(
    graph: PPRGraph, passage_hits: Sequence[Hit], passage_weight: float = 0.05
) -> np.ndarray:
    """Restart mass of the passages: min-max normalised dense score x ``passage_weight``.

    ``passage_hits`` is every passage, best first, as a full dense search returns them.
    """
    weights = np.zeros(graph.n_vertices, dtype=np.float64)
    low, high = _min_max(passage_hits)
    for vertex, share in passage_mass(graph, passage_hits, low, high, passage_weight).items():
        weights[vertex] = share
    return weights


def choose_seeds(
    store: Store,
    query: str,
    query_vector: np.ndarray,
    seed_triple_ids: Sequence[str] | None,
    seed_triples: int,
    filter_fn: FilterFn | None,
    found: Sequence[list[Hit]] | None = None,
) -> tuple[list[Triple], list[float]]:
    """Seed triples and their query cosines, min-max normalised over all triples (HippoRAG 2);
    ``filter_fn`` (recognition memory, an LLM call) keeps some of the query's top triples.
    ``found``: the hits of :func:`seed_searches`, when asked already (with other searches)."""
    best, lowest = found if found is not None else search_all(
        store, seed_searches(query_vector, seed_triple_ids, seed_triples))
    low = lowest[0].score if lowest else None
    if not best or low is None:
        return [], []
    low = min(low, best[-1].score)  # an approximate search may miss the true lowest
    high = best[0].score
    if seed_triple_ids is None:
        score_of = {h.id: h.score for h in best}
        triples = store.triples.get(list(score_of))
        if filter_fn is not None and triples:
            kept = {t.id for t in filter_fn(query, list(triples))}
            triples = [t for t in triples if t.id in kept]
        cosines = [score_of[t.id] for t in triples]
    else:
        triples = store.triples.get(list(dict.fromkeys(seed_triple_ids)))
        if not triples:
            return [], []
        cosines = (store.triples.vectors([t.id for t in triples]) @ query_vector).tolist()
    return triples, [_normalise(float(c), low, high) for c in cosines]


def seed_searches(query_vector: np.ndarray, seed_triple_ids: Sequence[str] | None, seed_triples: int) -> list[Search]:
    """The two searches :func:`choose_seeds` reads: the query's top triples (one when the seeds
    are given) and the lowest cosine over all triples."""
    k = seed_triples if seed_triple_ids is None else 1
    return [Search.dense("triple", query_vector, k), Search.lowest("triple", query_vector)]


def ppr_expand(
    store: Store,
    graph: PPRGraph,
    query: str,
    query_vector: np.ndarray,
    seed_triple_ids: Sequence[str] | None,
    k: int,
    *,
    damping: float = 0.5,
    passage_weight: float = 0.05,
    seed_triples: int = 5,
    filter_fn: FilterFn | None = None,
    method: Literal["local", "global"] = "local",
    tolerance: float = 1e-7,
    dense_passages: int = 1000,
    seeds: tuple[list[Triple], list[float]] | None = None,
    passage_sharpness: float = 1.0,
    query_entity_weight: float = 0.0,
    walk: Walk | None = None,
) -> list[RankedPassage]:
    """Passages ranked by PPR from seed triples (HippoRAG 2), each with the seeds that reached it.

    Args:
        store: The index.
        graph: Its PPR graph (bring it up to date with :meth:`PPRGraph.update` first).
        query: The query text (shown to ``filter_fn``).
        query_vector: The query's normalised embedding.
        seed_triple_ids: The seeds, e.g. the agent's linked triples; None to seed with
            the ``seed_triples`` triples most similar to the query ("query to triple").
            An empty list means no seeds: dense retrieval.
        k: Passages to return.
        damping: PPR damping (HippoRAG 2: 0.5).
        passage_weight: Restart weight factor of the passage nodes (HippoRAG 2: 0.05).
        seed_triples: Query-to-triple matches used when ``seed_triple_ids`` is None.
        filter_fn: Recognition memory applied to the query-to-triple matches (not to
            seeds given by the caller, which are chosen already).
        method: ``local`` (push from a sparse restart vector) or ``global`` (power
            iteration over the whole graph, every passage with restart mass).
        tolerance: Local push tolerance (:func:`push_personalized_pagerank`).
        dense_passages: Local: how many of the query's nearest passages get restart mass
            (every passage when the corpus has at most twice as many: :func:`dense_list_size`).
        seeds: The seed triples and their normalised scores when already chosen
            (:func:`choose_seeds`); the other seed arguments are then not used.
        passage_sharpness: Power of the normalised dense score in a passage's restart
            mass (:func:`passage_mass`; HippoRAG 2: 1).
        query_entity_weight: Restart mass, divided by specificity, of each phrase node the
            query names (:func:`~gear_agent.expansion._query_entities.query_entity_vertices`);
            0: none (HippoRAG 2).
        walk: The matrices to walk (:func:`~gear_agent.expansion.ppr_walk.walk_of`, e.g.
            with title edges); the graph's own edges when None.

    Returns:
        The top ``k`` passages by PPR probability; each carries, as a ``seeds`` chain
        (:func:`seeds_reaching`), the seed triples naming a phrase it contains (their
        restart mass flowed straight into it), or no chain when none does. With no
        surviving seed, the dense top ``k`` with empty chains.

    Example:
        >>> ppr_expand(store, graph, "Who founded Rome?", encode("Who founded Rome?"),
        ...            None, k=5)  # doctest: +SKIP
        [RankedPassage(id='p-...', score=0.031, chain=('t-...', 't-...')), ...]
    """
    if k <= 0:
        return []
    if method not in ("local", "global"):
        raise ValueError(f"unknown PPR method {method!r}; known: local, global")
    query_vector = np.asarray(query_vector, dtype=np.float32)
    searches = [] if seeds is not None else seed_searches(query_vector, seed_triple_ids, seed_triples)
    if method == "local":  # the seeds' and the passages' searches in one request where a store can
        dense_k = max(dense_list_size(graph.n_passages, dense_passages), k)
        searches += [Search.dense("passage", query_vector, dense_k), Search.lowest("passage", query_vector)]
    found = search_all(store, searches)
    triples, scores = seeds if seeds is not None else choose_seeds(
        store, query, query_vector, seed_triple_ids, seed_triples, filter_fn, found[:2])
    phrases = seed_phrase_mass(graph, triples, scores)
    if query_entity_weight > 0:
        phrases = add_query_entities(graph, query, phrases, query_entity_weight)
    walk = walk if walk is not None else walk_of(graph, store)
    if method == "global":
        passage_hits = store.passages.vector_search(query_vector, store.passages.count())
        low, high = _min_max(passage_hits)
    else:
        passage_hits, lowest_hit = found[-2:]
        lowest = lowest_hit[0].score if lowest_hit else None
        low, high = (min(lowest, passage_hits[-1].score), passage_hits[0].score) \
            if passage_hits and lowest is not None else (0.0, 1.0)
    if not phrases:
        return [RankedPassage(h.id, h.score) for h in passage_hits[:k]]
    passages = passage_mass(graph, passage_hits, low, high, passage_weight, passage_sharpness)
    reset = {**passages, **phrases}
    if method == "global":
        vertices = np.fromiter(reset, dtype=np.int64, count=len(reset))
        mass = np.fromiter(reset.values(), dtype=np.float64, count=len(reset))
        dense = np.zeros(graph.n_vertices)
        dense[vertices] = mass
        probability = sparse_personalized_pagerank(walk.transition, walk.dangling, dense, damping)
        vertices = np.arange(graph.n_vertices)
    else:
        tail = _TailModel(passage_weight, passage_sharpness)
        vertices, probability = _local(
            graph, reset, phrases, len(passage_hits), damping, tolerance, k, walk, tail
        )
    is_passage = graph.passage_mask()[vertices]
    vertices, probability = vertices[is_passage], probability[is_passage]
    order = np.lexsort((vertices, -probability))[:k]
    chains = seeds_reaching(graph, triples, [int(vertices[i]) for i in order])
    return [
        RankedPassage(graph.vertex_name(int(vertices[i])), float(probability[i]), chain, "seeds")
        for i, chain in zip(order, chains)
    ]


def seeds_reaching(graph: PPRGraph, triples: Sequence[Triple], passages: Sequence[int]) -> list[tuple[str, ...]]:
    """For each passage vertex, the ids of the seed ``triples`` (in seed order) whose
    subject or object is a phrase the passage contains: the seeds whose restart mass
    reaches it over one edge. A passage reached only by longer walks, or by its own dense
    restart mass, gets none: no chain rather than one that does not reach it.

    Example:
        >>> seeds_reaching(graph, seeds, [graph.passage_vertex("p-1")])  # doctest: +SKIP
        [('t-founded-by',)]
    """
    containment = graph.containment()
    vertices = [(t.id, {graph.phrase_vertex(t.subject), graph.phrase_vertex(t.object)} - {None})
                for t in triples]
    out = []
    for vertex in passages:
        row = containment.indices[containment.indptr[vertex]:containment.indptr[vertex + 1]]
        phrases = set(row.tolist())
        out.append(tuple(tid for tid, ends in vertices if ends & phrases))
    return out


def dense_list_size(passages: int, dense_passages: int) -> int:
    """How many nearest passages get their own restart mass: ``dense_passages``, or every
    passage when the corpus is at most twice that (the tail estimate is for corpora much
    larger than the list; a small one is searched whole, and its ranking is exact).

    Example:
        >>> dense_list_size(1_890, 1_000), dense_list_size(100_000, 1_000)
        (1890, 1000)
    """
    return passages if passages <= 2 * dense_passages else dense_passages


class _TailModel:
    """Passage restart masses back to the affine scale :func:`tail_mass` models, and its
    estimate forward again: with ``sharpness`` s, mass ``w x^s`` is ``w x`` on the affine
    scale. The tail's mean of ``x^s`` is taken as its mean ``x`` to the power s (an
    underestimate for s > 1, by Jensen; the sharper the weights, the less the tail holds).
    """

    def __init__(self, passage_weight: float, sharpness: float) -> None:
        self.weight, self.sharpness = passage_weight, sharpness

    def affine(self, masses: np.ndarray) -> np.ndarray:
        if self.sharpness == 1.0 or self.weight <= 0:
            return masses
        return self.weight * (masses / self.weight) ** (1.0 / self.sharpness)

    def mass(self, affine_mean: float) -> float:
        if self.sharpness == 1.0 or self.weight <= 0:
            return affine_mean
        return self.weight * (affine_mean / self.weight) ** self.sharpness


def _local(
    graph: PPRGraph,
    reset: dict[int, float],
    phrases: dict[int, float],
    found: int,
    damping: float,
    tolerance: float,
    k: int,
    walk: Walk,
    tail_model: _TailModel,
) -> tuple[np.ndarray, np.ndarray]:
    """Local PPR of ``reset`` plus an estimate of the passages left out of it.

    When the dense search returned fewer passages than the graph has, every passage left
    out (the *tail*) would have had restart mass too. PPR is linear in the restart vector,
    so the tail's part is estimated as a uniform mass ``c`` on every passage (``c`` the
    tail's estimated mean, :func:`tail_mass`) walked once per graph
    (:func:`_uniform_passage_ppr`), with ``c`` taken off the passages that have mass so
    they are not counted twice.

    The push's precision then follows the estimate's: with ``found`` of ``N`` passages
    given their own mass, the tolerance is multiplied by ``N / found``, so the work per
    query stays bounded as the corpus grows (ACL's bound ``1 / ((1 - d) tolerance)``
    falls as ``1 / N``) while a corpus whose passages all fit in the dense list keeps
    the given tolerance (docs/ppr.md has the measurements).
    """
    n_passages = graph.n_passages
    passages = {v: m for v, m in reset.items() if v not in phrases}
    tail = 0.0
    if found < n_passages and passages:
        masses = np.fromiter(passages.values(), dtype=np.float64)
        tail = tail_model.mass(tail_mass(tail_model.affine(masses), n_passages))
        reset = {**{v: m - tail for v, m in passages.items()}, **phrases}
        tolerance = tolerance * n_passages / max(found, 1)
    vertices = np.fromiter(reset, dtype=np.int64, count=len(reset))
    mass = np.fromiter(reset.values(), dtype=np.float64, count=len(reset))
    total = mass.sum()
    vertices, probability = push_personalized_pagerank(
        walk.adjacency, walk.strength, vertices, mass, damping, tolerance, walk.constants
    )
    probability = probability * total
    if tail > 0:
        key = f"uniform passage ppr {damping}"
        if walk.title_weight:
            key += f" titles {walk.title_weight!r}"
        uniform = graph.derived(key, lambda: _uniform_passage_ppr(graph, damping, walk))
        background = tail * n_passages
        top = uniform[1][:k]  # the passages the background alone ranks first
        reached = np.zeros(graph.n_vertices, dtype=bool)
        reached[vertices] = True
        vertices = np.concatenate([vertices, top[~reached[top]]])
        probability = np.concatenate([probability, np.zeros(len(vertices) - len(probability))])
        probability += background * uniform[0][vertices]
        total += background
    return vertices, probability / total  # scaled as if the whole restart vector summed to 1


def tail_mass(top: np.ndarray, total: int) -> float:
    """Estimated mean restart mass of the passages below the ``len(top)`` best of ``total``.

    Masses are an affine map of cosines (0 at the lowest), so a normal model of the cosines
    holds for them too: the cut-off ``t`` (the lowest mass given) is the ``1 - M/N``
    quantile and the top masses' mean is the mean above it, which gives ``mu`` and
    ``sigma``; the tail's mean is the mean below ``t``. Falls back to ``t / 2`` when the
    model does not fit; always within ``[0, t]``.

    Example:
        >>> round(tail_mass(np.array([0.05, 0.04, 0.035, 0.03]), 8), 4)
        0.0212
    """
    from scipy.stats import norm

    cut, share = float(top.min()), len(top) / total
    if share >= 1.0 or len(top) < 2:
        return 0.5 * cut
    alpha = norm.ppf(1.0 - share)
    above = norm.pdf(alpha) / norm.sf(alpha)  # mean of a standard normal above alpha
    sigma = (float(top.mean()) - cut) / (above - alpha)
    if not np.isfinite(sigma) or sigma <= 0:
        return 0.5 * cut
    mu = cut - alpha * sigma
    below = mu - sigma * norm.pdf(alpha) / norm.cdf(alpha)
    return float(min(max(below, 0.0), cut))


def _uniform_passage_ppr(
    graph: PPRGraph, damping: float, walk: Walk
) -> tuple[np.ndarray, np.ndarray]:
    """PPR with the same restart mass on every passage: per vertex, and the passage
    vertices best first."""
    reset = graph.passage_mask().astype(np.float64)
    probability = sparse_personalized_pagerank(walk.transition, walk.dangling, reset, damping)
    passages = np.flatnonzero(graph.passage_mask())
    return probability, passages[np.argsort(-probability[passages], kind="stable")]


class PPRRetriever(Retriever):
    """``ppr``: HippoRAG 2's retrieval by Personalized PageRank from query-linked triples.

    The graph is built on first use (or loaded from ``graph_path``, by default a file in
    the store's folder for derived files) and kept at the store's commit by one rule: it
    records the stamp of the state it reflects (index id, generation, commit digest), takes
    in the changes since after every commit this process makes (the write path:
    :meth:`Store.subscribe`), and compares stamps at every query (another process may have
    written); a query sees one commit, graph and records alike (:meth:`Store.snapshot`).

    Args:
        store: The index.
        encode: The query encoder; its embedder also embeds the graph's phrases.
        settings: The ``ppr_*`` section (a ``GearSettings`` is one); its defaults when None.
        filter_fn: Recognition memory on the seed triples (e.g.
            :func:`gear_agent.expansion.ppr_filter.make_llm_filter`); none when None.
            ``GearSettings.ppr_filter`` is for the caller that builds it.
        graph: A ready graph; built or loaded when None.
        graph_path: Where the graph is cached; ``"auto"`` means ``ppr-graph.npz`` in the
            store's :attr:`~gear_agent.store.base.Store.derived_dir` (no cache for a backend
            without one); None, no cache.

    Example:
        >>> retriever = PPRRetriever(store, QueryEncoder(embedder), settings)  # doctest: +SKIP
        >>> retriever.retrieve("Who is the spouse of the Green performer?", k=5)  # doctest: +SKIP
    """

    name = "ppr"

    def __init__(
        self,
        store: Store,
        encode: QueryEncoder,
        settings: PPRSettings | None = None,
        filter_fn: FilterFn | None = None,
        *,
        graph: PPRGraph | None = None,
        graph_path: Path | str | None = "auto",
    ) -> None:
        self.settings = settings if settings is not None else PPRSettings()
        self.store, self.encode, self.filter_fn = store, encode, filter_fn
        self.graph_path = cache_path(store) if graph_path == "auto" else graph_path
        self._graph = graph
        self.lock = threading.RLock()
        """Held while the graph is updated or walked (the graph is updated in place); hold it
        to use :attr:`graph` from outside (``hipporag`` does)."""
        self.progress: GraphProgress | None = None
        """``progress(stage, done, total)`` while the graph is built or updated (the CLI
        points it at its progress board); None reports nothing."""
        self._unsubscribe = store.subscribe(self._committed)

    def _committed(self, generation: int) -> None:
        """After a commit this process made: take its changes in now (the write path)."""
        with self.lock:
            if self._graph is not None and self._graph.generation != generation:
                self._graph.update(self.store, self.progress)

    @property
    def graph(self) -> PPRGraph:
        """The PPR graph at the store's commit: built or loaded on first use, brought up to
        date (and saved) when the store's generation moved since."""
        with self.lock, self.store.snapshot():
            graph = self._graph
            if graph is None or graph.stamp != self.store.stamp() or graph.unsaved:
                path = None if self.graph_path is None else Path(self.graph_path)
                threshold = self.settings.ppr_synonym_threshold
                self._graph = load_or_build(
                    self.store, self.encode.embedder, threshold, path, graph=graph,
                    progress=self.progress,
                )
            return self._graph

    def retrieve(self, query: str, k: int, where: Where | None = None) -> list[RankedPassage]:
        check_request(query, k)
        with self.store.snapshot():
            return keep_top_passing(self.store, lambda n: self.expand(query, None, n), k, where)

    def expand(
        self, query: str, seed_triple_ids: Sequence[str] | None, k: int
    ) -> list[RankedPassage]:
        """:func:`ppr_expand` over this retriever's store, graph and settings.

        The agent's expansion step can hold one retriever and pass its linked triples
        as ``seed_triple_ids``; None seeds with the query's top triples (and the filter).
        The two walk with their own knobs (:meth:`PPRSettings.knobs`): seeds from the
        query add title edges, sharpened passage weights and the query's names; given
        seeds walk HippoRAG 2's graph as the LLM replay recorded it (by default).
        """
        s = self.settings
        with self.store.snapshot():
            vector = self.encode(query)
            seeds = None
            if self.filter_fn is not None and seed_triple_ids is None:  # an LLM call: outside the lock
                seeds = choose_seeds(self.store, query, vector, None, s.ppr_seed_triples, self.filter_fn)
            title_weight, sharpness, entities = s.knobs(seeds_given=seed_triple_ids is not None)
            with self.lock:
                graph = self.graph
                return ppr_expand(
                    self.store, graph, query, vector, seed_triple_ids, k,
                    damping=s.ppr_damping, passage_weight=s.ppr_passage_weight,
                    seed_triples=s.ppr_seed_triples, filter_fn=self.filter_fn, method=s.ppr_method,
                    tolerance=s.ppr_tolerance, dense_passages=s.ppr_dense_passages, seeds=seeds,
                    passage_sharpness=sharpness, query_entity_weight=entities,
                    walk=walk_of(graph, self.store, title_weight),
                )
