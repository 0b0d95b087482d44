"""SiReRAG nodes in Elasticsearch: ``{prefix}-nodes`` and ``{prefix}-nodes-meta``.

Each node is one document (mapping in :func:`~gear_agent.store.elasticsearch.mappings.node_mappings`):
kind, tree, level and entity as keywords, the text stored (not indexed: nodes are
dense-only), ``children`` and ``passage_ids`` (the provenance, in order) as keyword arrays,
the order it was stored (``added_ns``, ``position``) and its ``vector``. What the SiReRAG
builder records beside its nodes (its mode, the propositions of a full build) are documents
of ``{prefix}-nodes-meta``, one per key. Both indices are created by the first write, so an
index without nodes is unchanged; reads of a missing one find nothing.

Deleting a passage drops it from every node's provenance and deletes the nodes left with
none (:meth:`ElasticsearchNodeStore.forget_passages`, called by the store's delete), as in
the embedded store. Node search is the top-level ``knn`` option (HNSW, approximate), like
passage search on this backend.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from gear_agent.store.base import StoreError
from gear_agent.store.elasticsearch import queries as q
from gear_agent.store.elasticsearch.bulk import BulkWriteError
from gear_agent.store.elasticsearch.client import ElasticsearchSettings, translate_errors
from gear_agent.store.elasticsearch.connection import Connection, stacked_vectors
from gear_agent.store.elasticsearch.mappings import (
    VECTOR_FIELD,
    IndexNames,
    node_mappings,
    node_meta_mappings,
)
from gear_agent.store.nodes import NodeStore
from gear_agent.types import AddResult, Hit, Node


class NodeHost(Protocol):
    """What the node collection uses of its store
    (:class:`~gear_agent.store.elasticsearch.store.ElasticsearchStore`): its connection, its
    index names and embedder, and the check of an index made on first use."""

    settings: ElasticsearchSettings
    connection: Connection
    indices: IndexNames
    embedding_model: str
    dimension: int

    def ensure_index(self, name: str, collection: str, mappings: dict[str, Any] | None) -> bool: ...

    def embed_rows(self, texts: list[str]) -> tuple[np.ndarray, set[int]]: ...

    def query_vector(self, vector: np.ndarray) -> np.ndarray: ...

NODE_ORDER: tuple[tuple[str, str], ...] = (("added_ns", "asc"), ("position", "asc"), ("id", "asc"))
"""Sort of a walk over the nodes: the order they were stored."""
_KEY_ORDER: tuple[tuple[str, str], ...] = (("key", "asc"),)
_NO_VECTOR = {"excludes": [VECTOR_FIELD]}


def _node_document(node: Node, vector: np.ndarray, added_ns: int, position: int) -> dict[str, Any]:
    return {
        "id": node.id, "kind": node.kind, "tree": node.tree, "level": node.level,
        "entity": node.entity, "text": node.text, "children": list(node.children),
        "passage_ids": list(node.passage_ids), "added_ns": added_ns, "position": position,
        VECTOR_FIELD: [float(x) for x in np.asarray(vector, dtype=np.float32)],
    }


def _node(source: dict[str, Any]) -> Node:
    return Node(
        source["id"], source["kind"], source["tree"], int(source["level"]), source["text"],
        tuple(source.get("passage_ids") or ()), tuple(source.get("children") or ()),
        source.get("entity", ""),
    )


class ElasticsearchNodeStore(NodeStore):
    """The node collection of one :class:`~gear_agent.store.elasticsearch.store.ElasticsearchStore`.

    Example:
        >>> nodes = store.nodes  # doctest: +SKIP
        >>> nodes.passages_of([nodes.search(vector, 1)[0].id])  # doctest: +SKIP
    """

    def __init__(self, store: NodeHost) -> None:
        self.store = store
        prefix = store.settings.es_index_prefix
        self.index = f"{prefix}-nodes"
        self.meta_index = f"{prefix}-nodes-meta"
        self._ready: set[str] = set()

    # ---- helpers --------------------------------------------------------------
    def _exists(self, index: str) -> bool:
        if index in self._ready:
            return True
        if self.store.ensure_index(index, self._collection(index), None):
            self._ready.add(index)
            return True
        return False

    def _create(self, index: str) -> None:
        if index not in self._ready:
            model, dimension = self.store.embedding_model, self.store.dimension
            mappings = node_mappings(model, dimension) if index == self.index else node_meta_mappings(model)
            self.store.ensure_index(index, self._collection(index), mappings)
            self._ready.add(index)

    def _collection(self, index: str) -> str:
        return "node" if index == self.index else "node-meta"

    def _walk(self, query: dict[str, Any], source: Any = _NO_VECTOR) -> Iterator[dict[str, Any]]:
        if not self._exists(self.index):
            return iter(())
        return self.store.connection.walk(self.index, query, NODE_ORDER, source, snapshot=True)

    # ---- writes ---------------------------------------------------------------
    def add(self, nodes: Sequence[Node]) -> AddResult:
        """Embed and store the nodes not yet stored.

        Raises:
            StoreError: a node names a passage that is not stored (nothing is written).
            BulkWriteError: some nodes were not stored (``err.failures`` says which).
        """
        from gear_agent.store.base import split_new

        stored = self.store.connection.mget(self.index, [n.id for n in nodes], []) if self._exists(self.index) else {}
        new, existing = split_new(nodes, stored)
        if not new:
            return AddResult(existing=existing)
        passages = self.store.connection.mget(self.store.indices.passages, [p for n in new for p in n.passage_ids], [])
        for node in new:
            missing = [p for p in node.passage_ids if p not in passages]
            if missing or not node.passage_ids:
                raise StoreError(f"node {node.id} names passage {missing[0] if missing else '(none)'}, "
                                 "which is not stored; every node needs stored passages")
        self._create(self.index)
        vectors, bad = self.store.embed_rows([n.text for n in new])
        if bad:
            raise StoreError(f"the embedding of node {new[min(bad)].id} is zero or not finite; "
                             "a cosine dense_vector cannot index it")
        added_ns = self.store.connection.next_ns()
        actions = (
            q.create_action(self.index, node.id, _node_document(node, vectors[i], added_ns, i))
            for i, node in enumerate(new)
        )
        outcome = self.store.connection.write(actions, [self.index], [])
        result = AddResult(added=outcome.done, existing=[*existing, *outcome.conflicts])
        if not outcome.ok:
            raise BulkWriteError(f"adding nodes to {self.index!r}", outcome, result)
        return result

    def remove(self, ids: Sequence[str]) -> list[str]:
        if not self._exists(self.index):
            return []
        stored = self.store.connection.mget(self.index, ids, [])
        unique = [i for i in dict.fromkeys(ids) if i in stored]
        outcome = self.store.connection.write((q.delete_action(self.index, i) for i in unique), [self.index], [])
        if not outcome.ok:
            raise BulkWriteError(f"deleting nodes from {self.index!r}", outcome, outcome.done)
        done = set(outcome.done)
        return [i for i in unique if i in done]

    def forget_passages(self, passage_ids: Sequence[str]) -> int:
        """Drop deleted passages from every node's provenance and delete the nodes left
        with none; returns how many nodes went. (A summary keeps its text until the next
        ``gear sirerag build`` rebuilds it.)"""
        if not passage_ids or not self._exists(self.index):
            return 0
        gone = set(passage_ids)
        actions, emptied = [], 0
        for hit in self.store.connection.walk(self.index, q.terms("passage_ids", list(gone)), q.BY_ID,
                                    {"includes": ["passage_ids"]}):
            kept = [p for p in hit["_source"].get("passage_ids") or [] if p not in gone]
            if kept:
                actions.append(q.update_action(self.index, hit["_id"], {"passage_ids": kept}))
            else:
                actions.append(q.delete_action(self.index, hit["_id"]))
                emptied += 1
        outcome = self.store.connection.write(actions, [self.index], [])
        if not outcome.ok:
            raise BulkWriteError(f"dropping deleted passages from the nodes in {self.index!r}", outcome)
        return emptied

    def clear(self) -> int:
        ids = [hit["_id"] for hit in self._walk(q.match_all(), False)]
        return len(self.remove(ids))

    def set_meta(self, values: Mapping[str, str]) -> None:
        if not values:
            return
        self._create(self.meta_index)
        actions = (
            q.BulkAction("index", self.meta_index, key, {"key": key, "value": str(value)})
            for key, value in values.items()
        )
        outcome = self.store.connection.write(actions, [self.meta_index], [])
        if not outcome.ok:
            raise BulkWriteError(f"recording SiReRAG values in {self.meta_index!r}", outcome)

    # ---- reads ----------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        if not self._exists(self.meta_index):
            return None
        found = self.store.connection.mget(self.meta_index, [key], ["value"])
        return str(found[key]["value"]) if key in found else None

    def meta_items(self, prefix: str) -> dict[str, str]:
        if not self._exists(self.meta_index):
            return {}
        query = q.match_all() if not prefix else {"prefix": {"key": prefix}}
        hits = self.store.connection.walk(self.meta_index, query, _KEY_ORDER, True, snapshot=True)
        return {hit["_source"]["key"]: str(hit["_source"]["value"]) for hit in hits}

    def count(self) -> int:
        if not self._exists(self.index):
            return 0
        self.store.connection.settle()
        with translate_errors(f"counting {self.index!r}"):
            return int(self.store.connection.client.count(index=self.index)["count"])

    def levels(self) -> dict[tuple[str, str, int], int]:
        if not self._exists(self.index):
            return {}
        sources = [{name: {"terms": {"field": name}}} for name in ("tree", "kind", "level")]
        found: dict[tuple[str, str, int], int] = {}
        after: dict[str, Any] | None = None
        while True:
            composite: dict[str, Any] = {"size": 1000, "sources": sources}
            if after is not None:
                composite["after"] = after
            request = {"size": 0, "track_total_hits": False, "aggs": {"levels": {"composite": composite}}}
            response = self.store.connection.search(f"counting the levels of {self.index!r}", self.index, request)
            agg = response["aggregations"]["levels"]
            for bucket in agg["buckets"]:
                key = bucket["key"]
                found[(key["tree"], key["kind"], int(key["level"]))] = int(bucket["doc_count"])
            after = agg.get("after_key")
            if not agg["buckets"] or after is None:
                break
        return dict(sorted(found.items(), key=lambda item: (item[0][0], item[0][2], item[0][1])))

    def search(self, vector: np.ndarray, k: int) -> list[Hit]:
        query = self.store.query_vector(vector)
        if k <= 0 or not self._exists(self.index):
            return []
        request = q.knn_request(query, min(k, q.MAX_RESULT_WINDOW))
        response = self.store.connection.search(f"kNN search on {self.index!r}", self.index, request)
        return [Hit(h["_id"], q.score_to_cosine(float(h["_score"]))) for h in response["hits"]["hits"]]

    def get(self, ids: Sequence[str]) -> list[Node]:
        if not self._exists(self.index):
            return []
        found = self.store.connection.mget(self.index, ids)
        return [_node(found[i]) for i in ids if i in found]

    def passages_of(self, ids: Sequence[str]) -> dict[str, list[str]]:
        if not self._exists(self.index):
            return {}
        found = self.store.connection.mget(self.index, ids, ["passage_ids"])
        return {i: list(found[i].get("passage_ids") or []) for i in dict.fromkeys(ids) if i in found}

    def vectors(self, ids: Sequence[str]) -> np.ndarray:
        """Stored node embeddings, one row per id (``KeyError`` for an unknown id)."""
        return self._vectors(self.index if self._exists(self.index) else None, ids, "nodes")

    def passage_vectors(self, ids: Sequence[str]) -> np.ndarray:
        """Stored passage embeddings, one row per id (``KeyError`` for an unknown id)."""
        return self._vectors(self.store.indices.passages, ids, "passages")

    def _vectors(self, index: str | None, ids: Sequence[str], what: str) -> np.ndarray:
        found = self.store.connection.mget(index, ids, [VECTOR_FIELD]) if index is not None and ids else {}
        return stacked_vectors(found, ids, what, self.store.dimension)

    def iterate(self) -> Iterator[Node]:
        for hit in self._walk(q.match_all()):
            yield _node(hit["_source"])
