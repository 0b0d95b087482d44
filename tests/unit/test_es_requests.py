"""Every request the Elasticsearch backend sends, checked against the ES 8 query DSL.

The real ``elasticsearch`` client talks to a recording node (``node_class``)
that answers from a small script, so what is checked is the JSON that would go
on the wire. Reference (Elasticsearch 8 docs): index similarity settings
(``index.similarity.<name>``, ``type: BM25``, ``k1``, ``b``), ``dense_vector``
(``dims``, ``index``, ``similarity``, ``index_options``), the search API's
top-level ``knn`` option (``field``, ``query_vector``, ``k``,
``num_candidates``, ``filter``), ``match``/``term``/``terms``/``ids``/``bool``
queries, ``_bulk`` actions (``create``/``update``/``delete`` with ``_index``,
``_id``), ``_mget``, and point-in-time paging.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import numpy as np
import pytest

pytest.importorskip("elasticsearch")

from elastic_transport import ApiResponseMeta, BaseNode, HttpHeaders  # noqa: E402
from elastic_transport._node import NodeApiResponse  # noqa: E402
from elasticsearch import Elasticsearch  # noqa: E402

from gear_agent.config import GearSettings  # noqa: E402
from gear_agent.embedding.base import Embedder, normalise_rows  # noqa: E402
from gear_agent.ids import passage_id, triple_id  # noqa: E402
from gear_agent.store.base import ModelMismatchError, StoreError  # noqa: E402
from gear_agent.store.elasticsearch import queries as q  # noqa: E402
from gear_agent.store.elasticsearch.changes import visible_at  # noqa: E402
from gear_agent.store.elasticsearch.client import import_elasticsearch, make_client  # noqa: E402
from gear_agent.store.elasticsearch.mappings import index_mappings, index_settings  # noqa: E402
from gear_agent.store.elasticsearch.store import BulkWriteError, ElasticsearchStore  # noqa: E402
from gear_agent.types import Passage, Triple  # noqa: E402

SEEN = visible_at(0)
"""What every search and walk outside a snapshot adds: only documents of the published
generation (0 on these fresh indices) and not retired by it (the atomic sync by source,
:mod:`gear_agent.store.elasticsearch.sync`)."""

DIM = 8
PASSAGE_INDEX = "gear-passages"
TRIPLE_INDEX = "gear-triples"


class FixedEmbedder(Embedder):
    """Vector i has a 1 in bucket ``len(text) % DIM`` (never zero unless told)."""

    def __init__(self, name: str = "fixed-model", zero_for: str | None = None) -> None:
        self.name = name
        self.zero_for = zero_for

    @property
    def dimension(self) -> int:
        return DIM

    def embed(self, texts: Any) -> np.ndarray:
        rows = np.zeros((len(texts), DIM), dtype=np.float32)
        for i, text in enumerate(texts):
            if text != self.zero_for:
                rows[i, len(text) % DIM] = 1.0
                rows[i, 0] += 0.5
        return normalise_rows(rows)


@dataclass
class Sent:
    method: str
    path: str
    params: dict[str, str]
    body: Any


Reply = tuple[int, Any]


@dataclass
class Cluster:
    """A scripted single node: sane defaults, per-endpoint queues of canned replies."""

    version: str = "8.15.0"
    mappings: dict[str, dict[str, Any]] = field(default_factory=dict)
    stored: set[str] = field(default_factory=set)
    replies: dict[str, list[Reply | Callable[[Sent], Reply]]] = field(default_factory=dict)
    sent: list[Sent] = field(default_factory=list)
    generation: int = 0  # what _stats/indexing reports

    def queue(self, endpoint: str, *replies: Reply | Callable[[Sent], Reply]) -> None:
        self.replies.setdefault(endpoint, []).extend(replies)

    def of(self, endpoint: str) -> list[Sent]:
        return [s for s in self.sent if s.path.split("/")[-1] == endpoint]

    def client(self, **kwargs: Any) -> Elasticsearch:
        cluster = self

        class RecordingNode(BaseNode):
            _CLIENT_META_HTTP_CLIENT = ("rec", "1.0")

            def perform_request(
                self, method, target, body=None, headers=None, request_timeout=None
            ):  # type: ignore[override]  # noqa: E501
                status, payload = cluster.answer(method, target, body)
                meta = ApiResponseMeta(
                    status=status,
                    http_version="1.1",
                    headers=HttpHeaders(
                        {
                            "content-type": "application/vnd.elasticsearch+json;compatible-with=8",
                            "x-elastic-product": "Elasticsearch",
                        }
                    ),
                    duration=0.0,
                    node=self.config,
                )
                raw = b"" if payload is None else json.dumps(payload).encode()
                return NodeApiResponse(meta, raw)

        return Elasticsearch("http://es.test:9200", node_class=RecordingNode, **kwargs)

    def document(self, sent: Sent, index: str, op: str, doc_id: str) -> Reply:
        """The single-document APIs the change feed uses (``_create``, ``_doc``), kept in
        :attr:`documents`."""
        docs = self.__dict__.setdefault("documents", {})
        key = (index, doc_id)
        if sent.method == "GET":
            if key not in docs:
                return 404, {"_id": doc_id, "found": False}
            return 200, {"_id": doc_id, "found": True, "_seq_no": 0, "_primary_term": 1, "_source": docs[key]}
        if sent.method == "DELETE":
            return (200, {"result": "deleted"}) if docs.pop(key, None) is not None else (404, {"result": "not_found"})
        if op == "_create" and key in docs:
            return 409, {"error": {"type": "version_conflict_engine_exception", "reason": "exists"}, "status": 409}
        docs[key] = sent.body
        return 201, {"_id": doc_id, "result": "created", "_seq_no": 0, "_primary_term": 1}

    def answer(self, method: str, target: str, body: bytes | None) -> Reply:
        url = urlsplit(target)
        params = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        path = unquote(url.path)
        text = body.decode() if body else ""
        if path.endswith(("/_bulk", "/_msearch")):
            parsed: Any = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            parsed = json.loads(text) if text else None
        sent = Sent(method, path, params, parsed)
        self.sent.append(sent)
        endpoint = path.split("/")[-1] if path != "/" else "/"
        if method == "HEAD":
            endpoint = "HEAD"
        queued = self.replies.get(endpoint)
        if queued:
            reply = queued.pop(0)
            return reply(sent) if callable(reply) else reply
        return self.default(sent, endpoint)

    def default(self, sent: Sent, endpoint: str) -> Reply:
        index = sent.path.strip("/").split("/")[0]
        parts = sent.path.strip("/").split("/")
        if len(parts) == 3 and parts[1] in ("_doc", "_create"):  # the change feed's documents
            return self.document(sent, parts[0], parts[1], parts[2])
        if endpoint == "/":
            return 200, {"version": {"number": self.version}, "tagline": "You Know, for Search"}
        if endpoint == "HEAD":
            return (200 if index in self.mappings else 404), None
        if sent.method == "PUT" and "/" not in sent.path.strip("/") and endpoint != "_bulk":
            self.mappings[index] = sent.body["mappings"]
            return 200, {"acknowledged": True}
        if endpoint == "_mapping":
            return 200, {index: {"mappings": self.mappings[index]}}
        if endpoint == "_bulk":
            return 200, {"errors": False, "items": [_ok(line) for line in _headers(sent.body)]}
        if endpoint == "_mget":
            return 200, {"docs": [{"_id": i, "found": i in self.stored} for i in sent.body["ids"]]}
        if endpoint == "_search":
            return 200, {"hits": {"hits": []}}
        if endpoint == "_msearch":  # each search answered as a queued (or default) _search
            responses = []
            for body in sent.body[1::2]:
                one = Sent("POST", sent.path.replace("_msearch", "_search"), {}, body)
                queued = self.replies.get("_search")
                status, payload = queued.pop(0) if queued else self.default(one, "_search")
                responses.append({**payload, "status": status})
            return 200, {"responses": responses}
        if endpoint == "indexing":  # GET {indices}/_stats/indexing
            return 200, {"_all": {"primaries": {"indexing": {"index_total": self.generation, "delete_total": 0}}}}
        if endpoint == "index.uuid":  # GET {indices}/_settings/index.uuid (the stamp's index id)
            return 200, {name: {"settings": {"index": {"uuid": f"uuid-{name}"}}} for name in index.split(",")}
        if endpoint == "_pit":
            return 200, ({"id": "pit-xyz"} if sent.method == "POST" else {"succeeded": True})
        if endpoint == "_count":
            return 200, {"count": 0}
        if endpoint == "_refresh":
            return 200, {"_shards": {"failed": 0}}
        raise AssertionError(f"unexpected request {sent}")


def _headers(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The action lines of a bulk body (bodies follow create/index/update headers)."""
    out, i = [], 0
    while i < len(lines):
        out.append(lines[i])
        (op,) = lines[i]
        i += 1 if op == "delete" else 2
    return out


def _ok(header: dict[str, Any]) -> dict[str, Any]:
    ((op, meta),) = header.items()
    return {
        op: {"_index": meta["_index"], "_id": meta["_id"], "status": 201 if op == "create" else 200}
    }


def _item(header: dict[str, Any], status: int, error_type: str = "", reason: str = "") -> dict:
    ((op, meta),) = header.items()
    item: dict[str, Any] = {"_index": meta["_index"], "_id": meta["_id"], "status": status}
    if error_type:
        item["error"] = {"type": error_type, "reason": reason}
    return {op: item}


def _every_item(status: int, error_type: str, reason: str) -> Callable[[Sent], Reply]:
    """A bulk reply giving every item the same status."""

    def reply(sent: Sent) -> Reply:
        items = [_item(h, status, error_type, reason) for h in _headers(sent.body)]
        return 200, {"errors": True, "items": items}

    return reply


def _passages(n: int) -> list[Passage]:
    return [
        Passage(passage_id(f"T{i}", f"text {i}"), f"T{i}", f"text {i}", "src") for i in range(n)
    ]


def _open(cluster: Cluster, embedder: Embedder | None = None, **kwargs: Any) -> ElasticsearchStore:
    sleeps = kwargs.pop("sleeps", [])
    return ElasticsearchStore(
        GearSettings(backend="elasticsearch"),
        embedder or FixedEmbedder(),
        client=cluster.client(max_retries=0),
        sleep=sleeps.append,
        **kwargs,
    )


def _open_remote(cluster: Cluster, **kwargs: Any) -> ElasticsearchStore:
    """A store whose graph reads go to the cluster, as a store's do while it writes (else
    they are answered from the triples kept in the process: ``elasticsearch.graph_cache``)."""
    store = _open(cluster, **kwargs)
    store._expansion = lambda build=True: None  # type: ignore[method-assign]
    return store


# ---- start-up: version, mappings, model ----------------------------------------


def test_startup_asks_info_then_creates_both_indices_with_explicit_mappings() -> None:
    cluster = Cluster()
    _open(cluster)
    assert [(s.method, s.path) for s in cluster.sent] == [
        ("GET", "/"),
        ("HEAD", "/gear-passages"),
        ("PUT", "/gear-passages"),
        ("HEAD", "/gear-triples"),
        ("PUT", "/gear-triples"),
        ("HEAD", "/gear-changes"),  # the change feed (gear_agent.store.elasticsearch.changes)
        ("PUT", "/gear-changes"),
        ("GET", "/gear-passages,gear-triples/_stats/indexing"),
        ("PUT", "/gear-changes/_create/generation"),
    ]
    for create in (cluster.sent[2], cluster.sent[4]):
        settings = create.body["settings"]["index"]
        assert settings["number_of_shards"] == 1
        assert settings["similarity"] == {"gear_bm25": {"type": "BM25", "k1": 1.2, "b": 0.75}}
        mappings = create.body["mappings"]
        assert mappings["dynamic"] == "strict"
        assert mappings["_meta"]["gear_agent"]["embedding_model"] == "fixed-model"
        assert mappings["_meta"]["gear_agent"]["dimension"] == DIM
        vector = mappings["properties"]["vector"]
        assert vector == {
            "type": "dense_vector",
            "dims": DIM,
            "index": True,
            "similarity": "cosine",
            "index_options": {"type": "hnsw", "m": 16, "ef_construction": 100},
        }
        assert mappings["properties"]["id"] == {"type": "keyword"}
    passages = cluster.sent[2].body["mappings"]["properties"]
    assert passages["content"] == {
        "type": "text",
        "analyzer": "standard",
        "similarity": "gear_bm25",
    }
    assert passages["source"] == {"type": "keyword"}
    assert passages["extracted"] == {"type": "boolean"}
    assert passages["title"] == passages["text"] == {"type": "text", "index": False}
    triples = cluster.sent[4].body["mappings"]["properties"]
    assert triples["text"] == {"type": "text", "analyzer": "standard", "similarity": "gear_bm25"}
    for name in ("head", "tail", "passage_id"):
        assert triples[name] == {"type": "keyword"}


def test_the_word_tokenizer_creates_its_analyzer_and_records_it() -> None:
    cluster = Cluster()
    ElasticsearchStore(GearSettings(backend="elasticsearch", bm25_tokenizer="word"), FixedEmbedder(),
                       client=cluster.client(max_retries=0), sleep=lambda _: None)
    for create in (cluster.sent[2], cluster.sent[4]):
        analysis = create.body["settings"]["index"]["analysis"]
        assert analysis["analyzer"]["gear_word"]["tokenizer"] == "gear_word"
        assert analysis["tokenizer"]["gear_word"] == {"type": "pattern", "pattern": r"[\p{L}\p{N}_]+", "group": 0}
        assert create.body["mappings"]["_meta"]["gear_agent"]["tokenizer"] == "word"
    assert cluster.sent[2].body["mappings"]["properties"]["content"]["analyzer"] == "gear_word"
    assert cluster.sent[4].body["mappings"]["properties"]["text"]["analyzer"] == "gear_word"
    assert "analysis" not in index_settings("standard")["index"]


@pytest.mark.parametrize(("made", "configured"), [("standard", "word"), ("word", "standard")])
def test_an_index_made_with_another_tokenizer_is_refused_in_one_line(made: str, configured: str) -> None:
    mapping = index_mappings("passage", "fixed-model", DIM, made)
    cluster = Cluster(mappings={PASSAGE_INDEX: mapping})
    with pytest.raises(StoreError, match=f"BM25 tokenizer '{made}'.*GEAR_BM25_TOKENIZER is '{configured}'") as err:
        ElasticsearchStore(GearSettings(backend="elasticsearch", bm25_tokenizer=configured), FixedEmbedder(),
                           client=cluster.client(max_retries=0), sleep=lambda _: None)
    assert "\n" not in str(err.value)


def test_an_index_made_before_the_tokenizer_was_recorded_is_standard() -> None:
    mapping = index_mappings("passage", "fixed-model", DIM)
    del mapping["_meta"]["gear_agent"]["tokenizer"]
    _open(Cluster(mappings={PASSAGE_INDEX: mapping})).close()


@pytest.mark.parametrize(
    "version", ["7.17.20", "9.0.1", "8.3.3"], ids=["7.x", "9.x", "8.3-no-knn-option"]
)
def test_an_unsupported_server_is_refused_with_words(version: str) -> None:
    with pytest.raises(StoreError, match=r"version .*supports 8\.x servers from 8\.4"):
        _open(Cluster(version=version))


def test_opensearch_is_refused() -> None:
    cluster = Cluster()
    cluster.queue("/", (200, {"version": {"number": "2.11.0", "distribution": "opensearch"}}))
    with pytest.raises(StoreError, match="OpenSearch"):
        _open(cluster)


def test_existing_index_with_another_model_is_refused_naming_both() -> None:
    cluster = Cluster(mappings={PASSAGE_INDEX: index_mappings("passage", "old-model", DIM)})
    with pytest.raises(ModelMismatchError, match="old-model.*fixed-model"):
        _open(cluster)


def test_existing_index_of_another_dimension_is_refused() -> None:
    cluster = Cluster(mappings={PASSAGE_INDEX: index_mappings("passage", "fixed-model", 384)})
    with pytest.raises(ModelMismatchError, match="384"):
        _open(cluster)


def test_existing_index_not_made_by_gear_is_refused() -> None:
    cluster = Cluster(mappings={PASSAGE_INDEX: {"properties": {"body": {"type": "text"}}}})
    with pytest.raises(StoreError, match="not created by gear-agent"):
        _open(cluster)


def test_existing_index_with_an_incompatible_field_is_refused() -> None:
    mapping = index_mappings("triple", "fixed-model", DIM)
    mapping["properties"]["head"] = {"type": "text"}
    del mapping["properties"]["passage_id"]
    cluster = Cluster(mappings={TRIPLE_INDEX: mapping})
    with pytest.raises(StoreError, match="incompatible mapping.*head.type.*passage_id' is missing"):
        _open(cluster)


def test_existing_compatible_indices_are_used_as_they_are() -> None:
    cluster = Cluster(
        mappings={
            PASSAGE_INDEX: index_mappings("passage", "fixed-model", DIM),
            TRIPLE_INDEX: index_mappings("triple", "fixed-model", DIM),
        }
    )
    # what GET _mapping shows may leave defaults out: no 'index' or 'similarity' here
    del cluster.mappings[PASSAGE_INDEX]["properties"]["vector"]["index"]
    _open(cluster)
    assert not [s for s in cluster.sent if s.method == "PUT" and not s.path.startswith("/gear-changes")]


def test_missing_index_with_create_false_is_an_error() -> None:
    with pytest.raises(StoreError, match="gear index"):
        _open(Cluster(), create=False)


def test_index_created_meanwhile_by_another_process_is_checked_not_recreated() -> None:
    cluster = Cluster()

    def lost_race(sent: Sent) -> Reply:
        cluster.mappings[sent.path.strip("/")] = sent.body["mappings"]
        return 400, {"error": {"type": "resource_already_exists_exception", "reason": "exists"}}

    cluster.queue("gear-passages", lost_race)
    _open(cluster)
    assert ("GET", "/gear-passages/_mapping") in [(s.method, s.path) for s in cluster.sent]


# ---- connection problems -------------------------------------------------------


def test_unauthorised_says_which_settings_to_set() -> None:
    cluster = Cluster()
    cluster.queue("/", (401, {"error": {"type": "security_exception", "reason": "missing auth"}}))
    with pytest.raises(StoreError, match="authentication failed.*GEAR_ES_API_KEY"):
        _open(cluster)


def test_unreachable_cluster_says_what_to_check() -> None:
    client = Elasticsearch("http://127.0.0.1:1", max_retries=0, request_timeout=2)
    with pytest.raises(StoreError, match="cannot reach the cluster.*GEAR_ES_URL"):
        ElasticsearchStore(GearSettings(backend="elasticsearch"), FixedEmbedder(), client=client)


def test_make_client_needs_a_url_and_complete_credentials() -> None:
    with pytest.raises(StoreError, match="GEAR_ES_URL"):
        make_client(GearSettings(backend="elasticsearch"))
    with pytest.raises(StoreError, match="GEAR_ES_PASSWORD"):
        make_client(GearSettings(es_url="http://x:9200", es_username="elastic"))
    client = make_client(GearSettings(es_url="http://x:9200", es_api_key="k3y"))
    assert client._headers["authorization"] == "ApiKey k3y"
    client = make_client(GearSettings(es_url="http://x:9200", es_username="u", es_password="p"))
    assert client._headers["authorization"].startswith("Basic ")


def test_missing_package_gives_the_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "elasticsearch", None)
    with pytest.raises(StoreError, match=r"pip install 'gear-agent\[elasticsearch\]'"):
        import_elasticsearch()


def test_a_9x_client_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    import elasticsearch

    monkeypatch.setattr(elasticsearch, "VERSION", (9, 0, 0))
    monkeypatch.setattr(elasticsearch, "__versionstr__", "9.0.0")
    with pytest.raises(StoreError, match=r"9\.0\.0.*only the 8\.x client.*media-type"):
        import_elasticsearch()


# ---- writes --------------------------------------------------------------------


def test_add_passages_checks_existence_then_bulk_creates_with_content_hash_ids() -> None:
    cluster = Cluster()
    store = _open(cluster)
    passages = _passages(3)
    cluster.stored.add(passages[1].id)
    result = store.passages.add(passages)
    assert result.added == [passages[0].id, passages[2].id]
    assert result.existing == [passages[1].id]
    (mget,) = cluster.of("_mget")
    assert mget.path == "/gear-passages/_mget"
    assert mget.params == {"_source": "false"}
    assert mget.body == {"ids": [p.id for p in passages]}
    (bulk,) = cluster.of("_bulk")
    assert bulk.params == {}  # refreshed by one explicit _refresh at the end instead
    assert bulk.body[0] == {"create": {"_index": PASSAGE_INDEX, "_id": passages[0].id}}
    doc = bulk.body[1]
    assert doc["id"] == passages[0].id
    assert doc["content"] == "T0\ntext 0"
    assert doc["extracted"] is False
    assert len(doc["vector"]) == DIM
    assert bulk.body[2] == {"create": {"_index": PASSAGE_INDEX, "_id": passages[2].id}}
    assert len(bulk.body) == 4
    assert doc["generation"] == 1  # the commit it belongs to, published after the refresh
    assert [(s.method, s.path) for s in cluster.sent[-3:]] == [
        ("POST", "/gear-passages/_refresh"), ("PUT", "/gear-changes/_doc/generation"),
        ("DELETE", "/gear-changes/_doc/lock")]


def test_bulk_is_sent_in_batches() -> None:
    cluster = Cluster()
    store = _open(cluster, bulk_batch_size=2)
    store.passages.add(_passages(5))
    assert [len(_headers(b.body)) for b in cluster.of("_bulk")] == [2, 2, 1]
    assert len(cluster.of("_refresh")) == 1


def test_a_create_conflict_counts_as_existing_not_as_failure() -> None:
    cluster = Cluster()
    store = _open(cluster)
    passages = _passages(2)
    cluster.queue(
        "_bulk",
        lambda s: (
            200,
            {
                "errors": True,
                "items": [
                    _ok(s.body[0]),
                    _item(s.body[2], 409, "version_conflict_engine_exception", "already exists"),
                ],
            },
        ),
    )
    result = store.passages.add(passages)
    assert result.added == [passages[0].id]
    assert result.existing == [passages[1].id]


def test_only_rejected_items_are_retried_after_a_backoff() -> None:
    cluster = Cluster()
    sleeps: list[float] = []
    store = _open(cluster, sleeps=sleeps, initial_backoff_s=0.25)
    passages = _passages(4)
    rejected = (
        429,
        "es_rejected_execution_exception",
        "rejected execution of coordinating operation",
    )

    def first(s: Sent) -> Reply:
        h = _headers(s.body)
        return 200, {
            "errors": True,
            "items": [_ok(h[0]), _item(h[1], *rejected), _ok(h[2]), _item(h[3], *rejected)],
        }

    def second(s: Sent) -> Reply:
        h = _headers(s.body)
        return 200, {"errors": True, "items": [_ok(h[0]), _item(h[1], *rejected)]}

    cluster.queue("_bulk", first, second)
    result = store.passages.add(passages)
    bulks = cluster.of("_bulk")
    assert [[next(iter(h.values()))["_id"] for h in _headers(b.body)] for b in bulks] == [
        [p.id for p in passages],
        [passages[1].id, passages[3].id],
        [passages[3].id],
    ]
    assert bulks[1].body[1]["id"] == passages[1].id  # the document travels again with its header
    assert sleeps == [0.25, 0.5]
    assert result.added == [passages[0].id, passages[2].id, passages[1].id, passages[3].id]


def test_a_whole_request_answered_429_is_sent_again() -> None:
    cluster = Cluster()
    sleeps: list[float] = []
    store = _open(cluster, sleeps=sleeps)
    cluster.queue(
        "_bulk", (429, {"error": {"type": "es_rejected_execution_exception", "reason": "busy"}})
    )
    result = store.passages.add(_passages(2))
    assert len(cluster.of("_bulk")) == 2
    assert sleeps == [0.5]
    assert len(result.added) == 2


def test_items_still_rejected_after_the_retries_are_reported() -> None:
    cluster = Cluster()
    sleeps: list[float] = []
    store = _open(cluster, sleeps=sleeps, max_retries=2)
    busy = _every_item(503, "unavailable_shards_exception", "primary not active")
    cluster.queue("_bulk", busy, busy, busy)
    with pytest.raises(BulkWriteError, match="1 document.*failed") as caught:
        store.passages.add(_passages(1))
    assert len(cluster.of("_bulk")) == 3
    assert sleeps == [0.5, 1.0]
    (failure,) = caught.value.failures
    assert failure.status == 503 and "still rejected after 2 retries" in failure.reason


def test_partial_failures_are_reported_per_document_and_not_retried() -> None:
    cluster = Cluster()
    store = _open(cluster)
    passages = _passages(3)
    cluster.queue(
        "_bulk",
        lambda s: (
            200,
            {
                "errors": True,
                "items": [
                    _ok(_headers(s.body)[0]),
                    _item(
                        _headers(s.body)[1],
                        400,
                        "document_parsing_exception",
                        "failed to parse field [vector]",
                    ),
                    _ok(_headers(s.body)[2]),
                ],
            },
        ),
    )
    with pytest.raises(BulkWriteError) as caught:
        store.passages.add(passages)
    (failure,) = caught.value.failures
    assert (failure.id, failure.status, failure.error_type) == (
        passages[1].id,
        400,
        "document_parsing_exception",
    )
    assert caught.value.result.added == [passages[0].id, passages[2].id]
    assert len(cluster.of("_bulk")) == 1
    # what was written is searchable, then its commit is published
    assert [s.path for s in cluster.sent[-3:]] == [
        "/gear-passages/_refresh", "/gear-changes/_doc/generation", "/gear-changes/_doc/lock"]


def test_a_zero_embedding_is_reported_and_never_sent() -> None:
    cluster = Cluster()
    passages = _passages(2)
    store = _open(cluster, embedder=FixedEmbedder(zero_for=passages[0].content))
    with pytest.raises(BulkWriteError) as caught:
        store.passages.add(passages)
    assert [f.id for f in caught.value.failures] == [passages[0].id]
    assert caught.value.failures[0].error_type == "zero_vector"
    (bulk,) = cluster.of("_bulk")
    assert [h["create"]["_id"] for h in _headers(bulk.body)] == [passages[1].id]


def test_add_triples_refuses_unknown_passages_before_writing() -> None:
    cluster = Cluster()
    store = _open(cluster)
    triple = Triple(triple_id("p-x", "a", "b", "c"), "a", "b", "c", "p-x")
    with pytest.raises(StoreError, match="not stored.*p-x"):
        store.triples.add([triple])
    assert cluster.of("_bulk") == []


def test_add_triples_stores_normalised_entities_and_extraction_order() -> None:
    cluster = Cluster()
    store = _open(cluster)
    cluster.stored.add("p-1")
    triples = [
        Triple(triple_id("p-1", s, "r", o), s, "r", o, "p-1")
        for s, o in [("  New   York ", "USA"), ("Big Apple", "NEW YORK")]
    ]
    store.triples.add(triples)
    (bulk,) = cluster.of("_bulk")
    docs = bulk.body[1::2]
    assert [(d["head"], d["tail"]) for d in docs] == [
        ("new york", "usa"),
        ("big apple", "new york"),
    ]
    assert [d["position"] for d in docs] == [0, 1]
    assert docs[0]["added_ns"] == docs[1]["added_ns"] > 0
    assert docs[0]["passage_id"] == "p-1"
    assert docs[0]["text"] == "  New   York  r USA"
    assert bulk.body[0] == {"create": {"_index": TRIPLE_INDEX, "_id": triples[0].id}}


def test_mark_extracted_looks_up_the_ids_then_updates_the_stored_ones() -> None:
    cluster = Cluster()
    store = _open(cluster)
    cluster.stored.add("p-1")
    store.passages.mark_extracted(["p-1", "p-unknown", "p-1"])
    (mget,) = cluster.of("_mget")
    assert (mget.path, mget.params, mget.body) == (
        "/gear-passages/_mget", {"_source": "false"}, {"ids": ["p-1", "p-unknown"]}
    )
    (bulk,) = cluster.of("_bulk")
    assert bulk.body == [
        {"update": {"_index": PASSAGE_INDEX, "_id": "p-1", "retry_on_conflict": 3}},
        {"doc": {"extracted": True}},
    ]
    assert cluster.sent[-1].path == "/gear-passages/_refresh"


def test_an_update_of_a_document_deleted_meanwhile_is_not_an_error() -> None:
    cluster = Cluster()
    store = _open(cluster)
    cluster.stored.add("p-1")
    cluster.queue(
        "_bulk",
        _every_item(404, "document_missing_exception", "[p-1]: document missing"),
    )
    store.passages.mark_extracted(["p-1"])
    assert len(cluster.of("_bulk")) == 1


def test_a_deleted_index_is_named_in_one_line_and_nothing_is_sent_to_it() -> None:
    cluster = Cluster()
    store = _open(cluster)
    missing = {
        "root_cause": [{"type": "index_not_found_exception", "reason": "no such index [gear-passages]",
                        "index": "gear-passages"}],
        "type": "index_not_found_exception", "reason": "no such index [gear-passages]",
        "index": "gear-passages",
    }
    cluster.queue("_mget", (200, {"docs": [{"_index": PASSAGE_INDEX, "_id": "p-1", "error": missing}]}))
    with pytest.raises(StoreError, match="index 'gear-passages' does not exist") as err:
        store.passages.mark_extracted(["p-1"])
    assert "\n" not in str(err.value)
    cluster.queue("_search", (404, {"error": missing, "status": 404}))
    with pytest.raises(StoreError, match="index 'gear-passages' does not exist"):
        store.passages.bm25_search("x", 3)
    assert cluster.of("_bulk") == []


def test_a_failed_search_says_the_root_cause_not_all_shards_failed() -> None:
    cluster = Cluster()
    store = _open(cluster)
    cause = {"type": "query_shard_exception", "reason": "failed to create query: boom"}
    error = {"root_cause": [cause], "type": "search_phase_execution_exception",
             "reason": "all shards failed", "phase": "query"}
    cluster.queue("_search", (400, {"error": error, "status": 400}))
    with pytest.raises(StoreError, match="HTTP 400, query_shard_exception: failed to create query: boom"):
        store.passages.bm25_search("x", 3)


def test_delete_passages_deletes_their_triples_by_id_first_then_the_passages() -> None:
    cluster = Cluster()
    store = _open(cluster)
    cluster.stored.update({"p-1", "p-2"})
    cluster.queue(
        "_search",
        (200, {"hits": {"hits": [{"_id": "t-1", "sort": ["t-1"]}, {"_id": "t-2", "sort": ["t-2"]}]}}),
    )
    assert store.passages.remove(["p-1", "p-unknown", "p-2"]) == ["p-1", "p-2"]
    start = next(i for i, s in enumerate(cluster.sent) if s.path.endswith("_mget"))
    steps = [(s.method, s.path, s.params) for s in cluster.sent[start:]]
    assert steps == [
        ("POST", "/gear-passages/_mget", {"_source_includes": "generation"}),
        ("POST", "/gear-triples/_search", {}),
        ("PUT", "/_bulk", {}),  # the deletion records first (the change feed)
        ("POST", "/gear-changes/_refresh", {}),
        ("PUT", "/_bulk", {}),
        ("POST", "/gear-triples/_refresh", {}),
        ("HEAD", "/gear-nodes", {}),  # no SiReRAG nodes: no provenance to update
        ("PUT", "/_bulk", {}),
        ("POST", "/gear-changes/_refresh", {}),
        ("PUT", "/_bulk", {}),
        ("POST", "/gear-passages/_refresh", {}),
        ("PUT", "/gear-changes/_doc/generation", {}),
        ("DELETE", "/gear-changes/_doc/lock", {"if_seq_no": "0", "if_primary_term": "1"}),
    ]
    search = cluster.of("_search")[0]
    assert search.body["query"] == {"terms": {"passage_id": ["p-1", "p-2"]}}
    assert search.body["sort"] == [{"id": "asc"}]
    triple_records, triples, passage_records, passages = cluster.of("_bulk")
    assert [line for line in triple_records.body if "index" in line] == [
        {"index": {"_index": "gear-changes", "_id": "triple:t-1"}},
        {"index": {"_index": "gear-changes", "_id": "triple:t-2"}},
    ]
    assert passage_records.body[1] == {"kind": "deleted", "collection": "passage", "doc_id": "p-1",
                                       "generation": 1, "born": 0}
    assert triples.body == [
        {"delete": {"_index": TRIPLE_INDEX, "_id": "t-1"}},
        {"delete": {"_index": TRIPLE_INDEX, "_id": "t-2"}},
    ]
    assert passages.body == [
        {"delete": {"_index": PASSAGE_INDEX, "_id": "p-1"}},
        {"delete": {"_index": PASSAGE_INDEX, "_id": "p-2"}},
    ]


def test_a_failed_triple_delete_keeps_the_passages() -> None:
    cluster = Cluster()
    store = _open(cluster)
    cluster.stored.add("p-1")
    cluster.queue("_search", (200, {"hits": {"hits": [{"_id": "t-1", "sort": ["t-1"]}]}}))
    cluster.queue("_bulk", lambda sent: (200, {"errors": False, "items": [_ok(h) for h in _headers(sent.body)]}))
    cluster.queue("_bulk", _every_item(500, "boom_exception", "boom"))
    with pytest.raises(BulkWriteError, match="passages were kept"):
        store.passages.remove(["p-1"])
    assert [h for b in cluster.of("_bulk") for h in _headers(b.body)] == [
        {"index": {"_index": "gear-changes", "_id": "triple:t-1"}},
        {"delete": {"_index": TRIPLE_INDEX, "_id": "t-1"}},
    ]


# ---- reads ---------------------------------------------------------------------


def test_bm25_search_is_a_match_query_on_the_analysed_field() -> None:
    cluster = Cluster()
    store = _open(cluster)
    cluster.queue("_search", (200, {"hits": {"hits": [{"_id": "p-1", "_score": 3.5}]}}))
    hits = store.passages.bm25_search("Eiffel tower", k=7)
    (search,) = cluster.of("_search")
    assert search.path == "/gear-passages/_search"
    assert search.body == {
        "query": {"bool": {"must": [{"match": {"content": {"query": "Eiffel tower"}}}], "filter": [SEEN]}},
        "size": 7,
        "_source": False,
        "track_total_hits": False,
    }
    assert [(h.id, h.score) for h in hits] == [("p-1", 3.5)]
    store.triples.bm25_search("x", k=1)
    assert cluster.of("_search")[1].body["query"] == {"bool": {"must": [{"match": {"text": {"query": "x"}}}],
                                                                "filter": [SEEN]}}


def test_vector_search_is_a_top_level_knn_and_scores_come_back_as_cosines() -> None:
    cluster = Cluster()
    store = _open(cluster)
    cluster.queue("_search", (200, {"hits": {"hits": [{"_id": "t-1", "_score": 0.9}]}}))
    vector = np.eye(DIM, dtype=np.float32)[2]
    hits = store.triples.vector_search(vector, k=60)
    (search,) = cluster.of("_search")
    assert search.path == "/gear-triples/_search"
    assert search.body == {
        "knn": {
            "field": "vector",
            "query_vector": [0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0],
            "k": 60,
            "num_candidates": 120,
        },
        "size": 60,
        "_source": False,
        "docvalue_fields": ["generation", "retired"],  # a hit not seen at the generation: asked again
    }
    assert hits[0].score == pytest.approx(0.8)  # (1 + cos) / 2 = 0.9


def test_vector_search_refuses_a_wrong_query_vector_before_sending() -> None:
    cluster = Cluster()
    store = _open(cluster)
    with pytest.raises(ValueError, match="dimension 8"):
        store.passages.vector_search(np.ones(3, dtype=np.float32), k=5)
    with pytest.raises(ValueError, match="zero"):
        store.passages.vector_search(np.zeros(DIM, dtype=np.float32), k=5)
    assert cluster.of("_search") == []


def _lookup(field: str, path: str) -> dict:
    return {"terms": {field: {"index": "gear-triples", "id": "t-1", "path": path}}}


def test_neighbours_with_a_query_vector_is_one_knn_search_filtered_by_looked_up_entities() -> None:
    cluster = Cluster()
    store = _open_remote(cluster)
    source = {"id": "t-2", "subject": "Paris", "predicate": "in", "object": "France",
              "passage_id": "p-1", "vector": np.eye(DIM)[1].tolist()}
    cluster.queue("_search", (200, {"hits": {"hits": [{"_id": "t-2", "_score": 0.7, "_source": source}]}}))
    vector = np.eye(DIM, dtype=np.float32)[0]
    assert store.triples.neighbours("t-1", query_vector=vector, limit=100) == ["t-2"]
    assert cluster.of("_mget") == []  # the entities are looked up by the search itself
    (msearch,) = cluster.of("_msearch")
    header, body = msearch.body
    assert msearch.path == "/gear-triples/_msearch" and header == {"index": "gear-triples"}
    search = Sent("POST", "/gear-triples/_search", {}, body)
    assert search.body["knn"] == {
        "field": "vector",
        "query_vector": vector.tolist(),
        "k": 100,
        "num_candidates": 200,
        "filter": q.both({
            "bool": {
                "should": [_lookup("head", "head"), _lookup("head", "tail"),
                           _lookup("tail", "head"), _lookup("tail", "tail")],
                "minimum_should_match": 1,
                "must_not": [{"ids": {"values": ["t-1"]}}],
            }
        }, SEEN),
    }
    assert search.body["size"] == 100
    assert search.body["_source"] is True
    # the candidates' documents came with the hits: reading them again sends nothing
    assert store.triples.vectors(["t-2"]).tolist() == [np.eye(DIM)[1].tolist()]
    assert [t.subject for t in store.triples.get(["t-2"])] == ["Paris"]
    assert cluster.of("_mget") == []


def test_a_write_forgets_the_documents_neighbours_brought() -> None:
    cluster = Cluster()
    store = _open_remote(cluster)
    source = {"id": "t-2", "subject": "a", "predicate": "r", "object": "b", "passage_id": "p-1",
              "vector": np.eye(DIM)[1].tolist()}
    cluster.queue("_search", (200, {"hits": {"hits": [{"_id": "t-2", "_score": 0.7, "_source": source}]}}))
    store.triples.neighbours("t-1", query_vector=np.eye(DIM, dtype=np.float32)[0], limit=5)
    store.passages.mark_extracted(["p-1"])  # any write through the store
    cluster.queue("_mget", (200, {"docs": [{"_id": "t-2", "found": False}]}))
    with pytest.raises(KeyError, match="t-2"):
        store.triples.vectors(["t-2"])


def test_neighbours_without_a_vector_are_the_first_by_id() -> None:
    cluster = Cluster()
    store = _open_remote(cluster)
    store.triples.neighbours("t-1", limit=5)
    ((_, body),) = [m.body for m in cluster.of("_msearch")]
    search = Sent("POST", "/gear-triples/_search", {}, body)
    assert search.body == {
        "query": {"bool": {"filter": [q.both(q.neighbours_filter("gear-triples", "t-1"), SEEN)]}},
        "sort": [{"id": "asc"}],
        "size": 5,
        "_source": True,
        "track_total_hits": False,
    }


def test_neighbours_with_no_room_send_no_search() -> None:
    cluster = Cluster()
    store = _open(cluster)
    assert store.triples.neighbours("t-1", limit=0) == []
    assert store.triples.neighbours_many([], limit=5) == []
    assert cluster.of("_search") == cluster.of("_msearch") == []


def _triple_hit(triple: str, passage: str = "p-1") -> dict[str, Any]:
    source = {"id": triple, "subject": "a", "predicate": "r", "object": "b", "passage_id": passage,
              "vector": np.eye(DIM)[1].tolist()}
    return {"_id": triple, "_score": 0.7, "_source": source}


def test_neighbours_of_a_beam_step_are_one_msearch_after_one_generation_check() -> None:
    cluster = Cluster()
    store = _open_remote(cluster)
    cluster.queue("_search", (200, {"hits": {"hits": [_triple_hit("t-2")]}}),
                  (200, {"hits": {"hits": [_triple_hit("t-3"), _triple_hit("t-4")]}}))
    vector = np.eye(DIM, dtype=np.float32)[0]
    assert store.triples.neighbours_many(["t-1", "t-9"], vector, 5) == [["t-2"], ["t-3", "t-4"]]
    (msearch,) = cluster.of("_msearch")
    assert [line for line in msearch.body[::2]] == [{"index": "gear-triples"}] * 2
    assert [body["knn"]["filter"]["bool"]["filter"][0]["bool"]["must_not"] for body in msearch.body[1::2]] == [
        [{"ids": {"values": ["t-1"]}}], [{"ids": {"values": ["t-9"]}}]]
    assert len(cluster.of("indexing")) == 1  # GET {indices}/_stats/indexing
    store.triples.vectors(["t-2", "t-3", "t-4"])
    assert cluster.of("_mget") == []


def test_a_write_by_another_process_makes_the_next_neighbours_forget_the_kept_documents() -> None:
    cluster = Cluster()
    store = _open_remote(cluster)
    vector = np.eye(DIM, dtype=np.float32)[0]
    cluster.queue("_search", (200, {"hits": {"hits": [_triple_hit("t-2")]}}))
    store.triples.neighbours("t-1", vector, 5)
    cluster.documents[("gear-changes", "generation")]["generation"] += 1  # another process deleted t-2
    record = {"_id": "triple:t-2", "sort": ["triple", "t-2"], "_source": {"collection": "triple", "doc_id": "t-2"}}
    for reply in ([], [], [record], []):  # the feed: passages and triples added, removed; then the search
        cluster.queue("_search", (200, {"hits": {"hits": reply}}))
    assert store.triples.neighbours("t-1", vector, 5) == []
    with pytest.raises(KeyError, match="t-2"):
        store.triples.vectors(["t-2"])  # asked again (_mget), not answered from what was kept
    assert len(cluster.of("_mget")) == 1


def test_a_failed_search_of_a_beam_step_is_one_line_naming_the_cause() -> None:
    cluster = Cluster()
    store = _open_remote(cluster)
    error = {"root_cause": [{"type": "index_not_found_exception", "reason": "no such index [gear-triples]",
                             "index": "gear-triples"}], "type": "index_not_found_exception",
             "reason": "no such index [gear-triples]", "index": "gear-triples"}
    cluster.queue("_search", (404, {"error": error}))
    with pytest.raises(StoreError, match="neighbours of 1 triple.*'gear-triples' does not exist"):
        store.triples.neighbours("t-1", np.eye(DIM, dtype=np.float32)[0], 5)


def test_get_passages_is_an_mget_without_vectors_in_the_order_asked() -> None:
    cluster = Cluster()
    store = _open(cluster)
    src = {"id": "p-2", "title": "T", "text": "x", "source": "s"}
    cluster.queue(
        "_mget",
        (
            200,
            {
                "docs": [
                    {"_id": "p-1", "found": False},
                    {"_id": "p-2", "found": True, "_source": src},
                ]
            },
        ),
    )
    assert store.passages.get(["p-1", "p-2"]) == [Passage("p-2", "T", "x", "s")]
    (mget,) = cluster.of("_mget")
    assert mget.path == "/gear-passages/_mget"
    assert mget.params == {"_source_excludes": "vector"}


def test_triple_vectors_reads_only_the_vector_field() -> None:
    cluster = Cluster()
    store = _open(cluster)
    cluster.queue(
        "_mget",
        (200, {"docs": [{"_id": "t-1", "found": True, "_source": {"vector": [1.0] + [0.0] * 7}}]}),
    )
    vectors = store.triples.vectors(["t-1", "t-1"])
    assert vectors.shape == (2, DIM) and vectors.dtype == np.float32
    assert cluster.of("_mget")[0].params == {"_source_includes": "vector"}
    assert cluster.of("_mget")[0].body == {"ids": ["t-1"]}
    with pytest.raises(KeyError, match="t-2"):
        store.triples.vectors(["t-2"])


def test_triples_of_passage_is_a_term_query_sorted_by_extraction_order() -> None:
    cluster = Cluster()
    store = _open(cluster)
    store.triples.of_passage("p-1")
    (search,) = cluster.of("_search")
    assert search.path == "/gear-triples/_search"
    assert search.body["query"] == {"bool": {"filter": [{"term": {"passage_id": "p-1"}}, SEEN]}}
    assert search.body["sort"] == [{"added_ns": "asc"}, {"position": "asc"}, {"id": "asc"}]


def test_iteration_pages_a_point_in_time_with_search_after() -> None:
    cluster = Cluster()
    store = _open(cluster, page_size=2)

    def hit(i: int) -> dict[str, Any]:
        src = {"id": f"p-{i}", "title": "", "text": f"t{i}", "source": ""}
        return {"_id": f"p-{i}", "_source": src, "sort": [f"p-{i}", i]}

    cluster.queue(
        "_search",
        (200, {"pit_id": "pit-2", "hits": {"hits": [hit(1), hit(2)]}}),
        (200, {"pit_id": "pit-3", "hits": {"hits": [hit(3)]}}),
    )
    assert [p.id for p in store.passages.iterate()] == ["p-1", "p-2", "p-3"]
    pit_open, first, second, pit_close = cluster.sent[-4:]
    assert (pit_open.method, pit_open.path, pit_open.params) == (
        "POST",
        "/gear-passages/_pit",
        {"keep_alive": "2m"},
    )
    assert first.path == second.path == "/_search"  # a pit search names no index
    assert first.body == {
        "query": {"bool": {"filter": [{"match_all": {}}, SEEN]}},
        "sort": [{"id": "asc"}],
        "size": 2,
        "_source": {"excludes": ["vector"]},
        "track_total_hits": False,
        "pit": {"id": "pit-xyz", "keep_alive": "2m"},
    }
    assert second.body["search_after"] == ["p-2", 2]
    assert second.body["pit"]["id"] == "pit-2"
    assert (pit_close.method, pit_close.path, pit_close.body) == (
        "DELETE",
        "/_pit",
        {"id": "pit-3"},
    )


def test_unextracted_passages_filter_on_the_boolean() -> None:
    cluster = Cluster()
    store = _open(cluster)
    store.passages.unextracted()
    (search,) = cluster.of("_search")
    assert search.body["query"] == {"bool": {"filter": [{"term": {"extracted": False}}, SEEN]}}


def test_delete_source_finds_passages_by_a_term_on_source() -> None:
    cluster = Cluster()
    store = _open(cluster)
    store.passages.remove_source("docs/a.md")
    (search,) = cluster.of("_search")
    assert search.body["query"] == {"bool": {"filter": [{"term": {"source": "docs/a.md"}}, SEEN]}}
    assert cluster.of("_bulk") == []  # nothing found, nothing deleted


def test_count_asks_the_count_api() -> None:
    cluster = Cluster()
    store = _open(cluster)
    cluster.queue("_count", (200, {"count": 42}))
    assert store.triples.count() == 42
    assert cluster.of("_count")[0].path == "/gear-triples/_count"


# ---- pure request builders -----------------------------------------------------


def test_num_candidates_is_max_100_2k_capped() -> None:
    assert [q.num_candidates(k) for k in (1, 50, 51, 400, 5000, 10_000)] == [
        100,
        100,
        102,
        800,
        10_000,
        10_000,
    ]


def test_k_outside_what_elasticsearch_accepts_is_refused() -> None:
    with pytest.raises(ValueError, match="between 1 and 10000"):
        q.knn_request(np.ones(DIM, dtype=np.float32), 10_001)
    with pytest.raises(ValueError):
        q.bm25_request("content", "x", 0)


def test_normalise_entity_is_the_shared_one() -> None:
    from gear_agent.text.tokenizer import normalise_entity

    assert q.normalise_entity is normalise_entity
    assert q.normalise_entity("  New \t York ") == "new york"


# ---- filters --------------------------------------------------------------------------


def test_filters_become_bool_filters_over_nested_typed_metadata() -> None:
    from gear_agent.filters import parse_where
    from gear_agent.store.elasticsearch.queries import where_filter

    where = parse_where(["source=reports/2024", "year>=2020", "lang!=de", "draft=true"])
    assert where_filter(where) == {"bool": {"filter": [
        {"bool": {"should": [{"term": {"source": "reports/2024"}}, {"prefix": {"source": "reports/2024/"}}],
                  "minimum_should_match": 1}},
        {"nested": {"path": "meta", "query": {"bool": {"filter": [
            {"term": {"meta.key": "year"}}, {"range": {"meta.num": {"gte": 2020}}}]}}}},
        {"bool": {"must_not": [{"nested": {"path": "meta", "query": {"bool": {"filter": [
            {"term": {"meta.key": "lang"}}, {"term": {"meta.str": "de"}}]}}}}]}},
        {"nested": {"path": "meta", "query": {"bool": {"filter": [
            {"term": {"meta.key": "draft"}}, {"term": {"meta.bool": True}}]}}}},
    ]}}


def test_filtered_bm25_and_knn_requests_filter_before_ranking() -> None:
    from gear_agent.store.elasticsearch.queries import bm25_request, knn_request

    flt = {"term": {"id": "p-1"}}
    assert bm25_request("content", "q", 5, filter=flt)["query"] == {
        "bool": {"must": [{"match": {"content": {"query": "q"}}}], "filter": [flt]}}
    assert knn_request(np.ones(3, dtype=np.float32), 5, filter=flt)["knn"]["filter"] == flt


def test_passage_documents_carry_metadata_and_its_nested_entries() -> None:
    from gear_agent.store.elasticsearch.mappings import passage_document, passage_from_source

    p = Passage("p-1", "T", "text", "a.txt", {"year": 2020, "tags": ["x", "y"], "ok": None})
    doc = passage_document(p, np.ones(3, dtype=np.float32))
    assert doc["metadata"] == {"year": 2020, "tags": ["x", "y"], "ok": None}
    assert doc["meta"] == [{"key": "year", "num": 2020}, {"key": "tags", "str": "x"},
                           {"key": "tags", "str": "y"}, {"key": "ok", "null": True}]
    assert passage_from_source(doc).metadata == p.metadata
