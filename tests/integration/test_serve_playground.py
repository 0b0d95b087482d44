"""``/gear/ask``: the playground's reading view, answer first, as text (issue 17 item 5)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langserve", reason="the serve extra is not installed (pip install gear-agent[serve])")

from fastapi.testclient import TestClient  # noqa: E402
from support.agent_faults import ANSWER, capable_reply, node_of  # noqa: E402
from support.fakes import ScriptedChatModel  # noqa: E402
from support.tiny_corpus import QUESTION, make_runtime, make_settings  # noqa: E402

from gear_agent.agent.graph import build_agent  # noqa: E402
from gear_agent.serve.app import create_app  # noqa: E402
from gear_agent.serve.playground import answer_runnable  # noqa: E402


def citing_reply(prompt: str) -> str:
    """A capable model whose QA reply cites passage [1] and one passage never shown."""
    node = node_of(prompt)
    if node == "answer":
        return f'{{"answer": "{ANSWER}", "citations": [{{"passage": 1}}, {{"passage": 7}}]}}'
    return capable_reply(node, prompt)


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> tuple[Any, Any]:
    folder = tmp_path_factory.mktemp("ask")
    settings = make_settings(llm_max_retries=0)
    runtime = make_runtime(folder / "index", settings)
    return build_agent(settings, index=runtime, chat_model=ScriptedChatModel(respond=citing_reply)), settings


@pytest.fixture(scope="module")
def client(served) -> TestClient:
    return TestClient(create_app(*served), base_url="http://127.0.0.1")


def test_ask_streams_step_names_then_the_cited_answer_and_the_passages(served, client) -> None:
    # The runnable behind /gear/ask/stream, streamed directly: sse-starlette 1.x binds its
    # exit event to the first event loop that streams, so TestClient's loops cannot stream
    # once another test's server has (the loopback server tests cover the SSE wire).
    text = "".join(answer_runnable(*served).stream({"question": QUESTION, "top_k": 3}))
    steps, result = text.split("\n\n", 1)
    assert steps.startswith("steps: start → retrieve → read") and steps.endswith("finalize → answer")
    assert result.startswith(f"{ANSWER} [1]\n\n[1] ")
    assert "Ranked passages:\n1. " in result and "\n3. " in result and "\n4. " not in result
    assert "iteration(s), stopped: answerable" in result
    invoked = client.post("/gear/ask/invoke", json={"input": {"question": QUESTION, "top_k": 3}})
    assert invoked.json()["output"] == result  # invoke: the same text, without the steps


def test_the_node_update_routes_carry_citations_and_the_chat(client: TestClient) -> None:
    output = client.post("/gear/invoke", json={"input": {"question": QUESTION}}).json()["output"]
    assert output["answer"] == ANSWER
    assert len(output["citations"]) == 1
    assert set(output["citations"][0]) == {"passage_id", "title", "quote", "location"}
    assert output["dropped"][-1]["error"].startswith("passage 7 was not shown")
    assert [m["type"] for m in output["messages"]] == ["human", "ai"]


def test_the_reading_playground_is_served(client: TestClient) -> None:
    assert client.get("/gear/ask/playground/").status_code == 200
    assert client.post("/gear/ask/invoke", json={"input": {"question": " "}}).status_code == 422
