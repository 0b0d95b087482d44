"""HippoRAG 1's retrieval (Gutiérrez et al., NeurIPS 2024, "HippoRAG", section 2.2), LLM-free.

The paper links the query's named entities (from an LLM prompt) to their nearest phrase
nodes; that is ``hipporag+ner`` (:mod:`gear_agent.expansion.hipporag_ner`). Without an LLM
(``hipporag``) we take its code's ``query_to_node`` linking instead: the ``seed_phrases``
phrase nodes nearest the query embedding are the query nodes. Then:

* **node specificity** (section 2.2): query node ``i`` gets restart mass
  ``cosine_i x s_i`` with ``s_i = 1 / |P_i|``, ``|P_i|`` the number of passages the phrase
  occurs in; the masses are passed through a softmax over the query nodes (the paper's
  code does the same for ``query_to_node`` linking; entity-linked nodes get ``s_i``
  itself, :func:`entity_node_mass`);
* **the walk** is Personalized PageRank over the *phrase graph only*: relation and synonym
  edges, no passage nodes (HippoRAG 2 adds those; :mod:`gear_agent.expansion.ppr`);
* **passage scores** are ``P^T p``: each passage sums the probabilities of the phrases
  it contains.

Passages no phrase reached have no score; when fewer than ``k`` were reached, the dense
ranking fills the rest (score 0), where the paper's code would list them in arbitrary order.

The same graph serves both: :meth:`PPRGraph.adjacency` with ``phrases_only=True`` leaves
the contains edges out and :meth:`PPRGraph.containment` is ``P``. The walk is local push
or global power iteration, as ``ppr_method`` says for ``ppr``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from scipy import sparse

from gear_agent.config import PPRSettings
from gear_agent.expansion._ppr_push import push_constants, push_personalized_pagerank
from gear_agent.expansion.ppr import sparse_personalized_pagerank
from gear_agent.expansion.ppr_graph import PPRGraph
from gear_agent.filters import Where
from gear_agent.retrieval.base import RankedPassage, Retriever, check_request
from gear_agent.retrieval.filtering import keep_top_passing

if TYPE_CHECKING:
    from gear_agent.expansion.ppr import PPRRetriever

__all__ = ["HippoRAGRetriever", "entity_node_mass", "hipporag_scores", "query_node_mass"]


def query_node_mass(graph: PPRGraph, vertices: np.ndarray, cosines: np.ndarray) -> np.ndarray:
    """Restart mass of the query nodes: softmax over the seeds of ``cosine / |P_i|``.

    Example:
        >>> query_node_mass(graph, np.array([3, 7]), np.array([0.9, 0.8]))  # doctest: +SKIP
        array([0.52, 0.48])
    """
    specificity = np.maximum(graph.vertex_specificity()[vertices], 1)
    weights = np.asarray(cosines, dtype=np.float64) / specificity
    exp = np.exp(weights - weights.max())
    return exp / exp.sum()


def entity_node_mass(graph: PPRGraph, vertices: np.ndarray) -> np.ndarray:
    """Restart mass of entity-linked query nodes: node specificity ``s_i = 1 / |P_i|``
    (section 2.2), scaled to sum 1 (a phrase in no passage counts as in one, as the
    paper's code does).

    Example:
        >>> entity_node_mass(graph, np.array([3, 7]))  # |P| = 1 and 3  # doctest: +SKIP
        array([0.75, 0.25])
    """
    specificity = np.maximum(graph.vertex_specificity()[vertices], 1).astype(np.float64)
    weights = 1.0 / specificity
    return weights / weights.sum()


def hipporag_scores(
    graph: PPRGraph,
    seeds: np.ndarray,
    mass: np.ndarray,
    damping: float,
    method: str = "local",
    tolerance: float = 1e-7,
) -> tuple[np.ndarray, np.ndarray]:
    """Passage vertices with a positive score and their scores ``P^T p``.

    ``p`` is the PPR of the phrase graph from the restart mass ``mass`` on ``seeds``.
    """
    if method == "global":
        matrix, strength = graph.adjacency(phrases_only=True)
        dangling = strength <= 0
        scale = np.divide(1.0, strength, out=np.zeros(len(strength)), where=~dangling)
        reset = np.zeros(graph.n_vertices)
        reset[seeds] = mass
        walk = sparse.csr_array(matrix * scale[None, :])
        probability = sparse_personalized_pagerank(walk, dangling, reset, damping)
        vertices = np.flatnonzero(probability)
        values = probability[vertices]
    else:
        matrix, strength = graph.adjacency(phrases_only=True)
        constants = graph.derived("phrase push constants", lambda: push_constants(strength))
        vertices, values = push_personalized_pagerank(
            matrix, strength, seeds, mass, damping, tolerance, constants
        )
    rows = graph.containment()[vertices]
    passages = rows.indices
    scores = rows.data * np.repeat(values, np.diff(rows.indptr))
    unique, inverse = np.unique(passages, return_inverse=True)
    return unique, np.bincount(inverse, weights=scores, minlength=len(unique))


class HippoRAGRetriever(Retriever):
    """``hipporag``: HippoRAG 1's PPR over the phrase graph from the query's nearest phrases.

    Shares the graph of the open index's :class:`~gear_agent.expansion.ppr.PPRRetriever`.

    Args:
        ppr: The ``ppr`` retriever whose store, encoder and graph it uses.
        settings: The ``ppr_*`` section (its ``hipporag_*`` fields, ``ppr_method`` and
            ``ppr_tolerance``); the ``ppr`` retriever's when None.

    Example:
        >>> HippoRAGRetriever(index_parts(index).ppr(), settings).retrieve("Who ...?", 5)  # doctest: +SKIP
    """

    name = "hipporag"

    def __init__(self, ppr: PPRRetriever, settings: PPRSettings | None = None) -> None:
        self.ppr, self.settings = ppr, settings if settings is not None else ppr.settings

    def retrieve(self, query: str, k: int, where: Where | None = None) -> list[RankedPassage]:
        check_request(query, k)
        vector = self.ppr.encode(query)
        with self.ppr.store.snapshot(), self.ppr.lock:  # one commit; the graph held still
            seeds, mass = self.query_nodes(query, vector)  # once, however often the filter asks
            return keep_top_passing(
                self.ppr.store, lambda n: self.ranked_from(vector, seeds, mass, n), k, where
            )

    def query_nodes(self, query: str, vector: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The query nodes (phrase vertices) and their restart mass: the
        ``hipporag_seed_phrases`` phrases nearest ``vector``, :func:`query_node_mass`."""
        graph = self.ppr.graph
        seeds, cosines = graph.nearest_phrases(vector, self.settings.hipporag_seed_phrases)
        if not len(seeds):
            return seeds, np.empty(0)
        return seeds, query_node_mass(graph, seeds, cosines)

    def ranked(self, query: str, k: int) -> list[RankedPassage]:
        """The top ``k`` passages by HippoRAG's PPR (dense search fills a short list)."""
        vector = self.ppr.encode(query)
        with self.ppr.store.snapshot(), self.ppr.lock:
            return self.ranked_from(vector, *self.query_nodes(query, vector), k)

    def ranked_from(
        self, vector: np.ndarray, seeds: np.ndarray, mass: np.ndarray, k: int
    ) -> list[RankedPassage]:
        """The top ``k`` passages of the walk from ``seeds`` (dense search by ``vector``
        when there are no seeds, and to fill a short list)."""
        s = self.settings
        graph = self.ppr.graph
        if not len(seeds):
            hits = self.ppr.store.passages.vector_search(vector, k)
            return [RankedPassage(h.id, h.score) for h in hits]
        passages, scores = hipporag_scores(
            graph, seeds, mass, s.hipporag_damping, s.ppr_method, s.ppr_tolerance
        )
        order = np.lexsort((passages, -scores))[:k]
        ranked = [RankedPassage(graph.vertex_name(int(passages[i])), float(scores[i]))
                  for i in order]
        if len(ranked) < k:  # fewer passages reached than asked for: dense fills the rest
            seen = {p.id for p in ranked}
            hits = self.ppr.store.passages.vector_search(vector, k + len(ranked))
            ranked += [RankedPassage(h.id, 0.0) for h in hits if h.id not in seen][: k - len(ranked)]
        return ranked
