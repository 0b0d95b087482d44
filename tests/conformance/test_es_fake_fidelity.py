"""The fake Elasticsearch answers as a real 8.19 cluster did, request by request.

Every request below was sent to a real cluster (``tests/es-cluster``, Elasticsearch
8.19.4); the answer expected here is what it said, reduced to what the backend reads: the
HTTP status, the error type (and its root cause), each bulk item's status and error type,
each ``_mget`` document's state. The same requests run against ``es_fake.py`` (always) and
the live cluster (marker ``es``), so the fake cannot drift from the real thing unnoticed.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("elasticsearch")

from gear_agent.store.elasticsearch.client import REQUEST_TIMEOUT_S, error_cause  # noqa: E402
from gear_agent.store.elasticsearch.mappings import index_mappings, index_settings  # noqa: E402

Sender = Callable[[str, str, Any], tuple[int, Any]]

_JSON = "application/vnd.elasticsearch+json;compatible-with=8"
_NDJSON = "application/vnd.elasticsearch+x-ndjson;compatible-with=8"


def _summary(status: int, body: Any) -> tuple[Any, ...]:
    if isinstance(body, dict) and "items" in body:
        items = []
        for item in body["items"]:
            ((op, result),) = item.items()
            items.append((op, result["status"], (result.get("error") or {}).get("type")))
        return status, items
    if isinstance(body, dict) and "docs" in body:
        return status, [
            (d.get("found"), error_cause(d["error"])["type"] if "error" in d else None)
            for d in body["docs"]
        ]
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return status, body["error"]["type"], error_cause(body["error"])["type"]
    return (status,)


@pytest.fixture(params=["es-fake", pytest.param("elasticsearch", marks=pytest.mark.es)])
def send(request: pytest.FixtureRequest) -> Iterator[tuple[Sender, str]]:
    from elasticsearch import Elasticsearch

    if request.param == "es-fake":
        from es_fake import FakeElasticsearch

        client = FakeElasticsearch().client()
    else:
        # the backend's timeout, and no silent re-sends (a re-sent PUT would answer 400)
        client = Elasticsearch(request.getfixturevalue("es_url"), request_timeout=REQUEST_TIMEOUT_S,
                               max_retries=0)
    prefix = f"gear-fidelity-{uuid.uuid4().hex[:8]}"

    def sender(method: str, path: str, body: Any = None) -> tuple[int, Any]:
        headers = {"accept": _JSON}
        if isinstance(body, list):
            headers["content-type"] = _NDJSON
            body = "".join(json.dumps(line) + "\n" for line in body)
        elif body is not None:
            headers["content-type"] = _JSON
        try:
            response = client.perform_request(method, path, headers=headers, body=body)
            return response.meta.status, response.body
        except Exception as err:  # noqa: BLE001 - the client's ApiError carries the answer
            meta = getattr(err, "meta", None)
            if meta is None:
                raise
            return meta.status, getattr(err, "body", None)

    try:
        yield sender, prefix
    finally:
        for name in ("p", "gone"):  # by name: a wildcard delete is refused by default
            sender("DELETE", f"/{prefix}-{name}")
        client.close()


def _doc(doc_id: str, **changes: Any) -> dict[str, Any]:
    doc = {
        "id": doc_id, "title": "T", "title_key": "T", "text": "hello world",
        "content": "T hello world", "source": "s", "extracted": False, "metadata": {},
        "meta": [], "vector": [1.0, 0.0, 0.0, 0.0],
    }
    return {**doc, **changes}


def _create(index: str, doc_id: str, doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"create": {"_index": index, "_id": doc_id}}, doc]


def test_the_fake_answers_as_a_real_cluster(send: tuple[Sender, str]) -> None:
    request, prefix = send
    index, gone = f"{prefix}-p", f"{prefix}-gone"
    mappings = index_mappings("passage", "m", 4)
    got = {}

    def check(name: str, method: str, path: str, body: Any = None) -> None:
        got[name] = _summary(*request(method, path, body))

    check("create index", "PUT", f"/{index}", {"settings": index_settings(), "mappings": mappings})
    check("create it again", "PUT", f"/{index}", {"settings": index_settings(), "mappings": mappings})
    check("bulk: new, repeat, zero vector, wrong dims, unknown field, coerced values", "POST", "/_bulk", [
        *_create(index, "a", _doc("a")),
        *_create(index, "a", _doc("a")),
        *_create(index, "z", _doc("z", vector=[0.0, 0.0, 0.0, 0.0])),
        *_create(index, "d", _doc("d", vector=[1.0, 0.0, 0.0])),
        *_create(index, "s", _doc("s", extra=1)),
        *_create(index, "n", _doc(5, extracted="true")),  # type: ignore[arg-type]
    ])
    check("bulk: update and delete of a missing document", "POST", "/_bulk", [
        {"update": {"_index": index, "_id": "nope"}}, {"doc": {"extracted": True}},
        {"delete": {"_index": index, "_id": "nope"}},
    ])
    check("bulk: delete in a missing index", "POST", "/_bulk", [{"delete": {"_index": gone, "_id": "x"}}])
    check("the delete created no index", "HEAD", f"/{gone}")
    check("mget in a missing index", "POST", f"/{gone}/_mget", {"ids": ["a"]})
    check("search in a missing index", "POST", f"/{gone}/_search", {"query": {"match_all": {}}})
    check("bulk: update in a missing index", "POST", "/_bulk", [
        {"update": {"_index": gone, "_id": "x"}}, {"doc": {"extracted": True}},
    ])
    check("the update created the index", "HEAD", f"/{gone}")
    check("bulk: create in the auto-created index", "POST", "/_bulk", _create(gone, "x", _doc("x")))
    check("refresh", "POST", f"/{index}/_refresh")
    check("mget", "POST", f"/{index}/_mget", {"ids": ["a", "n", "z"]})
    check("match on a field not indexed", "POST", f"/{index}/_search", {"query": {"match": {"text": "hello"}}})
    check("sort on a text field", "POST", f"/{index}/_search", {"query": {"match_all": {}}, "sort": [{"content": "asc"}]})
    check("sort on _id", "POST", f"/{index}/_search", {"query": {"match_all": {}}, "sort": [{"_id": "asc"}]})
    check("size over 10,000", "POST", f"/{index}/_search", {"query": {"match_all": {}}, "size": 10_001})
    knn = {"field": "vector", "query_vector": [1.0, 0.0, 0.0, 0.0], "k": 1, "num_candidates": 10}
    check("knn: k over num_candidates", "POST", f"/{index}/_search", {"knn": {**knn, "k": 20}})
    check("knn: num_candidates over 10,000", "POST", f"/{index}/_search", {"knn": {**knn, "num_candidates": 10_001}})
    check("knn: zero query vector", "POST", f"/{index}/_search", {"knn": {**knn, "query_vector": [0.0] * 4}})
    check("knn: wrong dims", "POST", f"/{index}/_search", {"knn": {**knn, "query_vector": [1.0] * 3}})
    check("point in time without keep_alive", "POST", f"/{index}/_pit")
    check("mapping: change a field's type", "PUT", f"/{index}/_mapping", {"properties": {"source": {"type": "long"}}})

    assert got == {
        "create index": (200,),
        "create it again": (400, "resource_already_exists_exception", "resource_already_exists_exception"),
        "bulk: new, repeat, zero vector, wrong dims, unknown field, coerced values": (200, [
            ("create", 201, None),
            ("create", 409, "version_conflict_engine_exception"),
            ("create", 400, "document_parsing_exception"),
            ("create", 400, "document_parsing_exception"),
            ("create", 400, "strict_dynamic_mapping_exception"),
            ("create", 201, None),
        ]),
        "bulk: update and delete of a missing document": (200, [
            ("update", 404, "document_missing_exception"),
            ("delete", 404, None),
        ]),
        "bulk: delete in a missing index": (200, [("delete", 404, "index_not_found_exception")]),
        "the delete created no index": (404,),
        "mget in a missing index": (200, [(None, "index_not_found_exception")]),
        "search in a missing index": (404, "index_not_found_exception", "index_not_found_exception"),
        "bulk: update in a missing index": (200, [("update", 404, "document_missing_exception")]),
        "the update created the index": (200,),
        "bulk: create in the auto-created index": (200, [("create", 201, None)]),
        "refresh": (200,),
        "mget": (200, [(True, None), (True, None), (False, None)]),
        "match on a field not indexed": (400, "search_phase_execution_exception", "query_shard_exception"),
        "sort on a text field": (400, "search_phase_execution_exception", "illegal_argument_exception"),
        "sort on _id": (400, "search_phase_execution_exception", "illegal_argument_exception"),
        "size over 10,000": (400, "search_phase_execution_exception", "illegal_argument_exception"),
        "knn: k over num_candidates": (400, "illegal_argument_exception", "illegal_argument_exception"),
        "knn: num_candidates over 10,000": (400, "illegal_argument_exception", "illegal_argument_exception"),
        "knn: zero query vector": (400, "search_phase_execution_exception", "query_shard_exception"),
        "knn: wrong dims": (400, "search_phase_execution_exception", "query_shard_exception"),
        "point in time without keep_alive": (400, "action_request_validation_exception", "action_request_validation_exception"),
        "mapping: change a field's type": (400, "illegal_argument_exception", "illegal_argument_exception"),
    }
