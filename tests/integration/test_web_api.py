"""The web page's JSON and event-stream routes (``/ui/api/...``) and ``/gear/stream``'s
answer tokens, without a browser (tests/integration/test_web_page.py drives the page)."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("langserve", reason="the serve extra is not installed (pip install gear-agent[serve])")

from fastapi.testclient import TestClient  # noqa: E402
from support.agent_faults import ANSWER, QUESTION, capable_reply, node_of  # noqa: E402
from support.fakes import StreamingChatModel  # noqa: E402
from support.tiny_corpus import make_runtime, make_settings, pid  # noqa: E402

from gear_agent.agent.graph import build_agent  # noqa: E402
from gear_agent.serve._graph_svg import chain_svg  # noqa: E402
from gear_agent.serve._web_ask import quote_spans  # noqa: E402
from gear_agent.serve.app import ANSWER_TOKEN, create_app, gear_runnable  # noqa: E402

QUOTE = "Folsom is a city in Sacramento County"


def reply(prompt: str) -> str:
    node = node_of(prompt)
    if node == "answer":
        return json.dumps({"answer": ANSWER, "citations": [{"passage": 1, "quote": QUOTE.lower()}]})
    return capable_reply(node, prompt)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any, Any]:
    folder = tmp_path_factory.mktemp("web") / "index"
    settings = make_settings(llm_max_retries=0, index_dir=folder)  # the settings name the index served
    runtime = make_runtime(folder, settings)
    agent = build_agent(settings, index=runtime, chat_model=StreamingChatModel(respond=reply))
    return agent, settings, runtime


@pytest.fixture(scope="module")
def client(served) -> TestClient:
    agent, settings, runtime = served
    return TestClient(create_app(agent, settings, index=runtime), base_url="http://127.0.0.1")


def events(text: str) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        out.append((lines["event"], json.loads(lines["data"])))
    return out


def test_the_page_and_its_files_are_served_with_a_same_origin_policy(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and "<title>GEAR</title>" in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert "http" not in page.text.replace("http://www.w3.org", "")  # no other host named
    assert client.get("/ui/static/app.js").headers["content-type"].startswith("text/javascript")
    assert client.get("/ui/static/../app.py").status_code == 404
    config = client.get("/ui/api/config").json()
    assert config["retrievers"][0] == "gear" and "hybrid+naive_ge" in config["retrievers"]
    assert "syncge" not in config["retrievers"]  # the page ranks with LLM-free retrievers or the agent


def test_ask_streams_steps_memory_verdicts_tokens_and_a_cited_result(client: TestClient) -> None:
    response = client.post("/ui/api/ask/stream", json={"question": QUESTION, "k": 3})
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    stream = events(response.text)
    names = [name for name, _ in stream]
    steps = [data for name, data in stream if name == "step"]
    assert [s["node"] for s in steps][:3] == ["start", "retrieve", "read"]
    memory = [s["memory"] for s in steps if "memory" in s]
    assert len(memory) == 2 and len(memory[1]) > len(memory[0])  # the gist memory grows
    verdicts = [s["verdict"]["answerable"] for s in steps if "verdict" in s]
    assert verdicts == [False, True]
    assert "".join(d["text"] for n, d in stream if n == "token") == ANSWER
    assert names.index("token") < names.index("result")
    result = stream[-1][1]
    assert result["answer"] == ANSWER and result["citations"][0]["number"] == 1
    cited = [p for p in result["passages"] if p["cited"]]
    assert len(cited) == 1 and len(result["passages"]) == 3
    start, end = cited[0]["quote_spans"][0]
    assert cited[0]["text"][start:end] == QUOTE  # the quote located in its passage
    assert all(p["svg"].startswith("<svg") for p in result["passages"] if p["chain"])


def test_ask_follow_up_with_the_thread_and_a_ranking_with_a_filter(client: TestClient) -> None:
    thread = [{"role": "user", "content": QUESTION}, {"role": "assistant", "content": ANSWER}]
    follow = client.post("/ui/api/ask/stream", json={"question": QUESTION, "thread": thread})
    assert events(follow.text)[-1][0] == "result"
    ranked = client.post("/ui/api/ask/stream", json={
        "question": QUESTION, "retriever": "hybrid+naive_ge", "k": 2, "where": ["source=test"]})
    result = events(ranked.text)[-1][1]
    assert result["retriever"] == "hybrid+naive_ge" and len(result["passages"]) == 2
    bad = client.post("/ui/api/ask/stream", json={"question": QUESTION, "where": ["year>>2"]})
    assert bad.status_code == 400 and "bad filter 'year>>2'" in bad.json()["message"]
    none = client.post("/ui/api/ask/stream", json={"question": QUESTION, "where": ["source=nowhere"]})
    assert none.status_code == 400 and "no passage passes" in none.json()["message"]
    llm = client.post("/ui/api/ask/stream", json={"question": QUESTION, "retriever": "syncge"})
    assert llm.status_code == 400
    empty = client.post("/ui/api/ask/stream", json={"question": "  "})
    assert empty.status_code == 400 and "empty" in empty.json()["message"]


def test_explore_an_entity_its_neighbourhood_and_a_passage(client: TestClient) -> None:
    found = client.get("/ui/api/entities", params={"q": "folsom"}).json()["entities"]
    assert found[0]["name"] == "Folsom" and {e["name"] for e in found} >= {"Folsom State Prison"}
    hood = client.get("/ui/api/entity", params={"name": "folsom", "hops": 1}).json()
    assert hood["entity"] == "Folsom" and len(hood["triples"]) == 4
    assert hood["svg"].count('class="node focus"') == 1 and "<script" not in hood["svg"]
    assert {t["passage_title"] for t in hood["triples"]} >= {"Folsom, California"}
    wider = client.get("/ui/api/entity", params={"name": "folsom", "hops": 2}).json()
    assert len(wider["triples"]) > len(hood["triples"])
    passage = client.get(f"/ui/api/passage/{pid('Folsom, California')}").json()
    assert passage["title"] == "Folsom, California" and len(passage["triples"]) == 2
    missing = client.get("/ui/api/entity", params={"name": "Atlantis"})
    assert missing.status_code == 400 and "no triple names the entity" in missing.json()["message"]
    assert client.get("/ui/api/entities", params={"q": " "}).status_code == 400
    assert client.get("/ui/api/passage/p-nothing").status_code == 400


def test_documents_add_with_progress_preview_then_delete(client: TestClient) -> None:
    before = client.get("/ui/api/health").json()
    assert before["ok"] is True and before["size_bytes"] > 0 and before["passages"] == 8
    assert client.get("/ui/api/documents").json()["total"] == 8  # the list's ids, kept per commit
    added = client.post("/ui/api/documents/stream", json={
        "title": "Harbour Lighthouse", "text": "The Harbour Lighthouse was built in 1931.",
        "source": "notes/lighthouse"})
    stream = events(added.text)
    assert [n for n, _ in stream][-1] == "done" and any(n == "progress" for n, _ in stream)
    report = stream[-1][1]
    assert report["passages_added"] == 1 and len(report["ids"]) == 1
    upload = client.post("/ui/api/documents/stream", json={
        "name": "two.jsonl", "text": '{"title": "A", "text": "Alpha.", "year": 2020}\n'
                                     '{"title": "B", "text": "Beta."}\n'})
    assert events(upload.text)[-1][1]["passages_added"] == 2
    listed = client.get("/ui/api/documents", params={"source": "two.jsonl"}).json()
    assert listed["total"] == 2 and listed["passages"][0]["metadata"] == {"year": 2020}
    preview = client.post("/ui/api/documents/preview-delete",
                          json={"source": "notes/lighthouse", "ids": ["p-unknown"]}).json()
    assert [p["title"] for p in preview["passages"]] == ["Harbour Lighthouse"]
    assert preview["unknown_ids"] == ["p-unknown"]
    # the same exact match as Gear.delete: a base name is not a source, and the page says so
    partial = client.post("/ui/api/documents/preview-delete", json={"source": "lighthouse"}).json()
    assert partial["passages"] == [] and "notes/lighthouse" in partial["notes"][0]
    assert client.get("/ui/api/health").json()["passages"] == 11  # the preview removed nothing
    assert client.get("/ui/api/documents").json()["total"] == 11  # a new commit: read again
    done = client.post("/ui/api/documents/delete", json={"source": "notes/lighthouse"}).json()
    assert done["deleted"] == report["ids"] and done["passages"] == 10
    assert report["ids"][0] not in {p["id"] for p in client.get("/ui/api/documents").json()["passages"]}
    ids = [p["id"] for p in listed["passages"]]
    assert client.post("/ui/api/documents/delete", json={"ids": ids}).json()["passages"] == 8


def test_documents_refuse_bad_input_in_one_line(client: TestClient) -> None:
    empty = client.post("/ui/api/documents/stream", json={"title": "x", "text": "  "})
    assert empty.status_code == 400 and "empty" in empty.json()["message"]
    wrong = client.post("/ui/api/documents/stream", json={"name": "a.pptx", "text": "slides"})
    assert wrong.status_code == 400 and "not a file type the page reads" in wrong.json()["message"]
    assert "gear-upload-" not in wrong.json()["message"]  # no path of the server's machine
    shape = client.post("/ui/api/documents/stream", json={"name": "c.json", "text": '{"a": 1}'})
    assert shape.status_code == 400 and "expected a JSON list" in shape.json()["message"]
    nothing = client.post("/ui/api/documents/preview-delete", json={})
    assert nothing.status_code == 400
    no_llm = client.post("/ui/api/documents/stream", json={"title": "t", "text": "x y", "extract": True})
    assert no_llm.status_code == 400 and "No LLM is configured" in no_llm.json()["message"]


def test_gear_stream_carries_the_answer_tokens(served) -> None:
    agent, settings, _ = served
    chunks = list(gear_runnable(agent, settings).stream({"question": QUESTION}))
    tokens = [c[ANSWER_TOKEN] for c in chunks if ANSWER_TOKEN in c]
    assert "".join(tokens) == ANSWER and len(tokens) == 2
    nodes = [next(iter(c)) for c in chunks if ANSWER_TOKEN not in c]
    assert nodes[0] == "start" and nodes[-1] == "answer"


def test_quotes_are_found_across_case_spacing_and_punctuation() -> None:
    text = "Folsom is a city in Sacramento County,   California."
    start, end = quote_spans(text, "city in sacramento county california")
    assert text[start:end] == "city in Sacramento County,   California"
    assert quote_spans(text, "Placer County") is None and quote_spans(text, None) is None


def test_a_chain_is_drawn_left_to_right_ending_at_its_passage() -> None:
    svg = chain_svg([["Rainbow Bridge", "located in", "Folsom"], ["Folsom", "located in",
                     "Sacramento County"]], "p-1", "Folsom, <California>")
    assert svg.count('class="edge chain"') == 2 and svg.count('class="edge reached"') == 1
    assert "&lt;California&gt;" in svg and "<California>" not in svg  # labels escaped
    xs = [float(x.split('"')[1]) for x in svg.split("<circle cx=")[1:]]
    assert xs == sorted(xs)  # subject, then object, then the next object: left to right
    assert chain_svg([], "p", "t") == ""


def test_the_page_is_mounted_only_with_a_runtime(served) -> None:
    agent, settings, _ = served
    bare = TestClient(create_app(agent, settings), base_url="http://127.0.0.1")
    assert bare.get("/").status_code == 404 and bare.get("/health").status_code == 200


def test_page_routes_keep_the_servers_limits(served) -> None:
    agent, settings, runtime = served
    guarded = TestClient(create_app(agent, make_settings(api_key="k", index_dir=settings.index_dir), index=runtime), base_url="http://127.0.0.1")
    assert guarded.get("/ui/api/health").status_code == 401
    assert guarded.get("/ui/api/health", headers={"Authorization": "Bearer k"}).status_code == 200
    form = TestClient(create_app(agent, settings, index=runtime), base_url="http://127.0.0.1").post(
        "/ui/api/documents/stream", data={"text": "x"})
    assert form.status_code == 415
