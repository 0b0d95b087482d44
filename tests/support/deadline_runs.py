"""Run the GEAR agent against an endpoint that never answers in time, with and without a deadline.

Three faults, each on every chat call (:mod:`support.fault_server` on loopback HTTP, the
real ``ChatOpenAI`` client): ``timeout`` (the server answers only after the client's
request timeout), ``429 + Retry-After`` (every call is rate limited, the server asks to
wait) and ``trickle`` (a whole reply, a few bytes at a time, each read inside the
request timeout). :func:`run_deadline_case` runs the 2-hop Rainbow Bridge question once
and says how it ended and how long it took.

Used by ``tests/unit/test_deadline.py`` (assertions) and ``benchmarks/deadline_table.py``
(the seconds per question, before and after).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gear_agent.agent.graph import build_graph
from gear_agent.llm.client import LLMClient
from gear_agent.llm.errors import LLMCallError
from gear_agent.llm.factory import make_chat_model
from gear_agent.llm.retry import RetryPolicy
from gear_agent.open_index import OpenIndex
from gear_agent.parts import index_parts
from support.agent_faults import QUESTION, capable_reply, node_of
from support.fault_server import (
    Behaviour,
    RecordedRequest,
    running_fault_server,
    status,
    timeout,
    trickle,
)

__all__ = ["DEADLINE_FAULTS", "DeadlineOutcome", "FaultTiming", "run_deadline_case"]


@dataclass(frozen=True)
class FaultTiming:
    """The knobs of the three faults.

    Attributes:
        client_timeout_s: The chat model's request timeout (per read for httpx).
        server_delay_s: How long a ``timeout`` fault waits before answering.
        retry_after_s: The ``Retry-After`` every 429 asks for.
        trickle_every_s: Seconds between the chunks of a ``trickle`` reply.
        trickle_bytes: Bytes per chunk.
    """

    client_timeout_s: float = 2.0
    server_delay_s: float = 8.0
    retry_after_s: float = 10.0
    trickle_every_s: float = 0.8
    trickle_bytes: int = 8


DEADLINE_FAULTS: dict[str, Callable[[FaultTiming], Callable[[str], Behaviour]]] = {
    "timeout": lambda t: lambda reply: timeout(t.server_delay_s, text=reply),
    "429 + Retry-After": lambda t: lambda reply: status(429, retry_after=t.retry_after_s),
    "trickle": lambda t: lambda reply: trickle(t.trickle_every_s, t.trickle_bytes, text=reply),
}
"""Each fault, given the timing, as a function of the capable reply it replaces."""


@dataclass(frozen=True)
class DeadlineOutcome:
    """How one run ended.

    Attributes:
        seconds: Wall time of the run (until it returned or raised).
        stop_reason: The final state's ``stop_reason``; None when the run raised.
        error: The exception that ended the run, else None.
        requests: Chat-completion requests the endpoint received.
        passages: Passages the run returned.
        dropped_nodes: Nodes whose calls were recorded in ``dropped``.
    """

    seconds: float
    stop_reason: str | None
    error: BaseException | None
    requests: int
    passages: int
    dropped_nodes: list[str]


def run_deadline_case(
    runtime: OpenIndex,
    fault: str,
    deadline_s: float,
    *,
    timing: FaultTiming | None = None,
    retry: RetryPolicy | None = None,
    use_async: bool = False,
    inputs: dict[str, Any] | None = None,
) -> DeadlineOutcome:
    """Ask the Rainbow Bridge question once with ``fault`` on every call.

    Args:
        runtime: The tiny index (``support.tiny_corpus.make_runtime``).
        fault: A key of :data:`DEADLINE_FAULTS`.
        deadline_s: ``GEAR_DEADLINE_S`` for the run (0: none).
        timing: The faults' knobs; ``FaultTiming()`` when None.
        retry: The client's retry policy; the default one (4 retries) when None.
        use_async: Run with ``ainvoke``.
        inputs: Extra input fields (e.g. a per-run ``deadline_s``).
    """
    timing = timing or FaultTiming()
    make_fault = DEADLINE_FAULTS[fault](timing)

    def answer(request: RecordedRequest) -> Behaviour:
        prompt = "\n".join(str(m.get("content") or "") for m in request.messages)
        return make_fault(capable_reply(node_of(prompt), prompt))

    settings = runtime.settings.model_copy(
        update={"llm_timeout_s": timing.client_timeout_s, "deadline_s": deadline_s}
    )
    with running_fault_server(answer) as server:
        model = make_chat_model(settings, {"OPENAI_BASE_URL": server.base_url})
        agent = build_graph(index_parts(runtime.under(settings)), LLMClient(model, retry=retry), settings).compile()
        state: dict[str, Any] | None = None
        error: BaseException | None = None
        started = time.monotonic()
        question = {"question": QUESTION, **(inputs or {})}
        try:
            state = asyncio.run(agent.ainvoke(question)) if use_async else agent.invoke(question)
        except LLMCallError as exc:
            error = exc
        seconds = time.monotonic() - started
        requests = len(server.completions)
    return DeadlineOutcome(
        seconds=seconds,
        stop_reason=None if state is None else state["stop_reason"],
        error=error,
        requests=requests,
        passages=0 if state is None else len(state["passages"]),
        dropped_nodes=[] if state is None else [d["node"] for d in state["dropped"] if "error" in d],
    )



