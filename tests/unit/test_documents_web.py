"""Documents through the web page: a PDF uploaded as base64 is read by pages, and the
page's citations say where each cited passage is (tests/unit/test_documents.py reads the
documents themselves)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langserve", reason="the serve extra is not installed (pip install gear-agent[serve])")
pytest.importorskip("pdfminer", reason="the documents extra is not installed")

from fastapi.testclient import TestClient  # noqa: E402
from support.agent_faults import capable_reply, node_of  # noqa: E402
from support.fakes import StreamingChatModel  # noqa: E402
from support.tiny_corpus import make_runtime, make_settings  # noqa: E402

from gear_agent.agent.graph import build_agent  # noqa: E402
from gear_agent.serve._web_ask import result_of  # noqa: E402
from gear_agent.serve.app import create_app  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "documents"


def _events(text: str) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        out.append((lines["event"], json.loads(lines["data"])))
    return out


@pytest.fixture
def client(tmp_path: Path) -> TestClient:
    settings = make_settings(llm_max_retries=0, index_dir=tmp_path / "index")
    runtime = make_runtime(tmp_path / "index", settings)
    reply = lambda prompt: capable_reply(node_of(prompt), prompt)  # noqa: E731
    agent = build_agent(settings, index=runtime, chat_model=StreamingChatModel(respond=reply))
    return TestClient(create_app(agent, settings, index=runtime), base_url="http://127.0.0.1")


def test_a_pdf_uploaded_as_base64_is_stored_page_by_page(client: TestClient) -> None:
    data = base64.b64encode((FIXTURES / "two-columns.pdf").read_bytes()).decode()
    added = client.post("/ui/api/documents/stream", json={
        "name": "two-columns.pdf", "text": data, "encoding": "base64"})
    assert added.status_code == 200, added.text
    assert _events(added.text)[-1][1]["passages_added"] >= 2
    listed = client.get("/ui/api/documents", params={"source": "two-columns.pdf"}).json()
    assert [p["metadata"]["page"] for p in listed["passages"]] == sorted(
        p["metadata"]["page"] for p in listed["passages"])  # listed in reading order
    assert {p["title"] for p in listed["passages"]} == {"The Kestrel Observatory"}


def test_uploads_that_cannot_be_read_are_refused_in_one_line(client: TestClient) -> None:
    locked = base64.b64encode((FIXTURES / "locked.pdf").read_bytes()).decode()
    refused = client.post("/ui/api/documents/stream", json={
        "name": "locked.pdf", "text": locked, "encoding": "base64"})
    assert refused.status_code == 400
    assert refused.json()["message"].startswith("locked.pdf is password-protected")
    garbled = client.post("/ui/api/documents/stream", json={
        "name": "x.pdf", "text": "not base64!", "encoding": "base64"})
    assert garbled.status_code == 400 and "not valid base64" in garbled.json()["message"]


def test_the_pages_citations_name_the_source_and_page() -> None:
    state = {"answer": "1923", "citations": [{"passage_id": "p-1", "title": "K", "quote": None}],
             "passages": [{"id": "p-1", "title": "K", "text": "Founded in 1923.", "score": 0.5,
                           "source": "reports/two-columns.pdf", "metadata": {"page": 2}, "chain": []}]}
    result = result_of(state)
    assert result["citations"][0]["location"] == "two-columns.pdf, p. 2"
    assert result["citations"][0]["source"] == "reports/two-columns.pdf"  # the link's filter
    assert result["passages"][0]["location"] == "two-columns.pdf, p. 2"
