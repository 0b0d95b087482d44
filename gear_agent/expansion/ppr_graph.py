"""The knowledge graph that Personalized PageRank walks (HippoRAG 2, Gutiérrez et al., 2025, section 3).

Nodes:

* a **phrase** node per distinct triple subject or object, named by
  :func:`~gear_agent.text.tokenizer.normalise_entity` (lower case, single spaces);
  empty names are left out;
* a **passage** node per stored passage, named by the passage id.

Edges (undirected, one per node pair, its weight the sum of what joins the pair):

* **relation**: the subject and object of a triple. Weight ``2 x count``, the number of
  triples (over all passages) joining the pair. HippoRAG 2 adds both directions of every
  triple as separate edges of its undirected graph, so its effective weight is twice the
  count; we store that sum once. A triple whose subject and object are the same phrase
  adds no edge (HippoRAG 2 drops self-loops too).
* **synonym**: two phrases whose embedding cosine is at least the threshold (tau = 0.8).
  Weight ``2 x cosine``, again HippoRAG 2's two directions summed. Only phrases with at
  least three letters or digits take part (HippoRAG 2 lets such short phrases receive
  but not originate synonym edges; we leave them out both ways). Found by
  :mod:`gear_agent.expansion._ppr_synonyms`: exactly (blocked matrix products, no cap) up
  to 20k eligible phrases, above that with a usearch HNSW index of the phrases that grows
  as they arrive (at most 100 candidates per new phrase, re-scored exactly). Where a pair
  is both a relation and a synonym, the weights add (HippoRAG 2 keeps the synonym score
  only, an accident of its dict update).
* **contains**: a passage and each phrase of the triples extracted from it. Weight 1.

Edges live in numpy arrays (sorted pair keys with their relation count, synonym cosine and
contains flag); the walk reads a scipy CSR matrix built from them, and :attr:`PPRGraph.graph`
is an igraph view built on demand (checks, export).

The graph records the store state it reflects (:attr:`PPRGraph.stamp`: the index's id,
the generation and a digest of the commit, so a rolled-back index or a new index in the
same folder never matches a graph of another state) and :meth:`PPRGraph.update` brings it
to the store's latest commit by the store's one rule
(:func:`gear_agent.store.changes.bring_up_to_date`): it reads the store's change feed,
embeds only phrases it does not hold yet and adds only new nodes and edges (new synonym
pairs are searched between the new phrases and all phrases). Removed passages and triples
are taken out in place (:meth:`PPRGraph._remove`): the graph keeps, per triple, the
vertices it joined (the store no longer has a removed record), so each removed triple
gives back its relation count and its contains edges, a phrase no remaining triple names
leaves with its synonym edges, and the remaining vertices are numbered again: the graph is
then a from-scratch build's, edge for edge (with the exact synonym search; the phrase ANN's
pairs depend on the order phrases arrived, as for adds). Only a stamp the store does not
know, or a graph read from files of format 3 or 4 meeting a removal, is rebuilt (reusing
the phrase vectors it held, so a rebuild embeds nothing again). It is never judged fresh by counting records:
a delete followed by an add of as many leaves every count the same. Reads stream the
triples in batches of ids, phrases and passage ids (never the texts of all of them). An
update reports ``progress(stage, done, total)`` to the callback given (``read``, ``embed``,
``link``, ``synonyms``, ``save``); it never prints.

:meth:`PPRGraph.save` appends what changed since the last save as a delta file beside a
base file, listed with checksums in a manifest (:mod:`gear_agent.expansion.ppr_graph_files`);
a delta after a removal lists the passages and triples removed, which a load replays before
the delta's rows (a removal that follows adds not yet saved makes the save rewrite the base);
:meth:`PPRGraph.load` checks and reads them back and :meth:`update` then brings the graph up
to date with the store. A file that fails its checksum makes :func:`load_or_build` rebuild.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse

from gear_agent.embedding.base import Embedder
from gear_agent.expansion import ppr_graph_files as files
from gear_agent.expansion._ppr_synonyms import EXACT_MAX, PhraseANN, exact_pairs
from gear_agent.store.base import Store, StoreError
from gear_agent.store.changes import Changes, Stamp, bring_up_to_date
from gear_agent.store.derived_files import write_atomically
from gear_agent.text.tokenizer import normalise_entity

logger = logging.getLogger(__name__)

RELATION_WEIGHT = 2.0
"""Weight per triple joining two phrases (HippoRAG 2's two directed edges, summed)."""
SYNONYM_WEIGHT = 2.0
"""Multiplier of the cosine on a synonym edge (HippoRAG 2's two directed edges, summed)."""
CONTAINS_WEIGHT = 1.0
"""Weight of a passage-phrase edge (HippoRAG 2)."""
EMBED_BATCH = 4096
"""Phrases per embedder call during an update (one progress step each)."""
READ_BATCH = 65_536
"""Triples read from the store per batch."""

GraphProgress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``: stages ``read``, ``embed``, ``link``, ``synonyms``, ``save``."""

_ALNUM = re.compile(r"[^\W_]", re.UNICODE)
_SHIFT = np.int64(32)


def synonym_eligible(phrase: str) -> bool:
    """True when the phrase has at least three letters or digits (HippoRAG 2's rule).

    Example:
        >>> synonym_eligible("u.s"), synonym_eligible("usa")
        (False, True)
    """
    return len(_ALNUM.findall(phrase)) >= 3


def _no_progress(stage: str, done: int, total: int) -> None:
    return None


@dataclass(frozen=True)
class UpdateStats:
    """What one :meth:`PPRGraph.update` did.

    Attributes:
        rebuilt: True when the graph was built again from the store (the store could not
            list the changes, or a graph read from files of format 3 or 4 met a removal).
        passages: Passage nodes added.
        triples: Triples newly taken in.
        phrases: Phrase nodes added.
        embedded: Phrases embedded (a phrase the graph holds is never embedded again).
        synonym_pairs: Synonym pairs added.
        passages_removed: Passage nodes taken out.
        triples_removed: Triples taken out.
        phrases_removed: Phrase nodes taken out (no remaining triple names them).
    """

    rebuilt: bool = False
    passages: int = 0
    triples: int = 0
    phrases: int = 0
    embedded: int = 0
    synonym_pairs: int = 0
    passages_removed: int = 0
    triples_removed: int = 0
    phrases_removed: int = 0


@dataclass
class _Edges:
    """Edge rows: ``key = a << 32 | b`` (a < b), relation count, synonym cosine, contains."""

    keys: np.ndarray
    relation: np.ndarray
    synonym: np.ndarray
    contains: np.ndarray

    @classmethod
    def empty(cls) -> _Edges:
        return cls(
            np.empty(0, np.int64), np.empty(0, np.float64), np.empty(0, np.float64),
            np.empty(0, bool),
        )

    @classmethod
    def join(cls, parts: Sequence[_Edges]) -> _Edges:
        """All rows of ``parts`` with one row per key: relation counts add, the synonym
        cosine is the largest, contains is any."""
        parts = [p for p in parts if len(p.keys)]
        if not parts:
            return cls.empty()
        keys = np.concatenate([p.keys for p in parts])
        order = np.argsort(keys, kind="stable")
        keys = keys[order]
        first = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
        return cls(
            keys[first],
            np.add.reduceat(np.concatenate([p.relation for p in parts])[order], first),
            np.maximum.reduceat(np.concatenate([p.synonym for p in parts])[order], first),
            np.logical_or.reduceat(np.concatenate([p.contains for p in parts])[order], first),
        )

    def ends(self) -> tuple[np.ndarray, np.ndarray]:
        return self.keys >> _SHIFT, self.keys & np.int64(0xFFFFFFFF)

    def weights(self) -> np.ndarray:
        return (
            RELATION_WEIGHT * self.relation
            + SYNONYM_WEIGHT * self.synonym
            + CONTAINS_WEIGHT * self.contains
        )

    def arrays(self) -> dict[str, np.ndarray]:
        return {
            "keys": self.keys, "relation": self.relation, "synonym": self.synonym,
            "contains": self.contains,
        }


def _keys(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    return (np.minimum(a, b) << _SHIFT) | np.maximum(a, b)


def _rows(keys: np.ndarray, *, relation: float = 0.0, synonym: np.ndarray | None = None,
          contains: bool = False) -> _Edges:
    n = len(keys)
    return _Edges(
        keys,
        np.full(n, relation, np.float64),
        np.zeros(n, np.float64) if synonym is None else np.asarray(synonym, np.float64),
        np.full(n, contains, bool),
    )


def _symmetric(a: np.ndarray, b: np.ndarray, w: np.ndarray, n: int) -> tuple[sparse.csr_array, np.ndarray]:
    """CSR of the undirected edges ``a - b`` with weights ``w``, and the weighted degrees."""
    rows, cols, values = np.concatenate([a, b]), np.concatenate([b, a]), np.concatenate([w, w])
    matrix = sparse.csr_array((values, (rows, cols)), shape=(n, n))
    matrix.sum_duplicates()
    return matrix, np.bincount(rows, weights=values, minlength=n)


class PPRGraph:
    """Phrase and passage nodes with relation, synonym and contains edges, as numpy arrays.

    Edges are held as sorted unique pair keys with their parts; the walk reads them as a
    scipy CSR matrix (:meth:`adjacency`, :meth:`transition`); :attr:`graph` gives an
    igraph view for checks and export.

    Attributes:
        embedding_model: Name of the model the phrase vectors come from.
        synonym_threshold: Cosine at or above which two phrases are joined.
        exact_max: Up to this many synonym-eligible phrases the synonym search is exact;
            above it, the phrase ANN (default :data:`~gear_agent.expansion._ppr_synonyms.EXACT_MAX`).

    Example:
        >>> graph = PPRGraph.build(store, embedder, synonym_threshold=0.8)  # doctest: +SKIP
        >>> graph.update(store)  # after adding passages and triples  # doctest: +SKIP
        UpdateStats(rebuilt=False, passages=3, triples=27, phrases=40, embedded=40, ...)
    """

    def __init__(self, embedder: Embedder, synonym_threshold: float = 0.8, *, exact_max: int = EXACT_MAX) -> None:
        if not 0.0 <= synonym_threshold <= 1.0:
            raise ValueError(f"synonym_threshold must be in [0, 1], got {synonym_threshold}")
        self.embedder = embedder
        self.embedding_model = embedder.name
        self.synonym_threshold = float(synonym_threshold)
        self.exact_max = exact_max
        self.stamp: Stamp | None = None
        """The store state this graph reflects (None: none yet, or a file that records
        none: built or compared with the store at the next update)."""
        self._report: GraphProgress = _no_progress
        self._stats = UpdateStats()
        self._kept: dict[str, Any] = {}  # see kept(): survives updates and rebuilds
        self._reset()

    # ---- construction -------------------------------------------------------------
    @classmethod
    def build(
        cls,
        store: Store,
        embedder: Embedder,
        synonym_threshold: float = 0.8,
        progress: GraphProgress | None = None,
        *,
        exact_max: int = EXACT_MAX,
    ) -> PPRGraph:
        """The graph of everything in ``store``."""
        graph = cls(embedder, synonym_threshold, exact_max=exact_max)
        graph.update(store, progress)
        return graph

    def _reset(self) -> None:
        # per vertex and per phrase row: tuples between updates, lists during one (_settle)
        self._names: list[str] | tuple[str, ...] = ()
        self._is_passage: list[bool] | tuple[bool, ...] = ()
        self._phrase_vertex: dict[str, int] = {}
        self._passage_vertex: dict[str, int] = {}
        self._phrases: list[str] | tuple[str, ...] = ()  # phrase names in phrase-row order
        self._phrase_rows: list[int] | tuple[int, ...] = ()  # vertex of each phrase row
        self._vectors = np.zeros((0, self.embedder.dimension), dtype=np.float32)
        self._eligible = np.zeros(0, dtype=bool)
        self._triple_ids: dict[str, int] = {}  # triple id -> row of _triple_ends (see _settle)
        self._triple_ends = np.empty((0, 3), np.int64)  # per triple: head, tail, passage vertex
        self._ends_known = True  # False for a graph read from files without _triple_ends
        self._edges = _Edges.empty()
        self._ann: PhraseANN | None = None
        self._ann_rows = 0  # phrase rows 0.._ann_rows are in the ANN
        # what the last save left out: vertex, phrase and triple marks, edge rows since
        self._saved: tuple[int, int] = (0, 0)
        self._unsaved_triples: list[str] = []
        self._unsaved_edges: list[_Edges] = []
        self._saved_at: Path | None = None
        self._deltas = 0
        self._ann_unsaved = False  # the phrase ANN was rebuilt after its file failed
        self._removed: tuple[list[str], list[str]] = ([], [])  # passages, triples: the next delta replays
        self._needs_base = False  # a removal after unsaved adds: the next save writes the base
        self._saved_stamp: Stamp | None = None
        self._cache: dict[str, Any] = {}

    # ---- reading ------------------------------------------------------------------
    @property
    def generation(self) -> int:
        """The store generation this graph reflects (-1: none)."""
        return -1 if self.stamp is None else self.stamp.generation

    @property
    def n_vertices(self) -> int:
        return len(self._names)

    @property
    def n_edges(self) -> int:
        return len(self._edges.keys)

    @property
    def n_phrases(self) -> int:
        """Phrase nodes (phrase rows of removed phrases are not counted)."""
        return len(self._phrase_vertex)

    @property
    def n_passages(self) -> int:
        return len(self._passage_vertex)

    @property
    def n_triples(self) -> int:
        return len(self._triple_ids)

    def phrase_vertex(self, phrase: str) -> int | None:
        """Vertex of a phrase (normalised here), or None when it is not in the graph."""
        return self._phrase_vertex.get(normalise_entity(phrase))

    def passage_vertex(self, passage_id: str) -> int | None:
        """Vertex of a passage, or None."""
        return self._passage_vertex.get(passage_id)

    def vertex_name(self, vertex: int) -> str:
        return self._names[vertex]

    def passage_vertices(self) -> tuple[np.ndarray, list[str]]:
        """All passage vertices and their passage ids, in the same order."""
        ids = list(self._passage_vertex)
        return np.fromiter(self._passage_vertex.values(), dtype=np.int64, count=len(ids)), ids

    def passage_mask(self) -> np.ndarray:
        """True for passage vertices (cached until the graph changes)."""
        if "mask" not in self._cache:
            self._cache["mask"] = np.asarray(self._is_passage, dtype=bool)
        return self._cache["mask"]

    def phrase_rows(self) -> np.ndarray:
        """The vertex of each phrase row (rows of :meth:`phrase_vectors`; -1 for the row of
        a phrase no triple names any more)."""
        if "rows" not in self._cache:
            self._cache["rows"] = np.asarray(self._phrase_rows, dtype=np.int64)
        return self._cache["rows"]

    def phrase_vectors(self) -> np.ndarray:
        """Unit phrase vectors, one row per phrase (read-only use)."""
        return self._vectors

    def nearest_phrases(self, vector: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``count`` phrase vertices most similar to a unit vector, best first, and their
        cosines: exact below the ANN size, else the phrase ANN's candidates re-scored exactly.
        """
        vector = np.asarray(vector, dtype=np.float32)
        if count <= 0 or not self._phrases:
            return np.empty(0, np.int64), np.empty(0, np.float32)
        if self._ann is not None and self._ann_rows == len(self._phrases):
            matches = self._ann.index.search(vector, max(4 * count, 64))
            rows = np.asarray(matches.keys, dtype=np.int64)[: len(matches)]
        else:
            rows = np.flatnonzero(self.phrase_rows() >= 0)
        cosine = self._vectors[rows] @ vector
        best = np.argsort(-cosine, kind="stable")[:count]
        return self.phrase_rows()[rows[best]], cosine[best]

    def vertex_specificity(self) -> np.ndarray:
        """Per vertex: the number of passages whose triples mention it (0 for passages)."""
        if "specificity" not in self._cache:
            a, b = self._edges.ends()
            mask = self.passage_mask()
            phrase_end = np.where(mask[a], b, a)[self._edges.contains]
            self._cache["specificity"] = np.bincount(phrase_end, minlength=self.n_vertices)
        return self._cache["specificity"]

    def specificity(self, phrase: str) -> int:
        """Number of passages whose triples mention the phrase (0 when unknown)."""
        vertex = self.phrase_vertex(phrase)
        return 0 if vertex is None else int(self.vertex_specificity()[vertex])

    def edge_kinds(self) -> list[tuple[str, str, float, float, bool, float]]:
        """Every edge as ``(name_a, name_b, relation_count, synonym_cosine, contains, weight)``.

        Names are ordered within a pair, and the list is sorted, so two graphs of the
        same content compare equal whatever order their nodes were added in.
        """
        a, b = self._edges.ends()
        weights = self._edges.weights()
        rows = []
        for i in range(self.n_edges):
            x, y = sorted((self._names[int(a[i])], self._names[int(b[i])]))
            rows.append((x, y, float(self._edges.relation[i]), float(self._edges.synonym[i]),
                         bool(self._edges.contains[i]), float(weights[i])))
        return sorted(rows)

    def adjacency(self, *, phrases_only: bool = False) -> tuple[sparse.csr_array, np.ndarray]:
        """The symmetric weighted adjacency matrix (CSR) and each vertex's weighted degree.

        ``phrases_only`` leaves the contains edges out: HippoRAG 1's phrase graph (relation
        and synonym edges), passages isolated. Cached until the graph changes.
        """
        key = "phrase adjacency" if phrases_only else "adjacency"
        if key not in self._cache:
            keep = ~self._edges.contains if phrases_only else slice(None)
            weights = self._edges.weights()[keep]
            a, b = (end[keep] for end in self._edges.ends())
            self._cache[key] = _symmetric(a, b, weights, self.n_vertices)
        return self._cache[key]

    def kept(self, key: str, make: Callable[[], Any]) -> Any:
        """State kept with this graph object across its updates (``make()`` the first time),
        unlike :meth:`derived`: its owner brings it up to date itself (the passage titles of
        :func:`~gear_agent.expansion.ppr_walk.title_pairs`, read only for passages new since)."""
        if key not in self._kept:
            self._kept[key] = make()
        return self._kept[key]

    def derived(self, key: str, compute: Callable[[], Any]) -> Any:
        """``compute()``, kept until the graph next changes (per-graph query-independent data)."""
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]

    def containment(self) -> sparse.csr_array:
        """Symmetric 0/1 matrix of the contains edges: row ``v`` of a phrase vertex lists
        the passages it occurs in (HippoRAG 1's phrase-passage matrix ``P``)."""
        if "containment" not in self._cache:
            keep = self._edges.contains
            a, b = (end[keep] for end in self._edges.ends())
            self._cache["containment"] = _symmetric(a, b, np.ones(len(a)), self.n_vertices)[0]
        return self._cache["containment"]

    def transition(self) -> tuple[sparse.csr_array, np.ndarray]:
        """The column-stochastic walk matrix ``M[j, i] = w_ij / s_i`` and the dangling mask.

        ``s_i`` is the weighted degree of vertex ``i``; the mask marks vertices without
        edges (their columns are zero). Cached until the graph next changes.
        """
        if "transition" not in self._cache:
            matrix, strength = self.adjacency()
            dangling = strength <= 0
            scale = np.divide(1.0, strength, out=np.zeros(len(strength)), where=~dangling)
            self._cache["transition"] = (sparse.csr_array(matrix * scale[None, :]), dangling)
        return self._cache["transition"]

    @property
    def graph(self) -> Any:
        """An igraph view (vertex ``name``, edge ``weight``), built on first use."""
        if "igraph" not in self._cache:
            import igraph as ig

            a, b = self._edges.ends()
            view = ig.Graph(n=self.n_vertices, edges=np.column_stack([a, b]).tolist(),
                            directed=False)
            view.vs["name"] = list(self._names)
            view.es["weight"] = self._edges.weights().tolist()
            self._cache["igraph"] = view
        return self._cache["igraph"]

    def node_names(self) -> list[str]:
        """Vertex names in vertex order."""
        return list(self._names)

    def nbytes(self) -> int:
        """Bytes of the phrase vectors, the edge arrays and the walk matrix."""
        edges = sum(array.nbytes for array in self._edges.arrays().values())
        matrix, strength = self.adjacency()
        walk = matrix.data.nbytes + matrix.indices.nbytes + matrix.indptr.nbytes + strength.nbytes
        return int(self._vectors.nbytes + edges + walk)

    # ---- updating -----------------------------------------------------------------
    def update(self, store: Store, progress: GraphProgress | None = None) -> UpdateStats:
        """Bring the graph to the store's latest commit: take out what the commits since
        :attr:`generation` removed and take in what they added (or rebuild, see the module).

        Embeds only phrases the graph does not hold; a rebuild reuses the vectors of the
        phrases it held. The generation and the records are read in one snapshot of the
        store, so the graph reflects exactly one commit.

        Args:
            store: The index.
            progress: Called as ``progress(stage, done, total)`` while it works.

        Raises:
            StoreError: A triple names a passage the store does not hold.
        """
        self._report, self._stats = progress or _no_progress, UpdateStats()
        try:
            with store.snapshot():
                bring_up_to_date(self, store)
            return self._stats
        finally:
            self._report = _no_progress

    def can_apply(self, changes: Changes) -> bool:
        """Adds are taken in place, and so are removals when the graph knows what each of
        its triples joined (a graph read from files of format 3 or 4 does not: rebuilt)."""
        return self.generation >= 0 and (self._ends_known or not changes.removes_anything)

    def apply(self, store: Store, changes: Changes) -> None:
        """Take out the passages and triples ``changes`` removed (:meth:`_remove`), then take
        in those it added (ids the graph holds are skipped)."""
        report = self._report
        removed = UpdateStats()
        if changes.removes_anything:
            removed = self._remove(changes.passages_removed, changes.triples_removed)
        report("read", 0, 2)
        passage_ids = [p for p in changes.passages_added if p not in self._passage_vertex]
        report("read", 1, 2)
        wanted = [t for t in changes.triples_added if t not in self._triple_ids]
        batches = ([(t.id, t.subject, t.object, t.passage_id) for t in store.triples.get(wanted[i : i + READ_BATCH])]
                   for i in range(0, len(wanted), READ_BATCH))
        added = self._add(passage_ids, batches, report)
        self._stats = replace(added, passages_removed=removed.passages_removed,
                              triples_removed=removed.triples_removed,
                              phrases_removed=removed.phrases_removed)
        report("read", 2, 2)

    def _remove(self, passage_ids: Sequence[str], triple_ids: Sequence[str]) -> UpdateStats:
        """Take out passages and triples, as a build without them would have the graph.

        Each removed triple gives back what it added (kept per triple in
        :attr:`_triple_ends`, since the store no longer holds it): one relation count on its
        subject-object pair, and its contains edges where no other triple of its passage names
        the phrase. A removed passage takes its triples with it (a backend that lists only the
        passages is enough). A phrase no remaining triple names is taken out with its synonym
        edges (a build would not have it). The remaining vertices are numbered again in their
        order, so the walk reads exactly a build's graph (vertices in another order); the
        phrase rows keep their numbers (the phrase ANN's keys): a removed phrase's row stays,
        named ``""``, out of every search.
        """
        replayable = (self._saved_at is not None and not self._needs_base and not self._unsaved_triples
                      and self._saved == (self.n_vertices, len(self._phrases)))
        passage_ids = [p for p in passage_ids if p in self._passage_vertex]
        triple_ids = [t for t in triple_ids if t in self._triple_ids]
        passages = {self._passage_vertex[p] for p in passage_ids}
        rows = [self._triple_ids.pop(t) for t in triple_ids]
        ends = self._triple_ends
        live = ends[:, 2] >= 0
        gone = np.zeros(len(ends), bool)
        gone[np.asarray(rows, np.int64)] = True
        if passages:
            gone |= live & np.isin(ends[:, 2], np.fromiter(passages, np.int64, len(passages)))
        gone &= live
        if not gone.any() and not passages:
            return UpdateStats()
        if passages:  # triples the feed did not list, taken with their passage
            for tid in [t for t, r in self._triple_ids.items() if gone[r]]:
                del self._triple_ids[tid]
                triple_ids.append(tid)
        h, t, p = ends[gone].T
        remain = ends[live & ~gone]
        edges = self._edges
        relation = edges.relation.copy()
        joined = (h >= 0) & (t >= 0) & (h != t)
        keys, counts = np.unique(_keys(h[joined], t[joined]), return_counts=True)
        relation[np.searchsorted(edges.keys, keys)] -= counts
        contains = edges.contains.copy()
        touched = np.unique(np.concatenate([_keys(p[h >= 0], h[h >= 0]), _keys(p[t >= 0], t[t >= 0])]))
        r_h, r_t, r_p = remain.T
        kept = np.concatenate([_keys(r_p[r_h >= 0], r_h[r_h >= 0]), _keys(r_p[r_t >= 0], r_t[r_t >= 0])])
        contains[np.searchsorted(edges.keys, touched)] = np.isin(touched, kept)
        # vertices kept: passages not removed, phrases some remaining triple names
        alive = np.asarray(self._is_passage, bool).copy()
        if passages:
            alive[np.fromiter(passages, np.int64, len(passages))] = False
        named = np.concatenate([r_h, r_t])
        alive[named[named >= 0]] = True
        self._triple_ends[gone] = -1
        stats = UpdateStats(passages_removed=len(passages), triples_removed=int(gone.sum()),
                            phrases_removed=int((~alive).sum()) - len(passages))
        a, b = edges.ends()
        keep = alive[a] & alive[b] & ((relation > 0) | (edges.synonym > 0) | contains)
        number = np.cumsum(alive) - 1
        self._edges = _Edges(
            _keys(number[a[keep]], number[b[keep]]), relation[keep], edges.synonym[keep], contains[keep],
        )  # the numbering keeps the order, so the keys stay sorted
        ends = self._triple_ends
        self._triple_ends = np.where(ends >= 0, number[np.maximum(ends, 0)], -1)
        self._renumber(alive, number)
        if replayable:  # nothing unsaved before it: the next delta records it, a load replays it
            self._removed[0].extend(passage_ids)
            self._removed[1].extend(triple_ids)
            self._saved = (self.n_vertices, len(self._phrases))
        else:  # the unsaved rows are numbered as before the removal: a delta cannot hold them
            self._unsaved_triples, self._unsaved_edges = [], []
            self._needs_base = True
        return stats

    def _renumber(self, alive: np.ndarray, number: np.ndarray) -> None:
        """Keep the vertices ``alive``, numbered ``number``; a removed phrase's row is
        renamed ``""``, out of the synonym search and the phrase ANN."""
        dead_rows = [r for r, v in enumerate(self._phrase_rows) if v >= 0 and not alive[v]]
        names = [n for n, keep in zip(self._names, alive) if keep]
        self._is_passage = tuple(p for p, keep in zip(self._is_passage, alive) if keep)
        self._passage_vertex = {n: int(number[v]) for n, v in self._passage_vertex.items() if alive[v]}
        self._phrase_vertex = {n: int(number[v]) for n, v in self._phrase_vertex.items() if alive[v]}
        phrases = list(self._phrases)
        for r in dead_rows:
            phrases[r] = ""
        self._names, self._phrases = tuple(names), tuple(phrases)
        self._phrase_rows = tuple(int(number[v]) if v >= 0 and alive[v] else -1 for v in self._phrase_rows)
        if dead_rows:
            held = [r for r in dead_rows if r < self._ann_rows and self._eligible[r]]
            self._eligible = self._eligible.copy()
            self._eligible[dead_rows] = False
            if self._ann is not None and held:  # its file keeps them: a load removes them again
                self._ann.index.remove(np.asarray(held, np.uint64))
        self._cache = {}

    def rebuild(self, store: Store, generation: int) -> None:
        """Bring the graph to ``generation`` by comparing it with everything in ``store``: the
        passages and triples it lacks are added when it holds none the store has lost (a
        store that keeps no change feed), else it is built again, reusing the vectors of the
        phrases held."""
        report = self._report
        report("read", 0, 2)
        passage_ids = store.passages.ids()
        report("read", 1, 2)
        if self.generation >= 0 and self.n_vertices and set(self._passage_vertex) <= set(passage_ids):
            batches = list(store.triples.batches(READ_BATCH))
            if self._triple_ids.keys() <= {t[0] for batch in batches for t in batch}:
                self._stats = self._add(passage_ids, batches, report)
                report("read", 2, 2)
                return
        rebuilt = self.n_vertices > 0 or self.generation >= 0
        known = {p: v for p, v in zip(self._phrases, self._vectors) if p} if self._phrases else None
        self._reset()
        stats = self._add(passage_ids, store.triples.batches(READ_BATCH), report, known)
        report("read", 2, 2)
        self._stats = replace(stats, rebuilt=rebuilt)

    def _add(
        self,
        passage_ids: Sequence[str],
        batches: Iterable[Sequence[tuple[str, str, str, str]]],
        report: GraphProgress,
        known: dict[str, np.ndarray] | None = None,
    ) -> UpdateStats:
        """Add passages, and triples given as (id, subject, object, passage id) batches;
        ``known`` holds phrase vectors not to embed again."""
        self._thaw()
        try:
            return self._add_thawed(passage_ids, batches, report, known)
        finally:
            self._settle()

    def _add_thawed(
        self,
        passage_ids: Sequence[str],
        batches: Iterable[Sequence[tuple[str, str, str, str]]],
        report: GraphProgress,
        known: dict[str, np.ndarray] | None,
    ) -> UpdateStats:
        new_passages = [pid for pid in dict.fromkeys(passage_ids) if pid not in self._passage_vertex]
        for pid in new_passages:
            self._passage_vertex[pid] = self._new_vertex(pid, passage=True)
        first_new_row = len(self._phrases)
        heads, tails, owners, taken = [], [], [], 0
        row = len(self._triple_ends)
        for batch in batches:
            h, t, o = (np.empty(len(batch), np.int64) for _ in range(3))
            for i, (tid, subject, obj, pid) in enumerate(batch):
                if tid in self._triple_ids:
                    h[i] = -2  # held already: skipped below
                    continue
                passage = self._passage_vertex.get(pid)
                if passage is None:
                    raise StoreError(
                        f"triple {tid} names passage {pid}, which the store does not list; "
                        "reopen the store and update again"
                    )
                h[i], t[i], o[i] = self._phrase(normalise_entity(subject)), self._phrase(normalise_entity(obj)), passage
                self._triple_ids[tid] = row
                row += 1
                self._unsaved_triples.append(tid)
            keep = h != -2
            heads.append(h[keep])
            tails.append(t[keep])
            owners.append(o[keep])
            taken += int(keep.sum())
        fresh = self._phrases[first_new_row:]
        embedded = self._embed_rows(first_new_row, known or {}, report)
        h, t, o = (np.concatenate([np.empty(0, np.int64), *x]) for x in (heads, tails, owners))
        self._triple_ends = np.concatenate([self._triple_ends, np.column_stack([h, t, o])])
        batch = [self._link(h, t, o, report)]
        synonyms = self._synonyms(first_new_row, report)
        batch.append(synonyms)
        added = _Edges.join(batch)
        self._edges = _Edges.join([self._edges, added])
        self._unsaved_edges.append(added)
        self._cache = {}
        return UpdateStats(
            False, len(new_passages), taken, len(fresh), embedded, len(np.unique(synonyms.keys)),
        )

    def _phrase(self, phrase: str) -> int:
        """The vertex of ``phrase`` (a new one for a phrase not held); -1 for an empty phrase."""
        if not phrase:
            return -1
        vertex = self._phrase_vertex.get(phrase)
        if vertex is None:
            vertex = self._phrase_vertex[phrase] = self._new_vertex(phrase, passage=False)
            self._phrases.append(phrase)  # type: ignore[union-attr] - thawed by _add
            self._phrase_rows.append(vertex)  # type: ignore[union-attr]
        return vertex

    def _embed_rows(self, first_new_row: int, known: dict[str, np.ndarray], report: GraphProgress) -> int:
        """Vectors of the phrase rows from ``first_new_row`` on: from ``known`` where there,
        else embedded now, written into one array grown once; returns how many were embedded."""
        fresh = self._phrases[first_new_row:]
        dimension = self.embedder.dimension
        vectors = np.empty((len(self._phrases), dimension), dtype=np.float32)
        vectors[:first_new_row] = self._vectors[:first_new_row]
        missing = []
        for row, phrase in enumerate(fresh, start=first_new_row):
            vector = known.get(phrase)
            if vector is None:
                missing.append(row)
            else:
                vectors[row] = vector
        report("embed", 0, len(missing))
        for start in range(0, len(missing), EMBED_BATCH):
            rows = missing[start : start + EMBED_BATCH]
            chunk = [self._phrases[r] for r in rows]
            found = np.asarray(self.embedder.embed(chunk), dtype=np.float32)
            if found.shape != (len(chunk), dimension):
                raise ValueError(
                    f"embedder {self.embedder.name!r} returned shape {found.shape} for "
                    f"{len(chunk)} phrases; expected ({len(chunk)}, {dimension})"
                )
            vectors[rows] = found
            report("embed", start + len(chunk), len(missing))
        self._vectors = vectors
        if fresh:
            eligible = np.fromiter((synonym_eligible(p) for p in fresh), bool, len(fresh))
            self._eligible = np.concatenate([self._eligible, eligible])
        return len(missing)

    def _link(self, h: np.ndarray, t: np.ndarray, p: np.ndarray, report: GraphProgress) -> _Edges:
        """Relation rows (subject, object) and contains rows (passage, phrase) of triples
        given as head, tail and passage vertices (-1: an empty phrase)."""
        report("link", 0, len(h))
        relation = (h >= 0) & (t >= 0) & (h != t)
        ends = np.concatenate([h, t])
        owners = np.concatenate([p, p])
        edges = _Edges.join([
            _rows(_keys(h[relation], t[relation]), relation=1.0),
            _rows(_keys(owners[ends >= 0], ends[ends >= 0]), contains=True),
        ])
        report("link", len(h), len(h))
        return edges

    def _synonyms(self, first_new_row: int, report: GraphProgress) -> _Edges:
        """Synonym rows between the phrases from ``first_new_row`` on and all phrases."""
        new = np.flatnonzero(self._eligible[first_new_row:]) + first_new_row
        if int(self._eligible.sum()) <= self.exact_max and self._ann is None:
            report("synonyms", 0, len(new))
            a, b, cosine = exact_pairs(
                self._vectors, self._eligible, first_new_row, self.synonym_threshold
            )
            report("synonyms", len(new), len(new))
        else:
            ann = self._phrase_ann(first_new_row)
            found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
            step = 16_384
            for start in range(0, len(new), step):
                rows = new[start : start + step]
                ann.add(self._vectors, rows)
                found.append(ann.pairs(self._vectors, rows, self.synonym_threshold))
                report("synonyms", min(start + step, len(new)), len(new))
            self._ann_rows = len(self._phrases)
            a = np.concatenate([np.empty(0, np.int64), *(f[0] for f in found)])
            b = np.concatenate([np.empty(0, np.int64), *(f[1] for f in found)])
            cosine = np.concatenate([np.empty(0, np.float32), *(f[2] for f in found)])
        rows = np.asarray(self._phrase_rows, dtype=np.int64)
        keys = _keys(rows[np.asarray(a, np.int64)], rows[np.asarray(b, np.int64)])
        return _Edges.join([_rows(keys, synonym=np.asarray(cosine, np.float64))])

    def _phrase_ann(self, first_new_row: int) -> PhraseANN:
        """The phrase ANN holding every eligible row before ``first_new_row``."""
        if self._ann is None:
            self._ann, self._ann_rows = PhraseANN(self.embedder.dimension), 0
        if self._ann_rows < first_new_row:
            rows = np.flatnonzero(self._eligible[self._ann_rows : first_new_row]) + self._ann_rows
            self._ann.add(self._vectors, rows)
            self._ann_rows = first_new_row
        return self._ann

    def _new_vertex(self, name: str, *, passage: bool) -> int:
        self._names.append(name)  # type: ignore[union-attr] - thawed by _add
        self._is_passage.append(passage)  # type: ignore[union-attr]
        return len(self._names) - 1

    def _thaw(self) -> None:
        """The per-vertex and per-phrase sequences as lists, to append to."""
        self._names, self._is_passage = list(self._names), list(self._is_passage)
        self._phrases, self._phrase_rows = list(self._phrases), list(self._phrase_rows)

    def _settle(self) -> None:
        """The per-vertex and per-phrase sequences as tuples again.

        A tuple of strings, booleans or ints leaves the garbage collector's view at the
        first collection that sees it; a list never does, and every full collection walks
        each of its entries. At 150k passages these hold 6.2M entries: each full collection
        took 120 to 140 ms, which a question that triggered one paid (the first-pass p99 of
        ``ppr``, docs/storage.md). The triple ids are dict keys for the same reason (a dict
        of strings to None is not tracked either).
        """
        self._names, self._is_passage = tuple(self._names), tuple(self._is_passage)
        self._phrases, self._phrase_rows = tuple(self._phrases), tuple(self._phrase_rows)

    # ---- persistence --------------------------------------------------------------
    def save(self, path: Path, progress: GraphProgress | None = None) -> None:
        """Save to ``path``: append a delta segment when ``path`` holds this graph's
        previous save (up to :data:`~ppr_graph_files.MAX_DELTAS`), else write a new base.

        See :mod:`gear_agent.expansion.ppr_graph_files` for the files.
        """
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        report = progress or _no_progress
        report("save", 0, 1)
        with files.saving(path):
            manifest = None
            if self._saved_at == path and self._deltas < files.MAX_DELTAS:
                try:
                    manifest = files.read_manifest(path)
                except ValueError:
                    manifest = None
            if manifest is None or self._needs_base or not self._wrote(manifest):
                self._save_base(path)
            else:
                self._save_delta(path, manifest)
        report("save", 1, 1)

    def _wrote(self, manifest: dict[str, Any]) -> bool:
        """Whether ``manifest`` is the one this graph's last save wrote (another process may
        have saved its own graph there since: a delta of this graph would not fit it)."""
        return (Stamp.from_dict(manifest.get("stamp")) == self._saved_stamp
                and len(manifest.get("segments", ())) == self._deltas + 1)

    def _segment(self, vertex_from: int, phrase_from: int, triples: list[str],
                 edges: _Edges) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        rows = np.fromiter((self._triple_ids[t] for t in triples), np.int64, len(triples))
        meta = {
            "names": self._names[vertex_from:],
            "is_passage": self._is_passage[vertex_from:],
            "phrases": self._phrases[phrase_from:],
            "triple_ids": triples,
        }
        return meta, {"vectors": self._vectors[phrase_from:], "triple_ends": self._triple_ends[rows],
                      **edges.arrays()}

    def _save_base(self, path: Path) -> None:
        for stale in range(1, files.MAX_DELTAS + 2):
            files.delta_path(path, stale).unlink(missing_ok=True)
        meta, arrays = self._segment(0, 0, sorted(self._triple_ids), self._edges)
        checksum = files.write_segment(path, meta, arrays)
        ann_entry = None
        if self._ann is not None:
            ann_file = files.ann_path(path)
            digest = write_atomically(ann_file, self._ann.save)
            ann_entry = {"file": ann_file.name, "checksum": digest, "rows": self._ann_rows}
        files.write_manifest(path, {
            "embedding_model": self.embedding_model,
            "synonym_threshold": self.synonym_threshold,
            "generation": self.generation,
            "stamp": None if self.stamp is None else self.stamp.as_dict(),
            "segments": [{"file": path.name, "checksum": checksum}],
            "ann": ann_entry,
        })
        self._ann_unsaved = False
        self._mark_saved(path, deltas=0)

    def _save_delta(self, path: Path, manifest: dict[str, Any]) -> None:
        vertex_from, phrase_from = self._saved
        if self._ann_unsaved and self._ann is not None:
            ann_file = files.ann_path(path)
            digest = write_atomically(ann_file, self._ann.save)
            manifest["ann"] = {"file": ann_file.name, "checksum": digest, "rows": self._ann_rows}
            self._ann_unsaved = False
        manifest["generation"] = self.generation
        manifest["stamp"] = None if self.stamp is None else self.stamp.as_dict()
        removed_passages, removed_triples = self._removed
        if vertex_from == self.n_vertices and not self._unsaved_triples and not (removed_passages or removed_triples):
            files.write_manifest(path, manifest)  # a newer commit that added nothing, or the ANN
            self._mark_saved(path, deltas=self._deltas)
            return
        number = len(manifest["segments"])
        target = files.delta_path(path, number)
        meta, arrays = self._segment(
            vertex_from, phrase_from, self._unsaved_triples, _Edges.join(self._unsaved_edges)
        )
        if removed_passages or removed_triples:  # replayed before this segment's rows (load)
            meta = {**meta, "removed_passages": removed_passages, "removed_triples": removed_triples}
        checksum = files.write_segment(target, meta, arrays)
        manifest["segments"].append({"file": target.name, "checksum": checksum})
        files.write_manifest(path, manifest)
        self._mark_saved(path, deltas=number)

    def _mark_saved(self, path: Path, deltas: int) -> None:
        self._saved = (self.n_vertices, len(self._phrases))
        self._removed, self._needs_base = ([], []), False
        self._saved_stamp = self.stamp
        self._unsaved_triples, self._unsaved_edges = [], []
        self._saved_at, self._deltas = path, deltas

    @classmethod
    def load(
        cls, path: Path, embedder: Embedder, synonym_threshold: float = 0.8, *, exact_max: int = EXACT_MAX
    ) -> PPRGraph:
        """A graph saved with :meth:`save`; call :meth:`update` to catch up with the store.

        Raises:
            ValueError: The files are missing, fail their checksums, or were built with
                another embedding model or synonym threshold (build a new one instead).
        """
        path = Path(path)
        manifest = files.read_manifest(path)
        if (
            manifest["embedding_model"] != embedder.name
            or manifest["synonym_threshold"] != synonym_threshold
        ):
            raise ValueError(
                f"{path} was built with model {manifest['embedding_model']!r} and synonym "
                f"threshold {manifest['synonym_threshold']}; asked for {embedder.name!r} and "
                f"{synonym_threshold}. Delete the file to rebuild it."
            )
        graph = cls(embedder, synonym_threshold, exact_max=exact_max)
        pending: list[tuple[dict[str, Any], dict[str, np.ndarray]]] = []
        for entry in manifest["segments"]:
            meta, arrays = files.read_segment(path.with_name(entry["file"]), entry["checksum"])
            if meta.get("removed_passages") or meta.get("removed_triples"):
                graph._take(pending)  # the removal is replayed on the graph it was made on
                pending = []
                if not graph._ends_known:
                    raise ValueError(f"{path}: a segment removes triples its graph holds no ends of")
                graph._remove(meta.get("removed_passages", ()), meta.get("removed_triples", ()))
            pending.append((meta, arrays))
        graph._take(pending)
        graph.stamp = Stamp.from_dict(manifest.get("stamp"))  # None in a file of format 3
        ann = manifest.get("ann")
        problem = None
        if ann and files.ann_is_valid(path, ann):
            try:
                graph._ann = PhraseANN.restore(path.with_name(ann["file"]), embedder.dimension)
                graph._ann_rows = int(ann["rows"])
            except (ValueError, RuntimeError, OSError) as exc:
                problem = str(exc)
        elif ann:
            problem = f"{ann.get('file')} is missing or fails its checksum"
        if graph._ann is not None:  # rows removed since the ANN file was written leave it
            dead = [r for r, v in enumerate(graph._phrase_rows[: graph._ann_rows]) if v < 0]
            graph._ann.index.remove(np.asarray(dead, np.uint64))
        graph._mark_saved(path, deltas=len(manifest["segments"]) - 1)
        if problem is not None:  # rebuilt from the phrase vectors now, and saved with the graph
            logger.warning("rebuilding the phrase ANN of %s: %s", path, problem)
            graph._ann, graph._ann_rows = None, 0
            graph._phrase_ann(len(graph._phrases))
            graph._ann_unsaved = True
        return graph

    def _take(self, segments: Sequence[tuple[dict[str, Any], dict[str, np.ndarray]]]) -> None:
        """Append saved segments (vertices, phrases and vectors, triples, edge rows)."""
        if not segments:
            return
        vectors, edges, ends = [self._vectors], [self._edges], [self._triple_ends]
        first_row = len(self._phrases)
        self._thaw()
        for meta, arrays in segments:
            first = len(self._names)
            self._names.extend(meta["names"])  # type: ignore[union-attr] - thawed above
            self._is_passage.extend(bool(x) for x in meta["is_passage"])  # type: ignore[union-attr]
            for offset, (name, passage) in enumerate(zip(meta["names"], meta["is_passage"])):
                (self._passage_vertex if passage else self._phrase_vertex)[name] = first + offset
            self._phrases.extend(meta["phrases"])  # type: ignore[union-attr]
            first_triple = sum(len(e) for e in ends)
            self._triple_ids.update((t, first_triple + i) for i, t in enumerate(meta["triple_ids"]))
            if "triple_ends" in arrays:  # format 5
                ends.append(np.asarray(arrays["triple_ends"], np.int64).reshape(-1, 3))
            else:
                self._ends_known = False
                ends.append(np.full((len(meta["triple_ids"]), 3), -1, np.int64))
            vectors.append(np.asarray(arrays["vectors"], dtype=np.float32))
            edges.append(_Edges(arrays["keys"], arrays["relation"], arrays["synonym"],
                                arrays["contains"]))
        fresh = self._phrases[first_row:]
        self._phrase_rows.extend(self._phrase_vertex.get(p, -1) for p in fresh)  # type: ignore[union-attr] - "": removed
        self._settle()
        self._triple_ends = np.concatenate(ends)
        self._vectors = np.vstack(vectors)
        self._eligible = np.concatenate(
            [self._eligible, np.fromiter((synonym_eligible(p) for p in fresh), bool, len(fresh))])
        self._edges = _Edges.join(edges)
        self._cache = {}

    @property
    def unsaved(self) -> bool:
        """Whether the graph holds changes its last save does not (a rebuilt phrase ANN included)."""
        return (self._ann_unsaved or self._saved_stamp != self.stamp
                or self._saved != (self.n_vertices, len(self._phrases)) or bool(self._unsaved_triples)
                or self._needs_base or bool(self._removed[0] or self._removed[1]))


def load_or_build(
    store: Store,
    embedder: Embedder,
    synonym_threshold: float = 0.8,
    path: Path | None = None,
    *,
    graph: PPRGraph | None = None,
    progress: GraphProgress | None = None,
    exact_max: int = EXACT_MAX,
    compact: bool = True,
) -> PPRGraph:
    """The PPR graph of ``store``, brought up to date: ``graph``, else the one saved at
    ``path``, else a new one; saved to ``path`` when it changed (a delta segment when the
    file holds its previous save).

    A file that cannot be read, fails its checksum, or was built with another model or
    threshold is rebuilt (with a warning); a file that cannot be written is left as it is
    (with a warning), since it is only a cache.

    With ``compact``, a graph built from scratch here and saved is read back from its files
    (the build's objects are freed, and the graph is laid out as a loading process lays it
    out), and the heap the build or load freed is handed back to the system
    (:func:`_return_free_heap`): a process that built the graph then holds what one that
    loaded it holds (``benchmarks/graph_build.py``). ``gear index``, which exits after the
    build, passes False.
    """
    held = graph is not None  # kept in memory: an update, not a build or a load
    if graph is None and path is not None and files.manifest_path(Path(path)).is_file():
        try:
            graph = PPRGraph.load(path, embedder, synonym_threshold, exact_max=exact_max)
        except ValueError as exc:
            logger.warning("rebuilding the PPR graph: %s", exc)
    if graph is None:
        graph = PPRGraph(embedder, synonym_threshold, exact_max=exact_max)
    built = graph.generation < 0 or graph.n_vertices == 0
    stats = graph.update(store, progress)
    built = built or stats.rebuilt
    saved = False
    if path is not None and (graph.unsaved or not Path(path).is_file()):
        try:
            graph.save(path, progress)
            saved = True
        except OSError as exc:
            logger.warning("could not cache the PPR graph at %s: %s", path, exc)
    if compact and built and saved:
        stamp = graph.stamp
        graph = None  # freed before its copy is read
        try:
            graph = PPRGraph.load(path, embedder, synonym_threshold, exact_max=exact_max)  # type: ignore[arg-type]
        except ValueError as exc:  # replaced meanwhile by another process's save: build again
            logger.warning("could not read back the PPR graph just saved (%s); building it again", exc)
            return load_or_build(store, embedder, synonym_threshold, None, progress=progress,
                                 exact_max=exact_max, compact=False)
        if graph.stamp != stamp:
            graph.update(store, progress)
    if compact and (built or not held):
        _return_free_heap()
    return graph


def _return_free_heap() -> None:
    """Hand the C heap's free pages back to the system (glibc's ``malloc_trim``): a build
    or a load frees hundreds of MB of temporaries that glibc otherwise keeps (at 20k
    passages: 150 MB after a build, 50 MB after a load). A no-op without glibc."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if name is None:
        return
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return
    trim(0)


def cache_path(store: Store) -> Path | None:
    """``ppr-graph.npz`` in the store's folder of derived caches (an embedded index's own
    folder; a local folder per cluster and prefix for Elasticsearch); None where the store
    keeps none."""
    from gear_agent.store.derived_files import PPR_GRAPH_FILE

    folder = store.derived_dir
    return None if folder is None else Path(folder) / PPR_GRAPH_FILE


def prepare_cache(
    store: Store, embedder: Embedder, synonym_threshold: float = 0.8, progress: GraphProgress | None = None,
) -> PPRGraph | None:
    """Bring the saved graph of ``store`` up to date now and save it: the write path's last
    step (``gear index`` ends with it), so the first ``ppr`` query loads a graph of its
    commit instead of building one. None where the store keeps no folder for it.

    Example:
        >>> prepare_cache(store, embedder, 0.8, board.graph_stages())  # doctest: +SKIP
    """
    path = cache_path(store)
    if path is None:
        return None
    return load_or_build(store, embedder, synonym_threshold, path, progress=progress, compact=False)


def rebuild_cache(
    store: Store, embedder: Embedder, synonym_threshold: float = 0.8,
    progress: GraphProgress | None = None, path: Path | None = None,
) -> PPRGraph:
    """Build the graph of ``store`` anew and save it over its cache (``gear check
    --repair``): the files of the previous cache are not read, its phrase ANN included.

    Raises:
        StoreError: the backend keeps no folder for derived files and no ``path`` is given.
    """
    target = Path(path) if path is not None else cache_path(store)
    if target is None:
        raise StoreError(f"the {store.backend} backend keeps no PPR graph cache to rebuild")
    graph = PPRGraph(embedder, synonym_threshold)
    graph.update(store, progress)
    graph.save(target, progress)
    return graph
