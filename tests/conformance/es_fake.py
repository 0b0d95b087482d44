"""An in-memory stand-in for the part of the Elasticsearch 8 REST API the backend uses.

It lets the conformance suite run :class:`ElasticsearchStore` end to end
without a cluster, through the real ``elasticsearch`` client (a custom
``node_class`` answers the HTTP requests). It emulates, after the ES 8 docs:

* near-real-time search: writes are visible to ``_search``/``_count`` only
  after a refresh (``_refresh``, ``refresh=true|wait_for``), while ``_mget``
  is real-time; a point in time (``_pit``) is a frozen copy;
* strict mappings: unknown fields, wrong ``dense_vector`` dims and zero
  vectors under ``cosine`` are refused per bulk item; ``match`` on a field with
  ``index: false``, sorting on ``_id`` or on a ``text`` field, ``size`` over
  10,000, kNN ``k`` over ``num_candidates`` answer 400;
* ``create`` on an existing ``_id`` answers 409, ``update``/``delete`` of a
  missing one 404;
* the indexing statistics (``_stats/indexing``: ``index_total``, ``delete_total``);
* the 8.x media-type check (``compatible-with=8``) and the product header.

Corrected after running the backend against a real 8.19.4 cluster
(``tests/conformance/test_es_fake_fidelity.py`` holds both to the same answers):

* a bulk ``create``/``index``/``update`` naming a missing index creates it, with a
  dynamic mapping (``action.auto_create_index`` is on by default), as a real cluster does;
* ``_mget`` on a missing index answers 200 with an ``error`` per document, not 404;
* a query that fails on the shard answers ``search_phase_execution_exception: all shards
  failed`` with the real reason in ``root_cause`` (as a real cluster does);
* a ``keyword`` field takes numbers and booleans, a ``boolean`` the strings
  ``"true"``/``"false"`` (coerced, as a real cluster does).

Deliberately stricter than a real cluster: a ``term``/``terms``/``prefix``/``range`` on an
analysed ``text`` field answers 400 (a real cluster matches tokens silently; here it flags a
backend bug).

Scores: BM25 (Lucene form, the index's k1/b) over the project's
standard-analyzer approximation; kNN is exact cosine, ``_score = (1 + cos) / 2``.
Passing the suite against this fake checks the backend's logic and request
shapes against *this reading* of the docs, not against Elasticsearch itself.
"""

from __future__ import annotations

import copy
import fnmatch
import itertools
import json
import math
import uuid as uuid_mod
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from elastic_transport import ApiResponseMeta, BaseNode, HttpHeaders
from elastic_transport._node import NodeApiResponse

from gear_agent.text.tokenizer import tokenize

MEDIA_TYPE = "application/vnd.elasticsearch+json;compatible-with=8"


class EsError(Exception):
    def __init__(self, status: int, error_type: str, reason: str) -> None:
        super().__init__(reason)
        self.status, self.error_type, self.reason = status, error_type, reason

    def error(self) -> dict[str, Any]:
        cause = {"type": self.error_type, "reason": self.reason}
        return {"root_cause": [cause], **cause}

    def body(self) -> dict[str, Any]:
        return {"error": self.error(), "status": self.status}


class ShardError(EsError):
    """A query that fails on the shard: a real cluster wraps it in
    ``search_phase_execution_exception`` and gives the reason in ``root_cause``."""

    def error(self) -> dict[str, Any]:
        return {
            "root_cause": [{"type": self.error_type, "reason": self.reason}],
            "type": "search_phase_execution_exception",
            "reason": "all shards failed",
            "phase": "query",
        }


@dataclass
class Request:
    method: str
    path: str
    params: dict[str, str]
    body: Any


@dataclass
class FakeIndex:
    name: str
    settings: dict[str, Any]
    mappings: dict[str, Any]
    live: dict[str, dict[str, Any]] = field(default_factory=dict)
    visible: dict[str, dict[str, Any]] = field(default_factory=dict)
    indexed: int = 0  # index_total / delete_total of the indexing statistics
    deleted: int = 0
    uuid: str = field(default_factory=lambda: uuid_mod.uuid4().hex[:22])  # made at creation, as the cluster does
    seq_no: int = -1  # the last sequence number given (one primary term, 1)
    seq_nos: dict[str, int] = field(default_factory=dict)

    def next_seq_no(self, doc_id: str) -> int:
        self.seq_no += 1
        self.seq_nos[doc_id] = self.seq_no
        return self.seq_no

    def refresh(self) -> None:
        self.visible = copy.deepcopy(self.live)

    @property
    def properties(self) -> dict[str, Any]:
        return self.mappings.get("properties", {})

    def bm25_params(self, field_name: str) -> tuple[float, float]:
        name = self.properties[field_name].get("similarity", "BM25")
        if name == "BM25":
            return 1.2, 0.75
        sim = self.settings.get("index", {}).get("similarity", {})[name]
        return float(sim.get("k1", 1.2)), float(sim.get("b", 0.75))


class FakeElasticsearch:
    """One fake single-node cluster; ``requests`` records every request it answered."""

    def __init__(self, version: str = "8.15.0", *, auto_create_index: bool = True) -> None:
        self.version = version
        self.auto_create_index = auto_create_index
        self.indices: dict[str, FakeIndex] = {}
        self.pits: dict[str, dict[str, dict[str, Any]]] = {}
        self.pit_index: dict[str, str] = {}
        self.requests: list[Request] = []
        self._pit_ids = itertools.count(1)

    # ---- transport -----------------------------------------------------------
    def node_class(self) -> type[BaseNode]:
        server = self

        class FakeNode(BaseNode):
            _CLIENT_META_HTTP_CLIENT = ("fake", "1.0")

            def perform_request(
                self, method, target, body=None, headers=None, request_timeout=None
            ):  # type: ignore[override]
                status, payload = server.handle(method, target, body, headers or {})
                raw = b"" if payload is None else json.dumps(payload).encode()
                meta = ApiResponseMeta(
                    status=status,
                    http_version="1.1",
                    headers=HttpHeaders(
                        {"content-type": MEDIA_TYPE, "x-elastic-product": "Elasticsearch"}
                    ),
                    duration=0.0,
                    node=self.config,
                )
                return NodeApiResponse(meta, raw)

        return FakeNode

    def client(self, **kwargs: Any) -> Any:
        from elasticsearch import Elasticsearch

        return Elasticsearch("http://fake-es:9200", node_class=self.node_class(), **kwargs)

    def handle(self, method: str, target: str, body: bytes | None, headers: Any) -> tuple[int, Any]:
        url = urlsplit(target)
        params = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        parts = [unquote(p) for p in url.path.split("/") if p]
        text = body.decode() if body else ""
        ndjson = parts[-1:] in (["_bulk"], ["_msearch"])
        parsed: Any = (
            [json.loads(line) for line in text.splitlines() if line.strip()]
            if ndjson
            else (json.loads(text) if text else None)
        )
        self.requests.append(Request(method, url.path, params, parsed))
        try:
            accept = str(headers.get("accept", ""))
            if "compatible-with" in accept and "compatible-with=8" not in accept:
                raise EsError(
                    400,
                    "media_type_header_exception",
                    f"Invalid media-type value on header [Accept]: {accept}",
                )
            return self._route(method, parts, params, parsed)
        except EsError as err:
            return err.status, (None if method == "HEAD" else err.body())

    def _route(
        self, method: str, parts: list[str], params: dict[str, str], body: Any
    ) -> tuple[int, Any]:
        if not parts:
            return 200, {
                "name": "fake",
                "cluster_name": "fake",
                "version": {"number": self.version, "build_flavor": "default"},
                "tagline": "You Know, for Search",
            }
        if parts == ["_bulk"]:
            return 200, self._bulk(body, params)
        if parts == ["_search"]:
            return 200, self._search(None, body or {})
        if parts[-1:] == ["_msearch"]:
            return 200, self._msearch(parts[0] if len(parts) == 2 else None, body or [])
        if parts[:2] == ["_cluster", "health"]:  # what `gear check` asks: one node, all shards there
            return 200, {"status": "green", "number_of_nodes": 1, "unassigned_shards": 0}
        if parts == ["_pit"] and method == "DELETE":
            self.pits.pop(body["id"], None)
            return 200, {"succeeded": True, "num_freed": 1}
        index_names = parts[0].split(",")
        if len(parts) == 1:
            name = index_names[0]
            if method == "HEAD":
                return (200 if name in self.indices else 404), None
            if method == "PUT":
                return 200, self._create_index(name, body or {})
            if method == "GET":  # the indices matching a pattern (`gear check` lists a prefix's)
                matching = [n for n in self.indices if fnmatch.fnmatchcase(n, name)]
                return 200, {n: {"mappings": copy.deepcopy(self.indices[n].mappings)} for n in matching}
            if method == "DELETE":
                for n in index_names:
                    self._index(n)
                    del self.indices[n]
                return 200, {"acknowledged": True}
        op = parts[1]
        if op == "_mapping" and method == "PUT":
            for n in index_names:
                mappings = self._index(n).mappings
                for fname, spec in (body or {}).get("properties", {}).items():
                    have = mappings.setdefault("properties", {}).get(fname)
                    if have is not None and have.get("type") != spec.get("type"):
                        raise EsError(400, "illegal_argument_exception",
                                      f"mapper [{fname}] cannot be changed from type [{have['type']}]")
                    mappings["properties"][fname] = copy.deepcopy(spec)
                if "_meta" in (body or {}):
                    mappings["_meta"] = copy.deepcopy(body["_meta"])
            return 200, {"acknowledged": True}
        if op == "_mapping":
            return 200, {
                n: {"mappings": copy.deepcopy(self._index(n).mappings)} for n in index_names
            }
        if op == "_settings" and method == "GET":  # the index's uuid only (what the store asks)
            return 200, {n: {"settings": {"index": {"uuid": self._index(n).uuid}}} for n in index_names}
        if op == "_stats":
            chosen = [self._index(n) for n in index_names]
            indexing = {"index_total": sum(i.indexed for i in chosen),
                        "delete_total": sum(i.deleted for i in chosen)}
            return 200, {"_all": {"primaries": {"indexing": indexing}, "total": {"indexing": indexing}}}
        if op == "_refresh":
            for n in index_names:
                self._index(n).refresh()
            return 200, {"_shards": {"total": 1, "successful": 1, "failed": 0}}
        if op == "_mget" and index_names[0] not in self.indices:
            missing = EsError(404, "index_not_found_exception", f"no such index [{index_names[0]}]")
            return 200, {
                "docs": [
                    {"_index": index_names[0], "_id": i, "error": missing.error()} for i in body["ids"]
                ]
            }
        index = self._index(index_names[0])
        if op in ("_doc", "_create") and len(parts) == 3:
            return self._document(index, method, op, parts[2], params, body)
        if op == "_mget":
            return 200, self._mget(index, body, params)
        if op == "_search":
            if "pit" in (body or {}):
                raise EsError(
                    400,
                    "action_request_validation_exception",
                    "[indices] cannot be used with point in time",
                )
            return 200, self._search(index, body or {})
        if op == "_count":
            query = (body or {}).get("query", {"match_all": {}})
            return 200, {
                "count": sum(
                    1 for i, d in index.visible.items() if self._matches(index, i, d, query)
                )
            }
        if op == "_pit":
            if "keep_alive" not in params:
                raise EsError(
                    400, "action_request_validation_exception", "[keep_alive] is required"
                )
            pit = f"pit-{next(self._pit_ids)}"
            self.pits[pit] = copy.deepcopy(index.visible)
            self.pit_index[pit] = index.name
            return 200, {"id": pit}
        raise EsError(400, "unsupported", f"the fake does not emulate {method} /{'/'.join(parts)}")

    def _msearch(self, default: str | None, lines: list[dict[str, Any]]) -> dict[str, Any]:
        """Each (header, body) pair searched as ``_search`` would; an error is that search's
        answer (with its ``status``), as Elasticsearch answers it."""
        responses = []
        for header, body in zip(lines[::2], lines[1::2]):
            try:
                name = header.get("index", default)
                response = self._search(self._index(name) if name else None, body)
                responses.append({**response, "status": 200})
            except EsError as err:
                responses.append({**err.body(), "status": err.status})
        return {"took": 0, "responses": responses}

    def _index(self, name: str) -> FakeIndex:
        if name not in self.indices:
            raise EsError(404, "index_not_found_exception", f"no such index [{name}]")
        return self.indices[name]

    # ---- indices -------------------------------------------------------------
    def _create_index(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        if name in self.indices:
            raise EsError(
                400, "resource_already_exists_exception", f"index [{name}] already exists"
            )
        settings, mappings = body.get("settings", {}), body.get("mappings", {})
        similarities = settings.get("index", {}).get("similarity", {})
        for fname, spec in mappings.get("properties", {}).items():
            sim = spec.get("similarity")
            if (
                spec["type"] == "text"
                and sim
                and sim not in similarities
                and sim not in ("BM25", "boolean")
            ):
                raise EsError(
                    400,
                    "mapper_parsing_exception",
                    f"Unknown Similarity type [{sim}] for field [{fname}]",
                )
            if spec["type"] == "dense_vector" and not isinstance(spec.get("dims"), int):
                raise EsError(
                    400, "mapper_parsing_exception", f"[dims] must be an integer on [{fname}]"
                )
        self.indices[name] = FakeIndex(name, copy.deepcopy(settings), copy.deepcopy(mappings))
        return {"acknowledged": True, "shards_acknowledged": True, "index": name}

    def _check_document(self, index: FakeIndex, doc: dict[str, Any]) -> None:
        props = index.properties
        for fname, value in doc.items():
            spec = props.get(fname)
            if isinstance(value, list) and (spec or {}).get("type") not in (None, "dense_vector", "nested"):
                for element in value:  # any field takes an array of its values
                    self._check_document(index, {fname: element})
                continue
            if spec is None:
                if index.mappings.get("dynamic") == "strict":
                    raise EsError(
                        400,
                        "strict_dynamic_mapping_exception",
                        f"mapping set to strict, dynamic introduction of [{fname}] within [_doc] is not allowed",
                    )
                index.mappings.setdefault("properties", {})[fname] = _dynamic_mapping(value)
                continue
            if spec.get("type") == "dense_vector":
                if not isinstance(value, list) or len(value) != spec["dims"]:
                    raise EsError(
                        400,
                        "document_parsing_exception",
                        f"The [dense_vector] field [{fname}] in doc has a different number of dimensions than defined in the mapping [{spec['dims']}]",
                    )
                if spec.get("similarity", "cosine") == "cosine" and not any(value):
                    raise EsError(
                        400,
                        "document_parsing_exception",
                        f"The [cosine] similarity does not support vectors with zero magnitude. Preview of invalid vector: {value[:3]}",
                    )
            if spec.get("type") == "keyword" and not isinstance(value, str | int | float | bool):
                raise EsError(
                    400,
                    "document_parsing_exception",
                    f"failed to parse field [{fname}] of type [keyword]",
                )
            if spec.get("type") == "boolean" and not (isinstance(value, bool) or value in ("true", "false")):
                raise EsError(
                    400,
                    "document_parsing_exception",
                    f"failed to parse field [{fname}] of type [boolean]",
                )

    # ---- documents -----------------------------------------------------------
    def _document(self, index: FakeIndex, method: str, op: str, doc_id: str,
                  params: dict[str, str], body: Any) -> tuple[int, Any]:
        """The single-document APIs: ``GET``/``DELETE _doc``, ``PUT _create`` and ``PUT _doc``
        (with ``if_seq_no``/``if_primary_term`` checked against the live document)."""
        found = doc_id in index.live
        if method == "GET":
            if not found:
                return 404, {"_index": index.name, "_id": doc_id, "found": False}
            return 200, {"_index": index.name, "_id": doc_id, "found": True, "_seq_no": index.seq_nos[doc_id],
                         "_primary_term": 1, "_source": copy.deepcopy(index.live[doc_id])}
        if "if_seq_no" in params and (not found or index.seq_nos[doc_id] != int(params["if_seq_no"])
                                      or params.get("if_primary_term") != "1"):
            raise EsError(409, "version_conflict_engine_exception",
                          f"[{doc_id}]: version conflict, required seqNo [{params['if_seq_no']}]")
        if method == "DELETE":
            if not found:
                return 404, {"_index": index.name, "_id": doc_id, "result": "not_found"}
            del index.live[doc_id]
            index.deleted += 1
            result = {"result": "deleted", "_seq_no": index.next_seq_no(doc_id)}
        else:
            if op == "_create" and found:
                raise EsError(409, "version_conflict_engine_exception",
                              f"[{doc_id}]: version conflict, document already exists")
            self._check_document(index, body or {})
            index.live[doc_id] = copy.deepcopy(body)
            index.indexed += 1
            result = {"result": "updated" if found else "created", "_seq_no": index.next_seq_no(doc_id)}
        if params.get("refresh") in ("true", "wait_for", ""):
            index.refresh()
        return (200 if found else 201), {"_index": index.name, "_id": doc_id, "_primary_term": 1, **result}

    def _bulk(self, lines: list[dict[str, Any]], params: dict[str, str]) -> dict[str, Any]:
        items, errors, touched = [], False, set()
        i = 0
        while i < len(lines):
            ((op, header),) = lines[i].items()
            body = lines[i + 1] if op in ("index", "create", "update") else None
            i += 2 if body is not None else 1
            try:
                if op != "delete" and self.auto_create_index and header["_index"] not in self.indices:
                    # A real cluster creates a missing index for any write but a delete.
                    self.indices[header["_index"]] = FakeIndex(header["_index"], {}, {})
                index = self._index(header["_index"])
                touched.add(index.name)
                status = self._bulk_item(index, op, header["_id"], body)
                items.append({op: {"_index": index.name, "_id": header["_id"], "status": status}})
                if status == 404:
                    items[-1][op]["result"] = "not_found"
            except EsError as err:
                errors = True
                items.append(
                    {
                        op: {
                            "_index": header["_index"],
                            "_id": header["_id"],
                            "status": err.status,
                            "error": {"type": err.error_type, "reason": err.reason},
                        }
                    }
                )
        if params.get("refresh") in ("true", "wait_for", ""):
            for name in touched:
                self.indices[name].refresh()
        return {"took": 1, "errors": errors, "items": items}

    def _bulk_item(
        self, index: FakeIndex, op: str, doc_id: str, body: dict[str, Any] | None
    ) -> int:
        if op == "create":
            if doc_id in index.live:
                raise EsError(
                    409,
                    "version_conflict_engine_exception",
                    f"[{doc_id}]: version conflict, document already exists",
                )
            self._check_document(index, body or {})
            index.live[doc_id] = copy.deepcopy(body)
            index.indexed += 1
            return 201
        if op == "index":
            self._check_document(index, body or {})
            created = doc_id not in index.live
            index.live[doc_id] = copy.deepcopy(body)
            index.indexed += 1
            return 201 if created else 200
        if op == "update":
            if doc_id not in index.live:
                raise EsError(404, "document_missing_exception", f"[{doc_id}]: document missing")
            merged = {**index.live[doc_id], **copy.deepcopy(body["doc"])}
            self._check_document(index, merged)
            index.live[doc_id] = merged
            index.indexed += 1
            return 200
        if op == "delete":
            if doc_id not in index.live:
                return 404
            del index.live[doc_id]
            index.deleted += 1
            return 200
        raise EsError(400, "illegal_argument_exception", f"unknown bulk action [{op}]")

    def _mget(
        self, index: FakeIndex, body: dict[str, Any], params: dict[str, str]
    ) -> dict[str, Any]:
        docs = []
        for doc_id in body["ids"]:
            doc = index.live.get(doc_id)
            if doc is None:
                docs.append({"_index": index.name, "_id": doc_id, "found": False})
                continue
            entry: dict[str, Any] = {"_index": index.name, "_id": doc_id, "found": True}
            source = _filter_source(doc, params)
            if source is not None:
                entry["_source"] = source
            docs.append(entry)
        return {"docs": docs}

    # ---- search --------------------------------------------------------------
    def _search(self, index: FakeIndex | None, body: dict[str, Any]) -> dict[str, Any]:
        pit = body.get("pit")
        if pit is not None:
            if pit["id"] not in self.pits:
                raise EsError(404, "search_context_missing_exception", "No search context found")
            if "keep_alive" not in pit:
                raise EsError(400, "parsing_exception", "pit without keep_alive")
            index = self.indices[self.pit_index[pit["id"]]]
            docs = self.pits[pit["id"]]
        elif index is None:
            raise EsError(400, "illegal_argument_exception", "the fake needs an index or a pit")
        else:
            docs = index.visible
        size = body.get("size", 10)
        if size > 10_000:
            raise ShardError(
                400,
                "illegal_argument_exception",
                "Result window is too large, from + size must be less than or equal to: [10000]",
            )
        if "knn" in body:
            scored = self._knn(index, docs, body["knn"])
        else:
            query = body.get("query", {"match_all": {}})
            scored = [
                (i, self._score(index, docs, i, d, query))
                for i, d in docs.items()
                if self._matches(index, i, d, query)
            ]
        sort = body.get("sort")
        hits: list[dict[str, Any]] = []
        if sort:
            keyed = [(self._sort_key(index, docs[i], i, sort), i, s) for i, s in scored]
            keyed.sort(key=lambda t: t[0])
            after = body.get("search_after")
            if after is not None:
                keyed = [t for t in keyed if list(t[0]) > list(after)]
            for key, doc_id, _ in keyed[:size]:
                hits.append(self._hit(index, docs, doc_id, None, body, sort=list(key)))
        else:
            scored.sort(key=lambda t: -t[1])
            for doc_id, score in scored[:size]:
                hits.append(self._hit(index, docs, doc_id, score, body))
        response: dict[str, Any] = {
            "took": 1,
            "timed_out": False,
            "hits": {"hits": hits, "max_score": None},
        }
        if "aggs" in body:
            matched = [docs[i] for i, _ in scored]
            response["aggregations"] = {
                name: _composite(spec["composite"], matched) for name, spec in body["aggs"].items()
            }
        if pit is not None:
            response["pit_id"] = pit["id"]
        return response

    def _hit(
        self,
        index: FakeIndex,
        docs: dict[str, Any],
        doc_id: str,
        score: float | None,
        body: dict[str, Any],
        sort: list[Any] | None = None,
    ) -> dict[str, Any]:
        hit: dict[str, Any] = {"_index": index.name, "_id": doc_id, "_score": score}
        spec = body.get("_source", True)
        if body.get("stored_fields") == "_none_":  # no stored field read: neither _id nor _source
            del hit["_id"]
        elif spec is not False:
            hit["_source"] = _filter_source(docs[doc_id], {}, spec)
        if sort is not None:
            hit["sort"] = sort
        values = {f: _values(docs[doc_id][f]) for f in body.get("docvalue_fields", []) if docs[doc_id].get(f) is not None}
        if values:
            hit["fields"] = values
        return hit

    def _sort_key(
        self, index: FakeIndex, doc: dict[str, Any], doc_id: str, sort: list[dict[str, str]]
    ) -> tuple[Any, ...]:
        key = []
        for clause in sort:
            ((fname, order),) = clause.items()
            if fname == "_id":
                raise ShardError(
                    400,
                    "illegal_argument_exception",
                    "Fielddata access on the _id field is disallowed",
                )
            spec = index.properties.get(fname)
            if spec is None or spec["type"] == "text":
                raise ShardError(
                    400, "illegal_argument_exception", f"Fielddata is disabled on [{fname}]"
                )
            if order != "asc":
                raise EsError(400, "unsupported", "the fake sorts ascending only")
            key.append(doc.get(fname))
        return tuple(key)

    def _knn(
        self, index: FakeIndex, docs: dict[str, Any], knn: dict[str, Any]
    ) -> list[tuple[str, float]]:
        spec = index.properties.get(knn["field"], {})
        if spec.get("type") != "dense_vector" or spec.get("index") is False:
            raise EsError(
                400,
                "illegal_argument_exception",
                f"[knn] queries are only supported on indexed [dense_vector] fields, not [{knn['field']}]",
            )
        k, candidates = knn.get("k"), knn.get("num_candidates")
        if k is None or candidates is None:
            raise EsError(
                400, "illegal_argument_exception", "the fake wants explicit k and num_candidates"
            )
        if k > candidates:
            raise EsError(400, "illegal_argument_exception", "[num_candidates] cannot be less than [k]")
        if candidates > 10_000:
            raise EsError(400, "illegal_argument_exception", "[num_candidates] cannot exceed [10000]")
        query = knn["query_vector"]
        if len(query) != spec["dims"]:
            raise ShardError(
                400,
                "query_shard_exception",
                f"failed to create query: The query vector has a different number of dimensions [{len(query)}] than the document vectors [{spec['dims']}].",
            )
        qnorm = math.sqrt(sum(x * x for x in query))
        if qnorm == 0:
            raise ShardError(
                400,
                "query_shard_exception",
                "failed to create query: The [cosine] similarity does not support vectors with zero magnitude.",
            )
        flt = knn.get("filter")
        filters = flt if isinstance(flt, list) else ([flt] if flt else [])
        scored = []
        for doc_id, doc in docs.items():
            vector = doc.get(knn["field"])
            if vector is None or not all(self._matches(index, doc_id, doc, f) for f in filters):
                continue
            vnorm = math.sqrt(sum(x * x for x in vector))
            cos = sum(a * b for a, b in zip(query, vector)) / (qnorm * vnorm)
            scored.append((doc_id, (1.0 + cos) / 2.0))
        scored.sort(key=lambda t: -t[1])
        return scored[:k]

    # ---- queries -------------------------------------------------------------
    def _matches(
        self, index: FakeIndex, doc_id: str, doc: dict[str, Any], query: dict[str, Any]
    ) -> bool:
        ((kind, spec),) = query.items()
        if kind == "match_all":
            return True
        if kind == "match":
            ((fname, arg),) = spec.items()
            self._check_indexed(index, fname)
            text = arg["query"] if isinstance(arg, dict) else arg
            return bool(set(tokenize(text)) & set(tokenize(str(doc.get(fname, "")))))
        if kind == "term":
            ((fname, value),) = spec.items()
            value = value["value"] if isinstance(value, dict) else value
            self._check_indexed(index, fname, text_ok=False)
            return value in _values(doc.get(fname))
        if kind == "terms":
            ((fname, values),) = spec.items()
            self._check_indexed(index, fname, text_ok=False)
            if isinstance(values, dict):  # a terms lookup: a real-time get of one document's field
                source = self._index(values["index"]).live.get(values["id"], {})
                values = _values(source.get(values["path"]))
            if len(values) > 65_536:
                raise EsError(400, "illegal_argument_exception", "too many terms")
            return any(v in values for v in _values(doc.get(fname)))
        if kind == "ids":
            return doc_id in spec["values"]
        if kind == "exists":
            return doc.get(spec["field"]) is not None
        if kind == "prefix":
            ((fname, value),) = spec.items()
            value = value["value"] if isinstance(value, dict) else value
            self._check_indexed(index, fname, text_ok=False)
            return any(isinstance(v, str) and v.startswith(value) for v in _values(doc.get(fname)))
        if kind == "range":
            ((fname, bounds),) = spec.items()
            self._check_indexed(index, fname, text_ok=False)
            have = doc.get(fname)
            if have is None or isinstance(have, bool):
                return False
            for op, bound in bounds.items():
                if isinstance(bound, str) != isinstance(have, str):
                    return False  # a keyword compares as text, a number as a number
                ok = {"gt": have > bound, "gte": have >= bound, "lt": have < bound,
                      "lte": have <= bound}.get(op)
                if ok is None:
                    raise EsError(400, "parsing_exception", f"the fake does not know range [{op}]")
                if not ok:
                    return False
            return True
        if kind == "nested":
            path = spec["path"]
            if index.properties.get(path, {}).get("type") != "nested":
                raise EsError(400, "query_shard_exception",
                              f"[nested] failed to find nested object under path [{path}]")
            for entry in doc.get(path) or []:
                flat = {f"{path}.{k}": v for k, v in entry.items()}
                if self._matches(index, doc_id, flat, spec["query"]):
                    return True
            return False
        if kind == "bool":
            must = _as_list(spec.get("must")) + _as_list(spec.get("filter"))
            should = _as_list(spec.get("should"))
            must_not = _as_list(spec.get("must_not"))
            if not all(self._matches(index, doc_id, doc, q) for q in must):
                return False
            if any(self._matches(index, doc_id, doc, q) for q in must_not):
                return False
            if should:
                needed = spec.get("minimum_should_match", 0 if must else 1)
                return sum(self._matches(index, doc_id, doc, q) for q in should) >= needed
            return True
        raise EsError(400, "parsing_exception", f"the fake does not know the [{kind}] query")

    def _check_indexed(self, index: FakeIndex, fname: str, text_ok: bool = True) -> None:
        if "." in fname:
            parent, child = fname.split(".", 1)
            spec = index.properties.get(parent, {}).get("properties", {}).get(child)
        else:
            spec = index.properties.get(fname)
        if spec is None:
            return  # ES matches nothing on an unmapped field
        if spec.get("index") is False:
            raise ShardError(
                400,
                "query_shard_exception",
                f"failed to create query: Cannot search on field [{fname}] since it is not indexed.",
            )
        if spec["type"] == "text" and not text_ok:
            raise EsError(400, "test_smell", f"term query on analysed text field [{fname}]")

    def _score(
        self,
        index: FakeIndex,
        docs: dict[str, Any],
        doc_id: str,
        doc: dict[str, Any],
        query: dict[str, Any],
    ) -> float:
        ((kind, spec),) = query.items()
        if kind != "match":
            return (
                1.0
                if kind != "bool"
                else sum(
                    self._score(index, docs, doc_id, doc, q)
                    for q in _as_list(spec.get("must")) + _as_list(spec.get("should"))
                    if self._matches(index, doc_id, doc, q)
                )
                or 0.0
            )
        ((fname, arg),) = spec.items()
        text = arg["query"] if isinstance(arg, dict) else arg
        k1, b = index.bm25_params(fname)
        corpus = [tokenize(str(d.get(fname, ""))) for d in docs.values()]
        avgdl = sum(map(len, corpus)) / max(1, len(corpus))
        tokens = tokenize(str(doc.get(fname, "")))
        score = 0.0
        for term in tokenize(text):
            df = sum(1 for toks in corpus if term in toks)
            tf = tokens.count(term)
            if tf == 0:
                continue
            idf = math.log(1 + (len(corpus) - df + 0.5) / (df + 0.5))
            score += idf * tf / (tf + k1 * (1 - b + b * len(tokens) / avgdl))
        return score


def _composite(spec: dict[str, Any], docs: list[dict[str, Any]]) -> dict[str, Any]:
    """A ``composite`` aggregation of ``terms`` sources (what the backend sends), in key
    order, ``size`` buckets after ``after``."""
    names = [next(iter(source)) for source in spec["sources"]]
    fields = [source[name]["terms"]["field"] for source, name in zip(spec["sources"], names)]
    counts: dict[tuple[Any, ...], int] = {}
    for doc in docs:
        for key in itertools.product(*(_values(doc.get(f)) for f in fields)):
            counts[key] = counts.get(key, 0) + 1
    keys = sorted(counts)
    if spec.get("after") is not None:
        after = tuple(spec["after"][n] for n in names)
        keys = [k for k in keys if k > after]
    page = keys[: spec.get("size", 10)]
    buckets = [{"key": dict(zip(names, k)), "doc_count": counts[k]} for k in page]
    result: dict[str, Any] = {"buckets": buckets}
    if buckets:
        result["after_key"] = buckets[-1]["key"]
    return result


def _values(value: Any) -> list[Any]:
    """A field's values: a list's elements, a scalar alone, nothing for a missing field."""
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _dynamic_mapping(value: Any) -> dict[str, Any]:
    """The field Elasticsearch's dynamic mapping makes for a first value (``_doc`` defaults)."""
    if isinstance(value, list):
        return _dynamic_mapping(value[0]) if value else {"type": "keyword"}
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int):
        return {"type": "long"}
    if isinstance(value, float):
        return {"type": "float"}
    if isinstance(value, dict):
        return {"properties": {k: _dynamic_mapping(v) for k, v in value.items()}}
    return {"type": "text", "fields": {"keyword": {"type": "keyword", "ignore_above": 256}}}


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _filter_source(
    doc: dict[str, Any], params: dict[str, str], spec: Any = True
) -> dict[str, Any] | None:
    """``_source`` after the ``_source*`` query parameters or a search ``_source`` spec."""
    if params.get("_source") == "false" or spec is False:
        return None
    includes = params.get("_source_includes")
    excludes = params.get("_source_excludes")
    inc = (
        includes.split(",")
        if includes
        else (spec.get("includes") if isinstance(spec, dict) else None)
    )
    exc = (
        excludes.split(",")
        if excludes
        else (spec.get("excludes", []) if isinstance(spec, dict) else [])
    )
    out = {k: copy.deepcopy(v) for k, v in doc.items() if k not in exc}
    if inc:
        out = {k: v for k, v in out.items() if k in inc}
    return out
