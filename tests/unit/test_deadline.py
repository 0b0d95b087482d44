"""The run's time budget: one deadline over every LLM call, retry and Retry-After wait.

The client tests use a fake clock and fake sleeps; the agent tests run the real
``ChatOpenAI`` client against :mod:`support.fault_server` and assert how the run ended and
how many requests it made, never how long it took.
"""

from __future__ import annotations

import asyncio
import random
import threading
from pathlib import Path

import httpx
import openai
import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from support.deadline_runs import FaultTiming, run_deadline_case
from support.tiny_corpus import QUESTION, make_runtime, make_settings

from gear_agent.agent import nodes
from gear_agent.llm.client import LLMClient
from gear_agent.llm.errors import LLMCallError, LLMDeadlineError
from gear_agent.llm.retry import RetryPolicy
from gear_agent.parts import index_parts
from gear_agent.questions import RunOptionError

_REQUEST = httpx.Request("POST", "http://llm.test/v1/chat/completions")


def rate_limited(retry_after: float) -> openai.RateLimitError:
    response = httpx.Response(429, headers={"retry-after": str(retry_after)}, request=_REQUEST)
    return openai.RateLimitError("HTTP 429", response=response, body=None)


class FakeTime:
    """A clock that only moves when the client sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.waits: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


class AlwaysFails(FakeListChatModel):
    """Raises the same error on every call."""

    error: BaseException = TimeoutError("slow")
    calls: int = 0

    def invoke(self, *args, **kwargs):  # type: ignore[override]
        self.calls += 1
        raise self.error


# ---- the client ------------------------------------------------------------------------------


def test_backoff_waits_stop_at_the_deadline() -> None:
    fake = FakeTime()
    model = AlwaysFails(responses=["x"])
    client = LLMClient(model, retry=RetryPolicy(max_retries=10, base_delay_s=1.0), sleep=fake.sleep,
                       clock=fake.clock, rng=random.Random(0))
    with pytest.raises(LLMDeadlineError, match="deadline is spent") as caught:
        client.invoke("hi", node="read", deadline_s=5.0)
    assert sum(fake.waits) < 5.0  # no wait ends past the budget
    assert caught.value.attempts == model.calls == len(fake.waits) + 1
    assert isinstance(caught.value, LLMCallError)  # callers that handle failed calls handle it


def test_a_retry_after_longer_than_the_budget_is_not_waited_for() -> None:
    fake = FakeTime()
    model = AlwaysFails(responses=["x"], error=rate_limited(120))
    client = LLMClient(model, sleep=fake.sleep, clock=fake.clock)
    with pytest.raises(LLMDeadlineError) as caught:
        client.invoke("hi", node="reason", deadline_s=30.0)
    assert fake.waits == [] and model.calls == 1
    assert isinstance(caught.value.last_error, openai.RateLimitError)


def test_without_a_deadline_the_retry_policy_alone_bounds_the_call() -> None:
    fake = FakeTime()
    model = AlwaysFails(responses=["x"], error=rate_limited(120))
    client = LLMClient(model, retry=RetryPolicy(max_retries=2), sleep=fake.sleep, clock=fake.clock)
    with pytest.raises(LLMCallError) as caught:
        client.invoke("hi", node="reason")
    assert not isinstance(caught.value, LLMDeadlineError)
    assert fake.waits == [120.0, 120.0]


class Hangs(FakeListChatModel):
    """A call that never returns (until released): the whole call, not one read, must be cut."""

    release: threading.Event = threading.Event()

    def invoke(self, *args, **kwargs):  # type: ignore[override]
        self.release.wait(30)
        return super().invoke(*args, **kwargs)

    async def ainvoke(self, *args, **kwargs):  # type: ignore[override]
        await asyncio.sleep(30)
        return await super().ainvoke(*args, **kwargs)


def test_a_hanging_call_is_cut_at_the_deadline_sync() -> None:
    model = Hangs(responses=["late"], release=threading.Event())
    try:
        with pytest.raises(LLMDeadlineError):
            LLMClient(model).invoke("hi", node="read", deadline_s=0.2)
    finally:
        model.release.set()


def test_a_hanging_call_is_cut_at_the_deadline_async() -> None:
    model = Hangs(responses=["late"])
    with pytest.raises(LLMDeadlineError):
        asyncio.run(LLMClient(model).ainvoke("hi", node="read", deadline_s=0.2))


def test_a_call_within_the_deadline_answers() -> None:
    client = LLMClient(FakeListChatModel(responses=["Paris"]))
    assert client.invoke("hi", node="qa", deadline_s=30).text == "Paris"
    assert asyncio.run(client.ainvoke("hi", node="qa", deadline_s=30)).text == "Paris"


# ---- the agent -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("deadline") / "index"
    return make_runtime(folder, make_settings(index_dir=folder, max_iterations=3))


QUICK = FaultTiming(client_timeout_s=5.0, server_delay_s=10.0, retry_after_s=60.0,
                    trickle_every_s=0.2, trickle_bytes=4)
"""Faults that outlast a 0.5 s deadline many times over; each read of a trickle is quick."""


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
@pytest.mark.parametrize("fault", ["timeout", "429 + Retry-After", "trickle"])
def test_the_run_stops_at_its_deadline_with_what_it_has(runtime, fault: str, use_async: bool) -> None:
    outcome = run_deadline_case(runtime, fault, 0.5, timing=QUICK, use_async=use_async)
    assert outcome.error is None
    assert outcome.stop_reason == "deadline"
    assert outcome.requests == 1  # the first call ran out of time; no later call was made
    assert outcome.passages > 0  # the base retrieval's passages come back
    assert outcome.dropped_nodes == ["read", "reason", "answer"]


def test_without_a_deadline_a_rate_limited_run_fails_after_its_retries(runtime) -> None:
    timing = FaultTiming(retry_after_s=0.01)
    outcome = run_deadline_case(runtime, "429 + Retry-After", 0, timing=timing,
                                retry=RetryPolicy(max_retries=1))
    assert isinstance(outcome.error, LLMCallError)  # the reasoner's call failed for good
    assert outcome.requests == 4  # read: 2 attempts, reason: 2 attempts


def test_a_spent_budget_makes_no_call(runtime) -> None:
    outcome = run_deadline_case(runtime, "trickle", 300, timing=QUICK,
                                inputs={"deadline_s": 1e-9})  # the per-run value wins
    assert (outcome.stop_reason, outcome.requests) == ("deadline", 0)
    assert outcome.passages > 0


def test_run_deadline_comes_from_input_then_context_then_settings() -> None:
    assert nodes.run_deadline_s({"deadline_s": "2.5"}, None, None, 300) == 2.5
    assert nodes.run_deadline_s({}, {"deadline_s": 5}, {"configurable": {"deadline_s": 7}}, 300) == 5
    assert nodes.run_deadline_s({}, None, {"configurable": {"deadline_s": 7}}, 300) == 7
    assert nodes.run_deadline_s({}, None, None, 300) == 300
    assert nodes.run_deadline_s({}, None, None, 0) is None  # 0: no deadline
    with pytest.raises(RunOptionError, match="deadline_s must be at least 0"):
        nodes.run_deadline_s({"deadline_s": -1}, None, None, 300)


def test_the_deadline_stops_the_loop() -> None:
    assert nodes.stop_reason_of({"stop_reason": "deadline", "answerable": True}, 4) == "deadline"


def _start(folder: Path) -> nodes.Node:
    runtime = make_runtime(folder)
    return nodes.make_start(runtime.store, runtime.settings)


@pytest.mark.parametrize(
    ("options", "message"),
    [({"max_iterations": "x"}, "max_iterations must be a whole number"),
     ({"max_iterations": 0}, "max_iterations must be at least 1"),
     ({"top_k": 0}, "top_k must be at least 1"),
     ({"top_k": -3}, "top_k must be at least 1"),
     ({"deadline_s": "soon"}, "deadline_s must be a number")],
)
def test_bad_run_options_are_one_line_errors(tmp_path: Path, options: dict, message: str) -> None:
    start = _start(tmp_path / "index")
    with pytest.raises(RunOptionError, match=message):
        start({"question": QUESTION, **options})


def test_numeric_strings_are_coerced(tmp_path: Path) -> None:
    update = _start(tmp_path / "index")(
        {"question": QUESTION, "max_iterations": "3", "top_k": "4"})
    assert (update["max_iterations"], update["top_k"]) == (3, 4)


def test_the_deadline_is_recorded_in_the_trace(tmp_path: Path) -> None:
    from gear_agent.agent.graph import build_graph
    from gear_agent.tracing.jsonl_tracer import FILE_NAME, JsonlTracer
    from gear_agent.tracing.reader import read_runs, roots

    runtime = make_runtime(tmp_path / "index", make_settings(deadline_s=30))
    model = AlwaysFails(responses=["x"], error=rate_limited(120))  # asks for more than is left
    agent = build_graph(index_parts(runtime), LLMClient(model), runtime.settings).compile()
    result = agent.invoke({"question": QUESTION}, config={"callbacks": [JsonlTracer(tmp_path)]})
    assert result["stop_reason"] == "deadline" and model.calls == 1
    root = roots(read_runs(tmp_path / FILE_NAME))[-1]
    assert root["outputs"]["stop_reason"] == "deadline"
    assert any("deadline is spent" in d["error"] for d in root["outputs"]["dropped"])


def test_no_work_after_the_deadline_so_the_run_ends_at_it(tmp_path: Path, monkeypatch) -> None:
    """A hanging model is cut at the deadline; the nodes after it that are not needed for
    the answer (link, expand: encoders, graph walks, a first load of the int8 encoder) do
    nothing, so the run ends within its budget (a 10 s run took 13 s before)."""
    from gear_agent.agent import _steps as steps
    from gear_agent.agent.graph import build_graph

    calls: list[str] = []
    for name in ("link_triples", "expand"):
        original = getattr(steps, name)
        monkeypatch.setattr(steps, name, lambda *a, _n=name, _f=original, **k: (calls.append(_n), _f(*a, **k))[1])
    model = Hangs(responses=["late"], release=threading.Event())
    try:
        runtime = make_runtime(tmp_path / "index", make_settings(max_iterations=2))
        agent = build_graph(index_parts(runtime), LLMClient(model), runtime.settings).compile()
        result = agent.invoke({"question": QUESTION, "deadline_s": 0.3})
    finally:
        model.release.set()
    assert result["stop_reason"] == "deadline" and result["passages"]
    assert calls == []  # link and expand did no work once the budget was spent
