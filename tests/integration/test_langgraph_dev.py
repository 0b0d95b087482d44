"""`langgraph dev` on loopback serving graphs/gear_graph.py, driven through langgraph-sdk.

The chat model is a real ``ChatOpenAI`` talking to a scripted OpenAI-compatible endpoint
on loopback (:mod:`support.fault_server` with :mod:`support.demo_chat` replies), the
embedder the model-free ``hashing-384``: nothing leaves the machine. Needs
``langgraph-cli[inmem]`` (``pip install -e ".[studio]"``); skipped with the reason otherwise.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.demo_chat import ANSWER, QUESTION, QUOTE, UNSHOWN, demo_endpoint_reply
from support.fault_server import FaultServer, running_fault_server

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "demo"
STARTUP_S = 120
OTHER_MODEL = "other-model"

if importlib.util.find_spec("langgraph_api") is None or importlib.util.find_spec("langgraph_cli") is None:
    pytest.skip('langgraph-cli[inmem] is not installed: pip install -e ".[studio]"',
                allow_module_level=True)

from langgraph_sdk import get_sync_client  # noqa: E402  (after the skip)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _env(**values: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GEAR_", "OPENAI_", "LANGSMITH_", "LANGCHAIN_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env.update(values)
    return env


@pytest.fixture(scope="module")
def fake_llm() -> Iterator[FaultServer]:
    with running_fault_server(demo_endpoint_reply) as server:
        yield server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, fake_llm: FaultServer) -> Iterator[str]:
    """``langgraph dev`` on a free loopback port over the demo index; yields its URL."""
    work = tmp_path_factory.mktemp("langgraph-dev")
    index = work / "index"
    settings = {"GEAR_EMBEDDING_MODEL": "hashing-384", "GEAR_INDEX_DIR": str(index)}
    built = subprocess.run(
        [sys.executable, "-m", "gear_agent.cli", "index", str(DEMO / "corpus.json"),
         "--openie", str(DEMO / "openie.json")],
        env=_env(**settings), capture_output=True, text=True, cwd=ROOT, timeout=300,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    env = _env(**settings, OPENAI_BASE_URL=fake_llm.base_url, GEAR_LLM_MODELS=OTHER_MODEL,
               GEAR_MAX_ITERATIONS="3")
    with _langgraph_dev(work, env) as url:
        yield url


@contextmanager
def _langgraph_dev(work: Path, env: dict[str, str]) -> Iterator[str]:
    """``langgraph dev`` in ``work`` on a free loopback port; yields its URL."""
    # The shipped langgraph.json, with its graph paths made absolute, so the server's own
    # files (.langgraph_api/) go to the temporary folder and not into the checkout.
    config = json.loads((ROOT / "langgraph.json").read_text())
    config["graphs"] = {k: str(ROOT / v.removeprefix("./")) for k, v in config["graphs"].items()}
    config["dependencies"] = [str(ROOT)]
    (work / "langgraph.json").write_text(json.dumps(config))
    port = _free_port()
    env = {**env, "LANGSMITH_TRACING": "false", "LANGGRAPH_CLI_NO_ANALYTICS": "1",
           "LANGSMITH_API_KEY": ""}
    log = (work / "server.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-c", "from langgraph_cli.cli import cli; cli()", "dev",
         "--host", "127.0.0.1", "--port", str(port), "--no-browser", "--no-reload"],
        cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_S
        while True:
            if process.poll() is not None:
                raise AssertionError(f"langgraph dev exited: {(work / 'server.log').read_text()[-3000:]}")
            try:
                if httpx.get(f"{url}/ok", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"langgraph dev did not start in {STARTUP_S} s")
            time.sleep(0.2)
        yield url
        text = (work / "server.log").read_text(errors="replace")
        assert "exceeded the expected startup time" not in text
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def _assistant(client: Any) -> str:
    return client.assistants.search(graph_id="gear")[0]["assistant_id"]


def test_schemas_show_the_public_fields(server: str) -> None:
    client = get_sync_client(url=server)
    schemas = client.assistants.get_schemas(_assistant(client))
    assert set(schemas["input_schema"]["properties"]) == {
        "question", "messages", "max_iterations", "top_k", "where", "deadline_s"}
    assert {"answer", "citations", "messages", "passages"} <= set(schemas["output_schema"]["properties"])
    assert set(schemas["context_schema"]["properties"]) == {"model", "deadline_s"}


def test_a_chat_run_streams_node_updates_and_answers_with_citations(
    server: str, fake_llm: FaultServer
) -> None:
    client = get_sync_client(url=server)
    thread = client.threads.create()["thread_id"]
    before = len(fake_llm.completions)
    nodes, final = [], {}
    for part in client.runs.stream(
        thread, "gear", input={"messages": [{"role": "user", "content": QUESTION}]},
        stream_mode=["updates", "values"], context={"model": OTHER_MODEL},
    ):
        if part.event == "updates":
            nodes.extend(part.data)
        elif part.event == "values":
            final = part.data
        assert part.event != "error", part.data
    assert nodes[0] == "start" and nodes[-2:] == ["finalize", "answer"]
    assert final["answer"] == ANSWER
    assert [c["title"] for c in final["citations"]] == ["Oskar Brenner"]
    assert final["citations"][0]["quote"] == QUOTE
    assert any(d.get("citation") == {"passage": UNSHOWN} for d in final["dropped"])
    assert [m["type"] for m in final["messages"]] == ["human", "ai"]
    assert final["messages"][-1]["content"].startswith(f"{ANSWER} [1]")
    sent = fake_llm.completions[before:]
    assert sent and {r.body["model"] for r in sent} == {OTHER_MODEL}  # the run's model

    # A second turn on the thread: the earlier turn is context for the QA prompt.
    before = len(fake_llm.completions)
    result = client.runs.wait(thread, "gear", input={"messages": [
        {"role": "user", "content": "Who was the spouse of the man who founded it?"}]})
    qa = [r for r in fake_llm.completions[before:]
          if str(r.messages[-1]["content"]).startswith("You answer")][-1]
    assert f"User: {QUESTION}\nAssistant: {ANSWER} [1]" in qa.messages[-1]["content"]
    assert {r.body["model"] for r in fake_llm.completions[before:]} == {"gpt-4o-mini"}  # default
    assert [m["type"] for m in result["messages"]] == ["human", "ai", "human", "ai"]


def test_project_errors_reach_the_client_with_their_message(server: str) -> None:
    client = get_sync_client(url=server)
    errors = [part.data for part in client.runs.stream(None, "gear", input={"question": "  "})
              if part.event == "error"]
    assert errors == [{"error": "QuestionError",
                       "message": "the question is empty; ask something, e.g. 'Who founded Rome?'"}]
    errors = [part.data for part in client.runs.stream(
        None, "gear", input={"question": QUESTION}, context={"model": "anthropic:claude-x"})
        if part.event == "error"]
    assert errors[0]["error"] == "LLMConfigError"
    assert "'anthropic:claude-x' may not be chosen per run" in errors[0]["message"]


def test_schemas_and_the_drawing_need_no_llm_and_no_index(tmp_path: Path) -> None:
    """Studio asks for the schemas and the drawing before any run: with no LLM configured
    and no index they are still answered (the graph is described, nothing is loaded), and
    only a run says what is missing, in one line."""
    env = _env(GEAR_INDEX_DIR=str(tmp_path / "no-index"), GEAR_EMBEDDING_MODEL="hashing-384")
    with _langgraph_dev(tmp_path, env) as url:
        client = get_sync_client(url=url)
        assistant = _assistant(client)
        schemas = client.assistants.get_schemas(assistant)
        assert "question" in schemas["input_schema"]["properties"]
        assert "start" in json.dumps(client.assistants.get_graph(assistant))
        thread = client.threads.create()["thread_id"]
        run = client.runs.wait(thread, "gear", input={"question": QUESTION}, raise_error=False)
        log = (tmp_path / "server.log").read_text(errors="replace")
    assert "LLMConfigError" not in log.split("threads")[0]  # nothing failed before the run
    assert "no index" in json.dumps(run) or "No LLM" in json.dumps(run) or "OPENAI" in json.dumps(run)
