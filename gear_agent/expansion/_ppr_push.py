"""Local personalized PageRank by push (Andersen, Chung & Lang, FOCS 2006, section 3).

Approximates the PPR of :func:`gear_agent.expansion.ppr.personalized_pagerank`,
``p = (1 - d) r + d M p`` (a vertex without edges hands its mass back according to
``r``), while touching only the neighbourhood of the restart vertices: each vertex
keeps a *residual* of mass not yet spread; *pushing* a vertex ``u`` moves ``(1 - d)`` of
its residual into ``p[u]`` and spreads ``d`` of it over its neighbours by edge weight.
Every push keeps ``p + PPR(residual) = PPR(r)``, so ``p`` only gains; pushing stops when
every residual is below ``tolerance x max(1, weighted degree)``. The work is bounded by
``1 / ((1 - d) tolerance)`` edge visits whatever the graph's size (ACL's Lemma 2), and hub
vertices (large weighted degree) are pushed rarely.

Vectorised: each round pushes every vertex over the bar at once (a scipy CSR row
gather and one ``np.add.at``), which is the same invariant with many pushes per round;
a round that would touch a large share of the graph is one sparse matrix product instead
(:data:`SWEEP_SHARE`), so on small graphs the cost is never much above global power
iteration's.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

__all__ = ["push_constants", "push_personalized_pagerank"]

SWEEP_SHARE = 8
"""A round whose vertices hold more than 1/SWEEP_SHARE of the edge entries is done as one
sparse product over the whole graph instead (Wu et al., "Unifying the Global and Local
Approaches", VLDB 2021, PowerPush); the result is the same, only the arithmetic differs."""


def push_constants(strength: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """What every push over a graph needs, query-independent: each vertex's degree floor
    ``max(1, weighted degree)`` (its bar is ``tolerance`` times that) and which vertices
    have no edges. Keep it with the graph (:meth:`PPRGraph.derived`) and pass it to
    :func:`push_personalized_pagerank`, so a query does not recompute it."""
    strength = np.asarray(strength, dtype=np.float64)
    return np.maximum(strength, 1.0), strength <= 0


def push_personalized_pagerank(
    adjacency: sparse.csr_array,
    strength: np.ndarray,
    reset_vertices: np.ndarray,
    reset_mass: np.ndarray,
    damping: float = 0.5,
    tolerance: float = 1e-6,
    constants: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Approximate PPR from a sparse restart vector; the vertices it reached and their mass.

    Args:
        adjacency: Symmetric weighted adjacency (CSR), ``n x n``.
        strength: Weighted degree of each vertex (row sums of ``adjacency``).
        reset_vertices: Distinct vertices with restart mass.
        reset_mass: Their non-negative mass, not all zero (scaled to sum 1).
        damping: Probability of following an edge (HippoRAG: 0.5).
        tolerance: Residual per unit of weighted degree at which a vertex is left alone;
            smaller is closer to the exact PPR and slower.
        constants: :func:`push_constants` of ``strength``, computed here when None.

    Returns:
        ``(vertices, probability)``: each vertex once (the restart vertices, then every
        vertex pushed; all others have approximate PPR 0) and its value; each value is at
        most the exact one, and they sum to ``1 - (residual left)``.

    Raises:
        ValueError: Bad restart vector, damping or tolerance.

    Example:
        >>> a = sparse.csr_array(np.array([[0., 1, 0], [1, 0, 1], [0, 1, 0]]))
        >>> v, p = push_personalized_pagerank(a, a.sum(axis=1), np.array([0]), np.array([1.]),
        ...                                   tolerance=1e-12)
        >>> dict(sorted(zip(v.tolist(), p.round(4).tolist())))
        {0: 0.5833, 1: 0.3333, 2: 0.0833}
    """
    reset_vertices = np.asarray(reset_vertices, dtype=np.int64)
    reset_mass = np.asarray(reset_mass, dtype=np.float64)
    if reset_vertices.shape != reset_mass.shape or len(np.unique(reset_vertices)) != len(
        reset_vertices
    ):
        raise ValueError("reset_vertices must be distinct and match reset_mass in length")
    if not np.all(np.isfinite(reset_mass)) or np.any(reset_mass < 0) or reset_mass.sum() <= 0:
        raise ValueError("reset mass must be finite and non-negative with a positive sum")
    if not 0.0 < damping < 1.0:
        raise ValueError(f"damping must be in (0, 1), got {damping}")
    if tolerance <= 0:
        raise ValueError(f"tolerance must be positive, got {tolerance}")
    n = adjacency.shape[0]
    restart = reset_mass / reset_mass.sum()
    floor, dangling = push_constants(strength) if constants is None else constants
    p = np.zeros(n)
    residual = np.zeros(n)
    residual[reset_vertices] = restart
    seen = np.zeros(n, dtype=bool)
    seen[reset_vertices] = True
    reached = [reset_vertices]
    slot = np.empty(n, dtype=np.int64)  # scratch for removing repeats (last writer wins)
    active = reset_vertices[residual[reset_vertices] >= tolerance * floor[reset_vertices]]
    indptr = adjacency.indptr
    while active.size:
        if (indptr[active + 1] - indptr[active]).sum() * SWEEP_SHARE > adjacency.nnz:
            active = _sweep(adjacency, strength, dangling, tolerance * floor, p, residual, seen,
                            reached, reset_vertices, restart, damping)
            continue
        first = active[~seen[active]]
        seen[first] = True
        reached.append(first)
        mass = residual[active]
        residual[active] = 0.0
        p[active] += (1.0 - damping) * mass
        spread = damping * mass
        stuck = dangling[active]
        candidates = []
        if stuck.any():  # no edges: the mass restarts (igraph's convention)
            residual[reset_vertices] += spread[stuck].sum() * restart
            candidates.append(reset_vertices)
            active, spread = active[~stuck], spread[~stuck]
        if active.size:
            rows = adjacency[active]
            share = np.repeat(spread / strength[active], np.diff(rows.indptr))
            np.add.at(residual, rows.indices, rows.data * share)
            candidates.append(rows.indices)
        touched = np.concatenate(candidates)
        over = touched[residual[touched] >= tolerance * floor[touched]]
        order = np.arange(len(over))
        slot[over] = order
        active = over[slot[over] == order]
    vertices = np.concatenate(reached)  # each once: the restart vertices, then every pushed one
    return vertices, p[vertices]


def _sweep(
    adjacency: sparse.csr_array, strength: np.ndarray, dangling: np.ndarray, bar: np.ndarray,
    p: np.ndarray, residual: np.ndarray, seen: np.ndarray, reached: list[np.ndarray],
    reset_vertices: np.ndarray, restart: np.ndarray, damping: float,
) -> np.ndarray:
    """One round pushing every vertex over the bar, as one sparse matrix-vector product
    (when the round would touch a large share of the edges anyway); the next active set."""
    mass = np.where(residual >= bar, residual, 0.0)
    pushed = mass > 0
    first = np.flatnonzero(pushed & ~seen)
    seen[first] = True
    reached.append(first)
    residual -= mass
    p += (1.0 - damping) * mass
    spread = damping * mass
    stuck = spread[dangling].sum()
    if stuck > 0:
        residual[reset_vertices] += stuck * restart
    residual += adjacency @ np.divide(spread, strength, out=np.zeros_like(spread),
                                      where=~dangling)
    return np.flatnonzero(residual >= bar)
