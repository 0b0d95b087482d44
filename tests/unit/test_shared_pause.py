"""A server's ``Retry-After`` holds for every call of a client (one shared pause), not only
for the call that got it: the calls that start or retry before it ends wait until it ends."""

from __future__ import annotations

import asyncio

import httpx
import openai
import pytest
from support.fakes import ScriptedChatModel

from gear_agent.llm import tokens
from gear_agent.llm.client import LLMClient
from gear_agent.llm.errors import LLMDeadlineError
from gear_agent.llm.retry import RetryPolicy, SharedPause

_REQUEST = httpx.Request("POST", "http://llm.test/v1/chat/completions")


def rate_limit(seconds: str) -> openai.RateLimitError:
    response = httpx.Response(429, headers={"retry-after": seconds}, request=_REQUEST)
    return openai.RateLimitError("HTTP 429", response=response, body=None)


@pytest.fixture(autouse=True)
def offline_tokenizer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "_encoding", lambda name: None)


class Clock:
    """A clock that moves only when a wait is recorded."""

    def __init__(self) -> None:
        self.now = 100.0
        self.waits: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds

    async def async_sleep(self, seconds: float) -> None:
        self.sleep(seconds)


def client(model: ScriptedChatModel, clock: Clock, pause: SharedPause | None = None) -> LLMClient:
    return LLMClient(model, retry=RetryPolicy(max_retries=2), sleep=clock.sleep,
                     async_sleep=clock.async_sleep, clock=clock, pause=pause)


def test_a_call_after_a_429_waits_out_the_pause_another_call_was_given() -> None:
    clock = Clock()
    model = ScriptedChatModel.from_list([rate_limit("5"), "first", "second"])
    llm = client(model, clock)
    llm.invoke("q1", node="extraction")  # 429 at 100: waits 5 s, then answered
    assert clock.waits == [5.0]
    clock.now = 102.0  # a second call starts while the pause (until 105) lasts
    assert llm.invoke("q2", node="extraction").text == "second"
    assert clock.waits == [5.0, 3.0], "the second call waited for the pause's end, not longer"
    clock.now = 200.0  # after the pause: no wait
    llm.pause.hold(0.0)
    assert llm.pause.left() == 0.0


def test_a_later_pause_is_waited_for_again_an_old_one_is_not() -> None:
    clock = Clock()
    model = ScriptedChatModel.from_list([rate_limit("2"), "a", rate_limit("4"), "b"])
    llm = client(model, clock)
    llm.invoke("q1", node="n")
    llm.invoke("q2", node="n")
    assert clock.waits == [2.0, 4.0]


def test_concurrent_async_calls_share_one_pause() -> None:
    """Four calls in flight: one gets a 429 with Retry-After 6; the three others, answered,
    each start their next call inside the pause and wait until it ends."""
    clock = Clock()
    waits: list[float] = []

    async def record(seconds: float) -> None:  # the clock stands still: every wait is the pause's
        waits.append(seconds)

    replies = iter([rate_limit("6"), *"abcdefgh"])
    model = ScriptedChatModel(respond=lambda _: next(replies))
    llm = LLMClient(model, retry=RetryPolicy(max_retries=2), async_sleep=record, clock=clock)

    async def worker(name: str) -> None:
        await llm.ainvoke(f"{name} 1", node="n")
        await llm.ainvoke(f"{name} 2", node="n")

    async def run() -> None:
        await asyncio.gather(*(worker(w) for w in "wxyz"))

    asyncio.run(run())
    assert len(model.calls) == 9
    # the clock stands still, so the pause never ends: the 429's retry and every call started
    # after it (the four workers' second calls) wait for its end; without it, only the retry
    assert waits == [6.0] * 5


def test_clients_with_their_own_pause_do_not_wait_for_each_other() -> None:
    clock = Clock()
    first = client(ScriptedChatModel.from_list([rate_limit("5"), "ok"]), clock)
    second = client(ScriptedChatModel.from_list(["ok"]), clock)
    first.invoke("q", node="n")
    clock.now = 101.0
    second.invoke("q", node="n")
    assert clock.waits == [5.0]
    shared = SharedPause(clock)
    third = client(ScriptedChatModel.from_list([rate_limit("5"), "ok"]), clock, shared)
    fourth = client(ScriptedChatModel.from_list(["ok"]), clock, shared)
    third.invoke("q", node="n")
    clock.now -= 1.0  # one second into the pause
    fourth.invoke("q", node="n")
    assert clock.waits == [5.0, 5.0, 1.0]


def test_a_pause_past_the_deadline_fails_at_once() -> None:
    clock = Clock()
    llm = client(ScriptedChatModel.from_list(["never sent"]), clock)
    llm.pause.hold(30.0)
    with pytest.raises(LLMDeadlineError):
        llm.invoke("q", node="n", deadline_s=10.0)
    assert clock.waits == []
