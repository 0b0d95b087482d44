"""The entity graph: entities are vertices, each triple an edge from its head to its tail.

Two triples are neighbours when they share a head or tail entity (GEAR,
section 3.2), i.e. when their edges touch a common vertex. Entities are matched
after :func:`~gear_agent.text.tokenizer.normalise_entity` (case and whitespace).
"""

from __future__ import annotations

from collections.abc import Sequence

import igraph as ig
import numpy as np

from gear_agent.text.tokenizer import normalise_entity


class EntityGraph:
    """An igraph multigraph whose edge ``i`` is triple ``i`` of the list it was built from.

    Example:
        >>> graph = EntityGraph([("Paris", "France"), ("paris ", "Seine"), ("Rome", "Italy")])
        >>> graph.neighbours(0).tolist()
        [1]
    """

    def __init__(self, heads_and_tails: Sequence[tuple[str, str]]) -> None:
        vertex_of: dict[str, int] = {}
        edges: list[tuple[int, int]] = []
        for head, tail in heads_and_tails:
            h = vertex_of.setdefault(normalise_entity(head), len(vertex_of))
            t = vertex_of.setdefault(normalise_entity(tail), len(vertex_of))
            edges.append((h, t))
        self.graph = ig.Graph(n=len(vertex_of), edges=edges, directed=False)
        self.graph.vs["name"] = list(vertex_of)
        self._vertex_of = vertex_of
        self._edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
        self._incident: dict[int, np.ndarray] = {}

    @property
    def n_entities(self) -> int:
        return self.graph.vcount()

    @property
    def n_triples(self) -> int:
        return self.graph.ecount()

    def _incident_edges(self, vertex: int) -> np.ndarray:
        cached = self._incident.get(vertex)
        if cached is None:
            cached = np.asarray(self.graph.incident(vertex), dtype=np.int64)
            self._incident[vertex] = cached
        return cached

    def neighbours(self, triple_index: int) -> np.ndarray:
        """Indices of the triples sharing an entity with triple ``triple_index``, ascending."""
        head, tail = self._edges[triple_index]
        found = self._incident_edges(int(head))
        if tail != head:
            found = np.concatenate([found, self._incident_edges(int(tail))])
        found = np.unique(found)
        return found[found != triple_index]

    def triples_of_entity(self, entity: str) -> np.ndarray:
        """Indices of the triples whose head or tail is ``entity`` (normalised)."""
        vertex = self._vertex_of.get(normalise_entity(entity))
        if vertex is None:
            return np.empty(0, dtype=np.int64)
        return np.unique(self._incident_edges(vertex))
