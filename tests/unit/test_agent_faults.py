"""The GEAR agent against a real OpenAI-compatible endpoint that misbehaves on the wire.

Every fault of ``support.fault_server`` (timeouts, 429 with Retry-After, 5xx, truncated
and empty bodies, TCP resets, empty choices, null content, a 400) is injected into the
agent's ``ChatOpenAI`` calls at each LLM node, once or on every call. The contract:

* a fault that happens once is retried and the run answers as if nothing happened;
* a fault that persists is retried at most ``MAX_RETRIES`` times per call, then
  - ``read``, ``rewrite``, ``answer``: the step is skipped, the failure is recorded in
    ``dropped``, and the run goes on;
  - ``reason``: the run stops with ``LLMCallError`` naming the node and the attempts;
* a request that cannot succeed (400) is not retried;
* nothing hangs (each test is bounded), the index files are byte for byte unchanged, the
  checkpointed thread's state stays well formed, and the same thread answers the next
  question once the endpoint is healthy.

``python benchmarks/fault_table.py`` prints the whole fault x outcome table (README).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from support.agent_faults import (
    ANSWER,
    FAULTS,
    MAX_RETRIES,
    NODES,
    RETRY_AFTER_S,
    FaultOutcome,
    run_fault_case,
)
from support.tiny_corpus import make_runtime, make_settings

from gear_agent.agent.graph import build_graph
from gear_agent.llm.client import LLMClient
from gear_agent.llm.errors import LLMCallError
from gear_agent.llm.factory import make_chat_model
from gear_agent.llm.retry import RetryPolicy
from gear_agent.open_index import OpenIndex
from gear_agent.parts import index_parts

pytestmark = pytest.mark.timeout(60)

RETRIED = [name for name in FAULTS if name != "400 bad request"]
ATTEMPTS = MAX_RETRIES + 1
HEALTHY_CALLS = {"read": 2, "reason": 2, "rewrite": 1, "answer": 1}


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> OpenIndex:
    folder = tmp_path_factory.mktemp("faults") / "index"
    return make_runtime(folder, make_settings(index_dir=folder, max_iterations=3))


def assert_nothing_broken(outcome: FaultOutcome) -> None:
    assert outcome.index_unchanged, "the index files changed"
    assert outcome.checkpoint_ok, "the checkpointed state is malformed"
    assert outcome.recovered, "the thread did not answer again once the endpoint healed"


def test_without_faults_the_run_makes_the_expected_calls(runtime: OpenIndex) -> None:
    outcome = run_fault_case(runtime, "500", "read", always=False)
    assert outcome.calls["read"] == HEALTHY_CALLS["read"] + 1  # the one retry
    assert {n: c for n, c in outcome.calls.items() if n != "read"} == {
        n: c for n, c in HEALTHY_CALLS.items() if n != "read"
    }


@pytest.mark.parametrize("fault", RETRIED)
def test_a_fault_once_is_retried_and_the_run_answers(runtime: OpenIndex, fault: str) -> None:
    outcome = run_fault_case(runtime, fault, "read", always=False)

    assert outcome.error is None
    assert outcome.state is not None
    assert outcome.state["answer"] == ANSWER
    assert outcome.state["dropped"] == []
    assert outcome.state["stop_reason"] == "answerable"
    assert outcome.faults_served == 1
    assert outcome.calls == {**HEALTHY_CALLS, "read": HEALTHY_CALLS["read"] + 1}
    assert outcome.state["tokens"]["by_node"]["read"]["calls"] == HEALTHY_CALLS["read"]
    assert_nothing_broken(outcome)


@pytest.mark.parametrize("node", NODES)
def test_a_fault_once_at_any_node_is_retried(runtime: OpenIndex, node: str) -> None:
    outcome = run_fault_case(runtime, "connection reset", node, always=False)
    assert outcome.error is None and outcome.state is not None
    assert outcome.state["answer"] == ANSWER and outcome.state["dropped"] == []
    assert outcome.calls[node] == HEALTHY_CALLS[node] + 1
    assert_nothing_broken(outcome)


@pytest.mark.parametrize("fault", RETRIED)
def test_a_persistent_fault_at_read_skips_the_read_and_records_it(
    runtime: OpenIndex, fault: str
) -> None:
    outcome = run_fault_case(runtime, fault, "read", always=True)

    assert outcome.error is None and outcome.state is not None
    state = outcome.state
    assert state["gist_memory"] == []
    assert state["stop_reason"] == "max_iterations" and state["iterations"] == 3
    assert outcome.skipped == ["read"] * 3
    assert all(f"after {ATTEMPTS} attempts" in d["error"] for d in state["dropped"])
    assert outcome.calls["read"] == 3 * ATTEMPTS  # bounded: 3 iterations x 3 attempts
    assert state["passages"], "the ranked passages are still returned"
    assert_nothing_broken(outcome)


@pytest.mark.parametrize("fault", RETRIED)
def test_a_persistent_fault_at_reason_fails_with_a_clear_error(
    runtime: OpenIndex, fault: str
) -> None:
    outcome = run_fault_case(runtime, fault, "reason", always=True)

    assert isinstance(outcome.error, LLMCallError)
    assert outcome.error.node == "reason"
    assert outcome.error.attempts == ATTEMPTS and outcome.error.retriable
    message = str(outcome.error)
    assert "node='reason'" in message and f"after {ATTEMPTS} attempts" in message
    assert outcome.calls == {"read": 1, "reason": ATTEMPTS}
    assert_nothing_broken(outcome)


@pytest.mark.parametrize("node", ["rewrite", "answer"])
@pytest.mark.parametrize("fault", ["timeout", "503", "empty choices"])
def test_a_persistent_fault_at_rewrite_or_answer_degrades(
    runtime: OpenIndex, fault: str, node: str
) -> None:
    outcome = run_fault_case(runtime, fault, node, always=True)

    assert outcome.error is None and outcome.state is not None
    state = outcome.state
    assert outcome.skipped == [node]
    assert outcome.calls[node] == ATTEMPTS
    assert state["answer"] == ANSWER  # rewrite: the fallback query finds it; answer: the reasoner's
    if node == "rewrite":
        question, fallback = state["queries"]
        assert fallback.startswith(question) and fallback.endswith("the county of Folsom")
    assert_nothing_broken(outcome)


def test_a_bad_request_is_not_retried(runtime: OpenIndex) -> None:
    read = run_fault_case(runtime, "400 bad request", "read", always=True)
    assert read.calls["read"] == 3  # one per iteration, never repeated
    assert read.skipped == ["read"] * 3
    assert all("after 1 attempt:" in d["error"] for d in read.state["dropped"])

    reason = run_fault_case(runtime, "400 bad request", "reason", always=True)
    assert isinstance(reason.error, LLMCallError) and not reason.error.retriable
    assert reason.calls == {"read": 1, "reason": 1}
    assert_nothing_broken(read)
    assert_nothing_broken(reason)


def test_retry_after_is_honoured(runtime: OpenIndex) -> None:
    outcome = run_fault_case(runtime, "429 + Retry-After", "reason", always=False)
    assert outcome.state is not None and outcome.state["answer"] == ANSWER
    assert outcome.seconds >= RETRY_AFTER_S


@pytest.mark.parametrize("fault", ["timeout", "connection reset", "truncated body", "500"])
def test_async_runs_behave_the_same(runtime: OpenIndex, fault: str) -> None:
    once = run_fault_case(runtime, fault, "read", always=False, use_async=True)
    assert once.state is not None and once.state["answer"] == ANSWER
    assert once.state["dropped"] == []

    always = run_fault_case(runtime, fault, "reason", always=True, use_async=True)
    assert isinstance(always.error, LLMCallError) and always.error.node == "reason"
    assert always.calls["reason"] == ATTEMPTS
    assert_nothing_broken(once)
    assert_nothing_broken(always)


def test_an_unreachable_endpoint_fails_naming_it(runtime: OpenIndex, unused_port: int) -> None:
    settings = runtime.settings.model_copy(update={"llm_timeout_s": 2.0})
    url = f"http://127.0.0.1:{unused_port}/v1"
    model = make_chat_model(settings, {"OPENAI_BASE_URL": url})
    llm = LLMClient(model, retry=RetryPolicy(max_retries=1, base_delay_s=0.01, max_delay_s=0.02))
    agent = build_graph(index_parts(runtime.under(settings)), llm, settings).compile()

    where = f"node='reason', endpoint='{url}'\\) after 2 attempts: .*Connection error"
    with pytest.raises(LLMCallError, match=where) as failed:
        agent.invoke({"question": "Where is the Rainbow Bridge?"})
    assert failed.value.endpoint == url
    with pytest.raises(LLMCallError, match=where):
        asyncio.run(agent.ainvoke({"question": "Where is the Rainbow Bridge?"}))


@pytest.fixture
def unused_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_index_digest_sees_a_change(tmp_path: Path) -> None:
    from support.agent_faults import index_digest

    (tmp_path / "a").write_bytes(b"1")
    before = index_digest(tmp_path)
    (tmp_path / "a").write_bytes(b"2")
    assert index_digest(tmp_path) != before
