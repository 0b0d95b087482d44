"""The matrices a PPR walk reads: the graph's own edges, plus title edges when asked for.

**Title edges** (this project's addition to HippoRAG 2's graph): a passage whose title,
normalised as phrases are (:func:`~gear_agent.text.tokenizer.normalise_entity`), is a
phrase node of the graph is joined to that node with weight ``title_weight``. A title names
what its passage is about (a Wikipedia article's subject), while the passage's own triples
often spell it out in full ("Matthew Stephen "M." Ward" in the article "M. Ward"); another
passage's triple that names the short form ("... studio album by M. Ward") then leads
straight to the article, the second hop of a bridge question. Title edges do not change
phrase specificity (the passages a phrase occurs in by its triples).

The edges are derived at query time from the store's passage titles and the graph's phrase
index, once per graph version (:meth:`PPRGraph.derived`), and nothing is saved: the graph's
files are unchanged. The titles are kept with the graph object (:meth:`PPRGraph.kept`): the
first version reads them all (one walk over the passages), a later one only those of the
passages added since (by id), and drops those of the passages removed; a walk over every
passage after each write was most of the next ``ppr`` query's time on Elasticsearch (2.7 of
8.4 s after a delete of 1,000 of 6,000 passages, growing with the index).
``title_weight`` 0 gives the graph's own matrices, the very objects the walk read before
title edges existed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

from gear_agent.expansion._ppr_push import push_constants
from gear_agent.expansion.ppr_graph import PPRGraph
from gear_agent.store.base import Store

__all__ = ["Walk", "passage_titles", "title_pairs", "walk_of"]

_TITLE_BATCH = 1_000
"""Passages whose titles are read by id in one call."""


@dataclass(frozen=True)
class Walk:
    """What one walk reads, per graph version and title weight.

    Attributes:
        adjacency: Symmetric weighted adjacency (CSR).
        strength: Weighted degree of each vertex.
        transition: Column-stochastic walk matrix ``M[j, i] = w_ij / s_i``.
        dangling: True for vertices without edges.
        constants: :func:`~gear_agent.expansion._ppr_push.push_constants` of ``strength``.
        title_weight: The weight of the title edges it includes (0: none).
    """

    adjacency: sparse.csr_array
    strength: np.ndarray
    transition: sparse.csr_array
    dangling: np.ndarray
    constants: tuple[np.ndarray, np.ndarray]
    title_weight: float = 0.0


def title_pairs(graph: PPRGraph, store: Store) -> tuple[np.ndarray, np.ndarray]:
    """Passage vertices and the phrase vertices their titles name (kept per graph version).

    Example:
        >>> title_pairs(graph, store)  # doctest: +SKIP
        (array([1890, ...]), array([17, ...]))
    """

    def compute() -> tuple[np.ndarray, np.ndarray]:
        passages: list[int] = []
        phrases: list[int] = []
        for pid, title in passage_titles(graph, store).items():
            p, t = graph.passage_vertex(pid), graph.phrase_vertex(title) if title else None
            if p is not None and t is not None:
                passages.append(p)
                phrases.append(t)
        return np.asarray(passages, np.int64), np.asarray(phrases, np.int64)

    return graph.derived("title pairs", compute)


def passage_titles(graph: PPRGraph, store: Store) -> dict[str, str]:
    """The title of every passage of ``graph`` (``""``: none), kept with the graph object and
    brought up to date here: the titles of passages it gained are read (by id, or by one walk
    over the store's passages when they are most of them), those of passages it lost dropped.
    A passage's title never changes (its id is a hash of its title and text)."""
    titles: dict[str, str] = graph.kept("passage titles", dict)
    _, ids = graph.passage_vertices()
    missing = [pid for pid in ids if pid not in titles]
    if len(missing) > len(ids) // 2:
        wanted = set(missing)
        titles.update((p.id, p.title or "") for p in store.passages.iterate() if p.id in wanted)
    else:
        for start in range(0, len(missing), _TITLE_BATCH):
            titles.update((p.id, p.title or "") for p in store.passages.get(missing[start : start + _TITLE_BATCH]))
    if len(titles) > len(ids):
        held = set(ids)
        for pid in [pid for pid in titles if pid not in held]:
            del titles[pid]
    return titles


def walk_of(graph: PPRGraph, store: Store, title_weight: float = 0.0) -> Walk:
    """The walk over ``graph`` with title edges of ``title_weight`` (0: the graph's own edges).

    Raises:
        ValueError: ``title_weight`` is negative.
    """
    if title_weight < 0:
        raise ValueError(f"title_weight must be >= 0, got {title_weight}")

    def own() -> Walk:
        adjacency, strength = graph.adjacency()
        transition, dangling = graph.transition()
        constants = graph.derived("push constants", lambda: push_constants(strength))
        return Walk(adjacency, strength, transition, dangling, constants)

    def with_titles() -> Walk:
        adjacency, strength = graph.adjacency()
        passages, phrases = title_pairs(graph, store)
        n = graph.n_vertices
        rows = np.concatenate([passages, phrases])
        cols = np.concatenate([phrases, passages])
        titles = sparse.csr_array(
            (np.full(len(rows), float(title_weight)), (rows, cols)), shape=(n, n)
        )
        adjacency = sparse.csr_array(adjacency + titles)
        strength = strength + np.bincount(rows, minlength=n) * float(title_weight)
        dangling = strength <= 0
        scale = np.divide(1.0, strength, out=np.zeros(n), where=~dangling)
        transition = sparse.csr_array(adjacency * scale[None, :])
        return Walk(adjacency, strength, transition, dangling, push_constants(strength),
                    float(title_weight))

    if title_weight == 0:
        return graph.derived("walk", own)
    return graph.derived(f"walk titles {float(title_weight)!r}", with_titles)
