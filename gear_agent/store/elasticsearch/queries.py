"""Pure functions that build every request the Elasticsearch backend sends.

Each returns the keyword arguments of one ``elasticsearch`` client call
(``client.search(index=..., **request)``), so tests can check them without a
cluster. The query DSL used is Elasticsearch 8's:

* BM25: ``match`` on the analysed text field;
* kNN: the top-level ``knn`` search option (``field``, ``query_vector``, ``k``,
  ``num_candidates``, optional ``filter``), available from 8.4;
* neighbours: ``terms`` lookups of the triple's ``head``/``tail`` on the keyword
  ``head``/``tail`` fields, minus the triple itself (``must_not`` + ``ids``);
* paging: ``sort`` on unique keyword fields + ``search_after``, with a point in
  time (``pit``) when a whole index is iterated.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from gear_agent.filters import Condition, Where
from gear_agent.store.elasticsearch.mappings import VECTOR_FIELD, vector_list
from gear_agent.text.tokenizer import normalise_entity

__all__ = [
    "MAX_RESULT_WINDOW",
    "BulkAction",
    "bm25_request",
    "knn_request",
    "neighbours_filter",
    "neighbours_request",
    "normalise_entity",
    "num_candidates",
    "page_request",
    "score_to_cosine",
]

MAX_RESULT_WINDOW = 10_000
"""Elasticsearch's default ``index.max_result_window``; also the cap on ``k`` and
``num_candidates`` of a kNN search."""

PAGE_SIZE = 1_000


class BulkAction(NamedTuple):
    """One bulk operation: ``op`` is ``create``, ``index``, ``update`` or ``delete``."""

    op: str
    index: str
    id: str
    body: dict[str, Any] | None = None

    def lines(self) -> list[dict[str, Any]]:
        """The NDJSON lines of this action: the header, then the body when there is one."""
        header: dict[str, Any] = {"_index": self.index, "_id": self.id}
        if self.op == "update":
            header["retry_on_conflict"] = 3
        return [{self.op: header}] if self.body is None else [{self.op: header}, self.body]


def create_action(index: str, doc_id: str, source: dict[str, Any]) -> BulkAction:
    """``create``: a new document; an existing ``_id`` answers 409 and is left untouched."""
    return BulkAction("create", index, doc_id, source)


def index_action(index: str, doc_id: str, source: dict[str, Any]) -> BulkAction:
    """``index``: a document, replacing one with the same ``_id``."""
    return BulkAction("index", index, doc_id, source)


def update_action(index: str, doc_id: str, fields: dict[str, Any]) -> BulkAction:
    """Partial update of some fields of an existing document."""
    return BulkAction("update", index, doc_id, {"doc": fields})


def delete_action(index: str, doc_id: str) -> BulkAction:
    return BulkAction("delete", index, doc_id)


def _check_k(k: int, what: str = "k") -> None:
    if not 1 <= k <= MAX_RESULT_WINDOW:
        raise ValueError(f"{what} must be between 1 and {MAX_RESULT_WINDOW}, got {k}")


def num_candidates(k: int) -> int:
    """HNSW candidates per shard for a top-``k`` search: ``max(100, 2k)``, at most 10,000.

    >>> num_candidates(10), num_candidates(300), num_candidates(9000)
    (100, 600, 10000)
    """
    return min(MAX_RESULT_WINDOW, max(100, 2 * k))


def score_to_cosine(score: float) -> float:
    """Undo Elasticsearch's cosine ``_score`` of ``(1 + cos) / 2`` to get the cosine back."""
    return 2.0 * score - 1.0


_FIELD_OF = {"source": "source", "title": "title_key", "id": "id"}
_RANGE = {"gt": "gt", "gte": "gte", "lt": "lt", "lte": "lte"}


def _value_field(value: Any) -> str:
    if isinstance(value, bool):
        return "meta.bool"
    if isinstance(value, int | float):
        return "meta.num"
    return "meta.str"


def _meta_query(key: str, inner: dict[str, Any]) -> dict[str, Any]:
    return {"nested": {"path": "meta", "query": {"bool": {"filter": [{"term": {"meta.key": key}}, inner]}}}}


def _eq_query(condition: Condition, value: Any) -> dict[str, Any]:
    if condition.is_field:
        field = _FIELD_OF[condition.key]
        if condition.key == "source":
            base = value.rstrip("/") or value
            return {"bool": {"should": [{"term": {field: base}}, {"prefix": {field: base + "/"}}],
                             "minimum_should_match": 1}}
        return {"term": {field: value}}
    if value is None:
        return _meta_query(condition.key, {"term": {"meta.null": True}})
    return _meta_query(condition.key, {"term": {_value_field(value): value}})


def condition_query(condition: Condition) -> dict[str, Any]:
    """One filter condition in the query DSL (metadata through the nested ``meta`` entries)."""
    op = condition.op
    if op in ("eq", "in", "ne", "nin"):
        parts = [_eq_query(condition, v) for v in condition.values()]
        matched = parts[0] if len(parts) == 1 else {"bool": {"should": parts, "minimum_should_match": 1}}
        return matched if op in ("eq", "in") else {"bool": {"must_not": [matched]}}
    value = condition.value
    if condition.is_field:
        return {"range": {_FIELD_OF[condition.key]: {_RANGE[op]: value}}}
    return _meta_query(condition.key, {"range": {_value_field(value): {_RANGE[op]: value}}})


def where_filter(where: Where) -> dict[str, Any]:
    """A :class:`~gear_agent.filters.Where` as a ``bool`` filter (every condition must hold).

    >>> from gear_agent.filters import parse_where
    >>> where_filter(parse_where(["id=p-1"]))
    {'bool': {'filter': [{'term': {'id': 'p-1'}}]}}
    """
    return {"bool": {"filter": [condition_query(c) for c in where.conditions]}}


def bm25_request(
    field: str, query: str, k: int, filter: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Top ``k`` by BM25 of ``query`` against the analysed ``field``; ids and scores only.

    With ``filter`` only matching documents are scored (a ``bool`` filter clause).
    """
    _check_k(k)
    match: dict[str, Any] = {"match": {field: {"query": query}}}
    if filter is not None:
        match = {"bool": {"must": [match], "filter": [filter]}}
    return {
        "query": match,
        "size": k,
        "source": False,
        "track_total_hits": False,
    }


def knn_request(vector: np.ndarray, k: int, filter: dict[str, Any] | None = None) -> dict[str, Any]:
    """Top ``k`` by cosine with ``vector`` via the top-level ``knn`` option.

    With ``filter`` the HNSW search only visits matching documents (a
    pre-filter), so ``k`` hits come back whenever ``k`` documents match.
    """
    _check_k(k)
    knn: dict[str, Any] = {
        "field": VECTOR_FIELD,
        "query_vector": vector_list(vector),
        "k": k,
        "num_candidates": num_candidates(k),
    }
    if filter is not None:
        knn["filter"] = filter
    return {"knn": knn, "size": k, "source": False}


def neighbours_filter(index: str, triple_id: str) -> dict[str, Any]:
    """Triples whose ``head`` or ``tail`` is the ``head`` or ``tail`` of triple ``triple_id``
    (normalised), except itself. The entities are read by the search: a ``terms`` lookup of
    the stored triple in ``index`` (a real-time get inside the cluster), so one request
    suffices; an unknown triple matches nothing."""

    def lookup(field: str, path: str) -> dict[str, Any]:
        return {"terms": {field: {"index": index, "id": triple_id, "path": path}}}

    return {
        "bool": {
            "should": [lookup(f, p) for f in ("head", "tail") for p in ("head", "tail")],
            "minimum_should_match": 1,
            "must_not": [{"ids": {"values": [triple_id]}}],
        }
    }


def both(first: dict[str, Any] | None, second: dict[str, Any] | None) -> dict[str, Any] | None:
    """A filter passing what passes ``first`` and ``second`` (None: no filter)."""
    if first is None or second is None:
        return first if second is None else second
    return {"bool": {"filter": [first, second]}}


def neighbours_request(
    index: str, triple_id: str, vector: np.ndarray | None, limit: int,
    also: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The neighbours of a triple (:func:`neighbours_filter`): the ``limit`` most similar to
    ``vector``, or the first ``limit`` by id; each hit with its whole document (``also``: a
    filter they must pass too)."""
    _check_k(limit, "limit")
    where = both(neighbours_filter(index, triple_id), also)
    if vector is not None:
        return {**knn_request(vector, limit, filter=where), "source": True}
    return {
        "query": {"bool": {"filter": [where]}},
        "sort": [{"id": "asc"}],
        "size": limit,
        "source": True,
        "track_total_hits": False,
    }


def msearch_lines(index: str, requests: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``_msearch`` lines of search requests made for ``client.search(**request)``:
    a header naming ``index``, then each body as sent on the wire (``source`` is ``_source``)."""
    lines: list[dict[str, Any]] = []
    for request in requests:
        lines.append({"index": index})
        lines.append({("_source" if key == "source" else key): value for key, value in request.items()})
    return lines


def page_request(
    query: dict[str, Any],
    sort: Sequence[tuple[str, str]],
    *,
    source: bool | dict[str, list[str]] = False,
    search_after: list[Any] | None = None,
    pit: str | None = None,
    keep_alive: str = "2m",
    size: int | None = None,
) -> dict[str, Any]:
    """One page of a ``search_after`` walk; ``sort`` (field, order) pairs end on a unique field."""
    request: dict[str, Any] = {
        "query": query,
        "sort": [{field: order} for field, order in sort],
        "size": PAGE_SIZE if size is None else size,
        "source": source,
        "track_total_hits": False,
    }
    if search_after is not None:
        request["search_after"] = search_after
    if pit is not None:
        request["pit"] = {"id": pit, "keep_alive": keep_alive}
    return request


def term(field: str, value: Any) -> dict[str, Any]:
    return {"term": {field: value}}


def terms(field: str, values: Sequence[Any]) -> dict[str, Any]:
    return {"terms": {field: list(values)}}


def match_all() -> dict[str, Any]:
    return {"match_all": {}}


BY_ID: tuple[tuple[str, str], ...] = (("id", "asc"),)
"""Sort of a whole-index walk: the unique ``id`` keyword (``_id`` cannot be sorted on)."""
EXTRACTION_ORDER: tuple[tuple[str, str], ...] = (
    ("added_ns", "asc"),
    ("position", "asc"),
    ("id", "asc"),
)
"""Sort of a passage's triples: the call that added them, their place in it, then id."""
