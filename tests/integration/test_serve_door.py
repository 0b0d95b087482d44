"""The whole app's door (issue 36): bad upload names are 400s, every page carries nosniff
and a frame policy (the LangServe playgrounds too), lists come a page at a time, the app
serves without a chat model or without write routes, and no request of random names,
bodies and headers to any route is answered 500."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("langserve", reason="the serve extra is not installed (pip install gear-agent[serve])")

from fastapi.testclient import TestClient  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from support.agent_faults import capable_reply, node_of  # noqa: E402
from support.fakes import StreamingChatModel  # noqa: E402
from support.tiny_corpus import make_runtime, make_settings  # noqa: E402

from gear_agent.agent.graph import build_agent  # noqa: E402
from gear_agent.serve.app import NO_CHAT_MODEL, create_app  # noqa: E402
from gear_agent.serve.web import AGENT  # noqa: E402

LOCAL = "http://127.0.0.1"


def reply(prompt: str) -> str:
    node = node_of(prompt)
    if node == "answer":
        return json.dumps({"answer": "Sacramento County", "citations": []})
    return capable_reply(node, prompt)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any, Any]:
    folder = tmp_path_factory.mktemp("door") / "index"
    s = make_settings(llm_max_retries=0, index_dir=folder, max_iterations=1)
    runtime = make_runtime(folder, s)
    agent = build_agent(s, index=runtime, chat_model=StreamingChatModel(respond=reply))
    return agent, s, runtime


@pytest.fixture(scope="module")
def client(served) -> TestClient:
    agent, s, runtime = served
    return TestClient(create_app(agent, s, index=runtime), base_url=LOCAL, raise_server_exceptions=False)


@pytest.mark.parametrize("name", ["..", ".", "...", "/", "a" * 300, "é" * 150, "x\x00.txt"])
def test_a_bad_upload_name_is_a_400_and_writes_nothing(client: TestClient, served, name: str) -> None:
    before = served[2].store.passages.count()
    response = client.post("/ui/api/documents/stream", json={"name": name, "text": "Some text."})
    assert response.status_code == 400, response.text
    assert "\n" not in response.json()["message"]
    assert served[2].store.passages.count() == before


def test_a_name_with_folders_is_read_under_its_last_part(client: TestClient) -> None:
    response = client.post("/ui/api/documents/stream", json={"name": "../../etc/notes.txt",
                                                            "text": "Sutter lived near Folsom."})
    assert response.status_code == 200 and "event: done" in response.text


def test_every_page_has_nosniff_and_a_frame_policy(client: TestClient) -> None:
    for path in ("/", "/gear/playground/", "/gear/ask/playground/", "/docs"):
        page = client.get(path)
        assert page.status_code == 200, path
        assert page.headers["x-content-type-options"] == "nosniff", path
        assert "frame-ancestors 'none'" in page.headers["content-security-policy"], path
        assert page.headers["x-frame-options"] == "DENY", path
    for path in ("/health", "/ui/api/config", "/ui/static/app.js", "/gear/input_schema"):
        assert client.get(path).headers["x-content-type-options"] == "nosniff", path


def test_lists_come_a_page_at_a_time(client: TestClient, served) -> None:
    total = served[2].store.passages.count()
    first = client.get("/ui/api/documents", params={"limit": 2}).json()
    second = client.get("/ui/api/documents", params={"limit": 2, "offset": 2}).json()
    assert first["total"] == second["total"] == total and len(first["passages"]) == 2
    assert {p["id"] for p in first["passages"]}.isdisjoint(p["id"] for p in second["passages"])
    assert client.get("/ui/api/documents", params={"limit": 10_000}).status_code == 422
    page = client.get("/ui/api/entities", params={"q": "a", "limit": 1}).json()
    assert len(page["entities"]) == 1 and page["total"] > 1
    assert client.get("/ui/api/entities", params={"q": "a", "limit": 500}).status_code == 422


def test_without_a_chat_model_search_explore_and_documents_work(served) -> None:
    _, s, runtime = served
    http = TestClient(create_app(None, s, index=runtime), base_url=LOCAL)
    config = http.get("/ui/api/config").json()
    assert config["no_agent"] == NO_CHAT_MODEL and AGENT not in config["retrievers"]
    assert http.get("/health").json()["llm_model"] is None
    asked = http.post("/ui/api/ask/stream", json={"question": "Where is Folsom?"})
    assert asked.status_code == 400 and asked.json()["message"] == NO_CHAT_MODEL
    ranked = http.post("/ui/api/ask/stream", json={"question": "Where is Folsom?", "retriever": "bm25"})
    assert ranked.status_code == 200 and "event: result" in ranked.text
    assert http.get("/ui/api/entities", params={"q": "folsom"}).json()["entities"]
    assert http.get("/ui/api/documents").json()["total"] > 0
    invoke = http.post("/gear/invoke", json={"input": {"question": "q"}})
    assert invoke.status_code == 503 and invoke.json()["message"] == NO_CHAT_MODEL


def test_read_only_serves_the_page_and_the_agent_but_no_writes(served) -> None:
    agent, s, runtime = served
    http = TestClient(create_app(agent, s, index=runtime, read_only=True), base_url=LOCAL)
    before = runtime.store.passages.count()
    assert http.get("/ui/api/config").json()["read_only"] is True
    deleted = http.post("/ui/api/documents/delete", json={"source": "tiny"})
    added = http.post("/ui/api/documents/stream", json={"name": "a.txt", "text": "t"})
    assert deleted.status_code == added.status_code == 403
    assert runtime.store.passages.count() == before
    assert http.post("/gear/invoke", json={"input": {"question": "Where is Folsom?"}}).status_code == 200


def test_the_wildcard_cors_setting_is_refused_beside_writes(served) -> None:
    agent, s, runtime = served
    wildcard = s.model_copy(update={"serve_cors_origins": "*"})
    with pytest.raises(Exception, match="GEAR_SERVE_CORS_ANY_ORIGIN_WRITES"):
        create_app(agent, wildcard, index=runtime)
    create_app(agent, wildcard, index=runtime, read_only=True)  # nothing to write: allowed


# ---- no 500, whatever arrives ---------------------------------------------------------------
ROUTES = [
    ("GET", "/"), ("GET", "/health"), ("GET", "/ui/api/config"), ("GET", "/ui/static/app.js"),
    ("GET", "/ui/api/entities"), ("GET", "/ui/api/entity"), ("GET", "/ui/api/passage/x"),
    ("GET", "/ui/api/documents"), ("GET", "/ui/api/health"), ("GET", "/gear/input_schema"),
    ("POST", "/ui/api/ask/stream"), ("POST", "/ui/api/documents/stream"),
    ("POST", "/ui/api/documents/preview-delete"), ("POST", "/ui/api/documents/delete"),
    ("POST", "/gear/invoke"), ("POST", "/gear/batch"), ("POST", "/gear/stream"),
    ("POST", "/gear/ask/invoke"),
]
FIELDS = ["name", "text", "title", "source", "extract", "ids", "question", "retriever", "k",
          "where", "thread", "input", "inputs", "offset", "q", "hops", "limit"]
text = st.text(max_size=40) | st.sampled_from(["..", ".", "/", "a" * 300, "x\x00", "bm25", "gear"])
scalar = st.none() | st.booleans() | st.integers(-5, 10**6) | st.floats(allow_nan=False) | text
value = st.recursive(scalar, lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.sampled_from(FIELDS), inner, max_size=3), max_leaves=8)
header_names = st.sampled_from(["content-type", "origin", "sec-fetch-site", "authorization",
                                "content-length", "accept", "x-forwarded-for"])
header_values = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=30) \
    | st.sampled_from(["application/json", "text/plain", "http://127.0.0.1", "null", "cross-site"])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(route=st.sampled_from(ROUTES), body=st.dictionaries(st.sampled_from(FIELDS), value, max_size=5) | value,
       params=st.dictionaries(st.sampled_from(FIELDS), text, max_size=3),
       headers=st.dictionaries(header_names, header_values, max_size=3), raw=st.booleans())
def test_no_request_is_answered_500(client: TestClient, route, body, params, headers, raw) -> None:
    method, path = route
    headers = {k: v for k, v in headers.items() if k != "content-length"}
    if method == "GET":
        response = client.get(path, params=params, headers=headers)
    else:
        content = json.dumps(body).encode() if not raw else json.dumps(body)[:-1].encode()
        response = client.post(path, content=content,
                               headers={"content-type": "application/json", **headers})
    assert response.status_code < 500 or response.status_code in (502, 503, 504), \
        (route, body, params, headers, response.status_code, response.text[:300])
