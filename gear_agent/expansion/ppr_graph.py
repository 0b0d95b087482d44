"""The knowledge graph that Personalized PageRank walks (HippoRAG 2, Gutiérrez et al., 2025, section 3).

Nodes:

* a **phrase** node per distinct triple subject or object, named by
  :func:`~gear_agent.text.tokenizer.normalise_entity` (lower case, single spaces);
  empty names are left out;
* a **passage** node per stored passage, named by the passage id.

Edges (undirected, one igraph edge per node pair, its ``weight`` the sum of what joins the pair):

* **relation**: the subject and object of a triple. Weight ``2 x count``, the number of
  triples (over all passages) joining the pair. HippoRAG 2 adds both directions of every
  triple as separate edges of its undirected graph, so its effective weight is twice the
  count; we store that sum once. A triple whose subject and object are the same phrase
  adds no edge (HippoRAG 2 drops self-loops too).
* **synonym**: two phrases whose embedding cosine is at least the threshold (tau = 0.8).
  Weight ``2 x cosine``, again HippoRAG 2's two directions summed. Only phrases with at
  least three letters or digits take part (HippoRAG 2 lets such short phrases receive
  but not originate synonym edges; we leave them out both ways). The search is a blocked
  matrix product of the new phrases against all phrases, thresholded block by block, so
  no all-pairs matrix is ever held. There is no per-phrase cap: HippoRAG 2 stops at 101
  neighbours, which a cap would need; on the MuSiQue slice the most any phrase has is 34,
  and without a cap the edge set does not depend on the order passages arrived in. Where
  a pair is both a relation and a synonym, the weights add (HippoRAG 2 keeps the synonym
  score only, an accident of its dict update).
* **contains**: a passage and each phrase of the triples extracted from it. Weight 1.

The graph grows with :meth:`PPRGraph.update`: it embeds only phrases it does not hold yet and
adds only new nodes and edges (new synonym pairs are searched between the new phrases and
all phrases). Deleted passages or triples are handled by a rebuild from the store, which
reuses the vectors of the phrases the graph held, so a rebuild embeds nothing again.

:meth:`PPRGraph.save` writes the whole graph with its phrase embeddings to one ``.npz``
file (atomically); :meth:`PPRGraph.load` reads it back and :meth:`update` then brings it up
to date with the store.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import igraph as ig
import numpy as np
from scipy import sparse

from gear_agent.embedding.base import Embedder
from gear_agent.store.base import Store, StoreError
from gear_agent.text.tokenizer import normalise_entity
from gear_agent.types import Passage, Triple

logger = logging.getLogger(__name__)

FORMAT_VERSION = 1
RELATION_WEIGHT = 2.0
"""Weight per triple joining two phrases (HippoRAG 2's two directed edges, summed)."""
SYNONYM_WEIGHT = 2.0
"""Multiplier of the cosine on a synonym edge (HippoRAG 2's two directed edges, summed)."""
CONTAINS_WEIGHT = 1.0
"""Weight of a passage-phrase edge (HippoRAG 2)."""
SYNONYM_BLOCK_ROWS = 512
"""Phrases per block of the synonym search; a block holds ``rows x phrases`` floats."""

_ALNUM = re.compile(r"[^\W_]", re.UNICODE)


def synonym_eligible(phrase: str) -> bool:
    """True when the phrase has at least three letters or digits (HippoRAG 2's rule).

    Example:
        >>> synonym_eligible("u.s"), synonym_eligible("usa")
        (False, True)
    """
    return len(_ALNUM.findall(phrase)) >= 3


@dataclass(frozen=True)
class UpdateStats:
    """What one :meth:`PPRGraph.update` did.

    Attributes:
        rebuilt: True when stored records had been deleted, so the graph was rebuilt.
        passages: Passage nodes added.
        triples: Triples newly taken in.
        phrases: Phrase nodes added.
        embedded: Phrases embedded (a phrase the graph holds is never embedded again).
        synonym_pairs: Synonym pairs added.
    """

    rebuilt: bool = False
    passages: int = 0
    triples: int = 0
    phrases: int = 0
    embedded: int = 0
    synonym_pairs: int = 0


class PPRGraph:
    """Phrase and passage nodes with relation, synonym and contains edges, in python-igraph.

    Attributes:
        graph: The undirected igraph graph; vertex attribute ``name``, edge attribute ``weight``.
        embedding_model: Name of the model the phrase vectors come from.
        synonym_threshold: Cosine at or above which two phrases are joined.

    Example:
        >>> graph = PPRGraph.build(store, embedder, synonym_threshold=0.8)  # doctest: +SKIP
        >>> graph.update(store)  # after adding passages and triples  # doctest: +SKIP
        UpdateStats(rebuilt=False, passages=3, triples=27, phrases=40, embedded=40, ...)
    """

    def __init__(self, embedder: Embedder, synonym_threshold: float = 0.8) -> None:
        if not 0.0 <= synonym_threshold <= 1.0:
            raise ValueError(f"synonym_threshold must be in [0, 1], got {synonym_threshold}")
        self.embedder = embedder
        self.embedding_model = embedder.name
        self.synonym_threshold = float(synonym_threshold)
        self._reset()

    # ---- construction -------------------------------------------------------------
    @classmethod
    def build(cls, store: Store, embedder: Embedder, synonym_threshold: float = 0.8) -> PPRGraph:
        """The graph of everything in ``store``."""
        graph = cls(embedder, synonym_threshold)
        graph.update(store)
        return graph

    def _reset(self) -> None:
        self.graph = ig.Graph(n=0, directed=False)
        self.graph.vs["name"] = []
        self.graph.es["weight"] = []
        self._names: list[str] = []
        self._is_passage: list[bool] = []
        self._phrase_vertex: dict[str, int] = {}
        self._passage_vertex: dict[str, int] = {}
        self._phrases: list[str] = []  # phrase names in phrase-row order
        self._phrase_rows: list[int] = []  # vertex of each phrase row
        self._vectors = np.zeros((0, self.embedder.dimension), dtype=np.float32)
        self._eligible = np.zeros(0, dtype=bool)
        self._triple_ids: set[str] = set()
        self._edge_of: dict[tuple[int, int], int] = {}
        self._relation: list[float] = []  # per edge: triples joining the pair
        self._synonym: list[float] = []  # per edge: cosine (0 when not synonyms)
        self._contains: list[bool] = []  # per edge: passage-phrase edge
        self._specificity: dict[int, int] = {}  # phrase vertex -> passages it occurs in
        self._transition: tuple[sparse.csr_array, np.ndarray] | None = None

    # ---- reading ------------------------------------------------------------------
    @property
    def n_phrases(self) -> int:
        return len(self._phrases)

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

    def passage_vertices(self) -> tuple[np.ndarray, list[str]]:
        """All passage vertices and their passage ids, in the same order."""
        ids = list(self._passage_vertex)
        return np.fromiter(self._passage_vertex.values(), dtype=np.int64, count=len(ids)), ids

    def specificity(self, phrase: str) -> int:
        """Number of passages whose triples mention the phrase (0 when unknown)."""
        vertex = self.phrase_vertex(phrase)
        return 0 if vertex is None else self._specificity.get(vertex, 0)

    def edge_kinds(self) -> list[tuple[str, str, float, float, bool, float]]:
        """Every edge as ``(name_a, name_b, relation_count, synonym_cosine, contains, weight)``.

        Names are ordered within a pair, and the list is sorted, so two graphs of the
        same content compare equal whatever order their nodes were added in.
        """
        rows = []
        for (a, b), e in self._edge_of.items():
            x, y = sorted((self._names[a], self._names[b]))
            rows.append(
                (x, y, self._relation[e], self._synonym[e], self._contains[e], self._weight(e))
            )
        return sorted(rows)

    def transition(self) -> tuple[sparse.csr_array, np.ndarray]:
        """The column-stochastic walk matrix ``M[j, i] = w_ij / s_i`` and the dangling mask.

        ``s_i`` is the weighted degree of vertex ``i``; the mask marks vertices without
        edges (their columns are zero). Cached until the graph next changes.
        """
        if self._transition is None:
            n = len(self._names)
            pairs = np.asarray(list(self._edge_of), dtype=np.int64).reshape(-1, 2)
            order = np.fromiter(self._edge_of.values(), dtype=np.int64, count=len(pairs))
            weights = np.asarray([self._weight(e) for e in order], dtype=np.float64)
            rows = np.concatenate([pairs[:, 0], pairs[:, 1]])
            cols = np.concatenate([pairs[:, 1], pairs[:, 0]])
            values = np.concatenate([weights, weights])
            strength = np.bincount(cols, weights=values, minlength=n)
            dangling = strength <= 0
            scale = np.divide(1.0, strength, out=np.zeros(n), where=~dangling)
            matrix = sparse.csr_array((values * scale[cols], (rows, cols)), shape=(n, n))
            self._transition = (matrix, dangling)
        return self._transition

    def node_names(self) -> list[str]:
        """Vertex names in vertex order."""
        return list(self._names)

    def nbytes(self) -> int:
        """Approximate bytes held: phrase vectors plus igraph's edge and vertex arrays."""
        igraph_bytes = self.graph.ecount() * (2 * 8 + 8 + 4 * 8) + self.graph.vcount() * 2 * 8
        return int(self._vectors.nbytes + igraph_bytes)

    # ---- updating -----------------------------------------------------------------
    def update(self, store: Store) -> UpdateStats:
        """Take in the passages and triples added to ``store`` since the last update.

        Embeds only phrases the graph does not hold. When passages or triples the graph
        holds are gone from the store, the graph is rebuilt from the store instead,
        reusing the vectors of the phrases it held.

        Raises:
            StoreError: A triple names a passage the store does not hold.
        """
        passages = list(store.iter_passages())
        triples = list(store.iter_triples())
        passage_ids = {p.id for p in passages}
        if any(pid not in passage_ids for pid in self._passage_vertex) or (
            self._triple_ids and not self._triple_ids <= {t.id for t in triples}
        ):
            known = dict(zip(self._phrases, self._vectors))
            self._reset()
            return replace(self._add(passages, triples, known), rebuilt=True)
        return self._add(passages, [t for t in triples if t.id not in self._triple_ids])

    def _add(
        self,
        passages: Sequence[Passage],
        triples: Sequence[Triple],
        known: dict[str, np.ndarray] | None = None,
    ) -> UpdateStats:
        """Add new passages and triples; ``known`` holds phrase vectors not to embed again."""
        self._transition = None
        first_new_vertex = len(self._names)
        new_passages = [p.id for p in passages if p.id not in self._passage_vertex]
        for pid in new_passages:
            self._passage_vertex[pid] = self._new_vertex(pid, passage=True)
        named = [(t, normalise_entity(t.subject), normalise_entity(t.object)) for t in triples]
        fresh = list(
            dict.fromkeys(
                phrase
                for _, head, tail in named
                for phrase in (head, tail)
                if phrase and phrase not in self._phrase_vertex
            )
        )
        known = known or {}
        vectors = self._embed_missing(fresh, known)
        embedded = sum(1 for phrase in fresh if phrase not in known)
        first_new_row = len(self._phrases)
        for phrase in fresh:
            vertex = self._new_vertex(phrase, passage=False)
            self._phrase_vertex[phrase] = vertex
            self._phrases.append(phrase)
            self._phrase_rows.append(vertex)
        if fresh:
            block = np.stack([vectors[p] for p in fresh]).astype(np.float32)
            self._vectors = np.vstack([self._vectors, block])
            eligible = np.fromiter((synonym_eligible(p) for p in fresh), bool, len(fresh))
            self._eligible = np.concatenate([self._eligible, eligible])
        pending: list[tuple[int, int]] = []
        for triple, head, tail in named:
            passage = self._passage_vertex.get(triple.passage_id)
            if passage is None:
                raise StoreError(
                    f"triple {triple.id} names passage {triple.passage_id}, which the store "
                    "does not list; reopen the store and update again"
                )
            self._triple_ids.add(triple.id)
            ends = [self._phrase_vertex[p] for p in (head, tail) if p]
            if len(ends) == 2 and ends[0] != ends[1]:
                self._relation[self._edge(ends[0], ends[1], pending)] += 1.0
            for phrase_vertex in ends:
                if _pair(passage, phrase_vertex) not in self._edge_of:
                    self._contains[self._edge(passage, phrase_vertex, pending)] = True
                    self._specificity[phrase_vertex] = self._specificity.get(phrase_vertex, 0) + 1
        synonym_pairs = self._add_synonyms(first_new_row, pending)
        if len(self._names) > first_new_vertex:
            self.graph.add_vertices(
                len(self._names) - first_new_vertex,
                attributes={"name": self._names[first_new_vertex:]},
            )
        if pending:
            self.graph.add_edges(pending)
        if self._relation:
            self.graph.es["weight"] = [self._weight(e) for e in range(len(self._relation))]
        return UpdateStats(
            False, len(new_passages), len(triples), len(fresh), embedded, synonym_pairs
        )

    def _new_vertex(self, name: str, *, passage: bool) -> int:
        """A vertex number for ``name``; :meth:`_add` adds the igraph vertices in one batch."""
        self._names.append(name)
        self._is_passage.append(passage)
        return len(self._names) - 1

    def _edge(self, a: int, b: int, pending: list[tuple[int, int]]) -> int:
        key = _pair(a, b)
        edge = self._edge_of.get(key)
        if edge is None:
            edge = len(self._relation)
            self._edge_of[key] = edge
            self._relation.append(0.0)
            self._synonym.append(0.0)
            self._contains.append(False)
            pending.append(key)
        return edge

    def _weight(self, edge: int) -> float:
        return (
            RELATION_WEIGHT * self._relation[edge]
            + SYNONYM_WEIGHT * self._synonym[edge]
            + (CONTAINS_WEIGHT if self._contains[edge] else 0.0)
        )

    def _embed_missing(
        self, phrases: Sequence[str], known: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        """Vectors of ``phrases``: from ``known`` where there, else embedded now."""
        missing = [p for p in phrases if p not in known]
        found = {p: known[p] for p in phrases if p in known}
        if missing:
            vectors = np.asarray(self.embedder.embed(missing), dtype=np.float32)
            if vectors.shape != (len(missing), self.embedder.dimension):
                raise ValueError(
                    f"embedder {self.embedder.name!r} returned shape {vectors.shape} for "
                    f"{len(missing)} phrases; expected ({len(missing)}, {self.embedder.dimension})"
                )
            found.update(zip(missing, vectors))
        return found

    def _add_synonyms(self, first_new_row: int, pending: list[tuple[int, int]]) -> int:
        """Synonym edges between the phrases from ``first_new_row`` on and all phrases.

        Each block of new phrases is compared with the old phrases and with the new ones
        from the block's start on, so every pair is scored once (half the products of a
        full square on a first build).
        """
        eligible_rows = np.flatnonzero(self._eligible)
        old_rows = eligible_rows[eligible_rows < first_new_row]
        new_rows = eligible_rows[eligible_rows >= first_new_row]
        added = 0
        for start in range(0, len(new_rows), SYNONYM_BLOCK_ROWS):
            rows = new_rows[start : start + SYNONYM_BLOCK_ROWS]
            candidates = np.concatenate([old_rows, new_rows[start:]])
            similarity = self._vectors[rows] @ self._vectors[candidates].T
            hit_q, hit_c = np.nonzero(similarity >= self.synonym_threshold)
            for q, c in zip(hit_q.tolist(), hit_c.tolist()):
                row_a, row_b = int(rows[q]), int(candidates[c])
                if row_b >= first_new_row and row_b <= row_a:
                    continue  # itself, or a pair of this block met from its other end
                edge = self._edge(self._phrase_rows[row_a], self._phrase_rows[row_b], pending)
                self._synonym[edge] = float(similarity[q, c])
                added += 1
        return added

    # ---- persistence --------------------------------------------------------------
    def save(self, path: Path) -> None:
        """Write the graph and its phrase vectors to one ``.npz`` file (atomic replace)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        edges = np.asarray(list(self._edge_of), dtype=np.int64).reshape(-1, 2)
        order = np.asarray(list(self._edge_of.values()), dtype=np.int64)
        meta = {
            "format_version": FORMAT_VERSION,
            "embedding_model": self.embedding_model,
            "synonym_threshold": self.synonym_threshold,
            "names": self._names,
            "is_passage": self._is_passage,
            "phrases": self._phrases,
            "triple_ids": sorted(self._triple_ids),
        }
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with temporary.open("wb") as out:
            np.savez(
                out,
                meta=np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8),
                vectors=self._vectors,
                edges=edges,
                relation=np.asarray(self._relation, dtype=np.float64)[order],
                synonym=np.asarray(self._synonym, dtype=np.float64)[order],
                contains=np.asarray(self._contains, dtype=bool)[order],
            )
        os.replace(temporary, path)

    @classmethod
    def load(cls, path: Path, embedder: Embedder, synonym_threshold: float = 0.8) -> PPRGraph:
        """A graph saved with :meth:`save`; call :meth:`update` to catch up with the store.

        Raises:
            ValueError: The file is not a saved graph, or was built with another embedding
                model or synonym threshold (build a new one instead).
        """
        path = Path(path)
        try:
            with np.load(path, allow_pickle=False) as data:
                arrays = {name: data[name] for name in data.files}
            meta = json.loads(arrays["meta"].tobytes().decode("utf-8"))
        except (OSError, KeyError, ValueError) as exc:
            raise ValueError(f"{path} is not a saved PPR graph: {exc}") from exc
        if meta.get("format_version") != FORMAT_VERSION:
            raise ValueError(
                f"{path}: graph format {meta.get('format_version')}, expected {FORMAT_VERSION}"
            )
        if (
            meta["embedding_model"] != embedder.name
            or meta["synonym_threshold"] != synonym_threshold
        ):
            raise ValueError(
                f"{path} was built with model {meta['embedding_model']!r} and synonym threshold "
                f"{meta['synonym_threshold']}; asked for {embedder.name!r} and {synonym_threshold}. "
                "Delete the file to rebuild it."
            )
        graph = cls(embedder, synonym_threshold)
        graph._restore(meta, arrays)
        return graph

    def _restore(self, meta: dict, arrays: dict[str, np.ndarray]) -> None:
        self._names = list(meta["names"])
        self._is_passage = [bool(x) for x in meta["is_passage"]]
        self._phrases = list(meta["phrases"])
        self._triple_ids = set(meta["triple_ids"])
        for vertex, (name, passage) in enumerate(zip(self._names, self._is_passage)):
            (self._passage_vertex if passage else self._phrase_vertex)[name] = vertex
        self._phrase_rows = [self._phrase_vertex[p] for p in self._phrases]
        self._vectors = np.asarray(arrays["vectors"], dtype=np.float32)
        self._eligible = np.fromiter(
            (synonym_eligible(p) for p in self._phrases), bool, len(self._phrases)
        )
        edges = [tuple(map(int, pair)) for pair in arrays["edges"]]
        self._edge_of = {pair: e for e, pair in enumerate(edges)}
        self._relation = arrays["relation"].tolist()
        self._synonym = arrays["synonym"].tolist()
        self._contains = arrays["contains"].tolist()
        for (a, b), contains in zip(edges, self._contains):
            if contains:
                phrase = b if self._is_passage[a] else a
                self._specificity[phrase] = self._specificity.get(phrase, 0) + 1
        self._transition = None
        self.graph = ig.Graph(n=len(self._names), edges=edges, directed=False)
        self.graph.vs["name"] = self._names
        self.graph.es["weight"] = [self._weight(e) for e in range(len(edges))]


def _pair(a: int, b: int) -> tuple[int, int]:
    return (a, b) if a < b else (b, a)


def load_or_build(
    store: Store,
    embedder: Embedder,
    synonym_threshold: float = 0.8,
    path: Path | None = None,
    *,
    graph: PPRGraph | None = None,
) -> PPRGraph:
    """The PPR graph of ``store``, brought up to date: ``graph``, else the one saved at
    ``path``, else a new one; written back to ``path`` when it changed.

    A file that cannot be read or was built with another model or threshold is rebuilt
    (with a warning); a file that cannot be written is left as it is (with a warning),
    since it is only a cache.
    """
    if graph is None and path is not None and Path(path).is_file():
        try:
            graph = PPRGraph.load(path, embedder, synonym_threshold)
        except ValueError as exc:
            logger.warning("rebuilding the PPR graph: %s", exc)
    if graph is None:
        graph = PPRGraph(embedder, synonym_threshold)
    stats = graph.update(store)
    if path is not None and (stats != UpdateStats() or not Path(path).is_file()):
        try:
            graph.save(path)
        except OSError as exc:
            logger.warning("could not cache the PPR graph at %s: %s", path, exc)
    return graph
