"""Drive the GEAR agent through LLM endpoint faults and say what happened.

The agent talks to :mod:`support.fault_server` through the real ``ChatOpenAI`` client (the
one :func:`gear_agent.llm.factory.make_chat_model` builds), over loopback HTTP. The server
answers every prompt of the 2-hop Rainbow Bridge question as a capable model would
(read -> reason -> rewrite -> read -> reason -> answer) and injects one fault, once or on
every call, at one node. :func:`run_fault_case` runs one such case and returns a
:class:`FaultOutcome`: how the run ended, what it recorded, how many HTTP calls each node
made, whether the index files are byte for byte the same afterwards, and whether the same
checkpointed thread answers the next question once the endpoint is healthy again.

Used by ``tests/unit/test_agent_faults.py`` (assertions) and
``benchmarks/fault_table.py`` (the README's fault x outcome table).

Example:
    >>> outcome = run_fault_case(runtime, "500", "read", always=False)  # doctest: +SKIP
    >>> outcome.summary  # doctest: +SKIP
    'answered (read: 2 calls)'
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from gear_agent.agent.graph import build_graph
from gear_agent.llm.client import LLMClient
from gear_agent.llm.errors import LLMCallError
from gear_agent.llm.factory import make_chat_model
from gear_agent.llm.retry import RetryPolicy
from gear_agent.open_index import OpenIndex
from gear_agent.parts import index_parts
from support.fault_server import (
    Behaviour,
    RecordedRequest,
    connection_reset,
    empty_body,
    empty_choices,
    null_content,
    ok,
    running_fault_server,
    status,
    timeout,
    truncated_body,
)

__all__ = [
    "ANSWER",
    "CLIENT_TIMEOUT_S",
    "FAULTS",
    "MAX_RETRIES",
    "NODES",
    "RETRY_AFTER_S",
    "FaultOutcome",
    "run_fault_case",
]

QUESTION = (
    "In which county is the town where the Rainbow Bridge over the American River is located?"
)
ANSWER = "Sacramento County"

CLIENT_TIMEOUT_S = 0.5
"""The chat model's request timeout in these runs; a ``timeout`` fault waits 4x longer."""

MAX_RETRIES = 2
"""Retries after the first attempt: a call that always fails is tried 3 times."""

RETRY_AFTER_S = 0.5
"""The ``Retry-After`` a 429 asks for."""

FAULTS: dict[str, Callable[[], Behaviour]] = {
    "timeout": lambda: timeout(4 * CLIENT_TIMEOUT_S),
    "429 + Retry-After": lambda: status(429, retry_after=RETRY_AFTER_S),
    "500": lambda: status(500),
    "503": lambda: status(503),
    "truncated body": truncated_body,
    "empty body": empty_body,
    "connection reset": connection_reset,
    "empty choices": empty_choices,
    "null content": null_content,
    "400 bad request": lambda: status(400),
}
"""Every fault the endpoint can inject, by the name the table shows."""

NODES = ("read", "reason", "rewrite", "answer")
"""The agent's LLM nodes, in the order a run reaches them."""

_FIRST_LINES = {
    "You read": "read",
    "You decide": "reason",
    "You write the next search query": "rewrite",
    "You answer": "answer",
}


def node_of(prompt: str) -> str:
    """Which node sent ``prompt`` (by the first words of its template in ``prompts/``)."""
    for start, node in _FIRST_LINES.items():
        if prompt.startswith(start):
            return node
    raise ValueError(f"not a GEAR prompt: {prompt[:60]!r}")


def capable_reply(node: str, prompt: str) -> str:
    """What a capable model answers at ``node`` for the Rainbow Bridge question."""
    if node == "read":
        if "Earlier steps have already collected" in prompt:
            return json.dumps({"triples": [["Folsom", "located in", ANSWER]]})
        return json.dumps({"triples": [["Rainbow Bridge", "located in", "Folsom"]]})
    if node == "reason":
        done = ANSWER in prompt  # the question does not name it; only a fact does
        return json.dumps(
            {
                "answerable": done,
                "answer": ANSWER if done else None,
                "reason": None if done else "the county of Folsom",
            }
        )
    if node == "rewrite":
        return "county of Folsom"
    return ANSWER


class FaultyEndpoint:
    """The fault server's answer function: a capable reply, or the fault at its node.

    Args:
        fault: A key of :data:`FAULTS`, or None for no fault.
        node: The node whose calls get the fault.
        always: Every call of ``node`` gets it; else only its first call.
    """

    def __init__(self, fault: str | None, node: str, always: bool) -> None:
        if fault is not None and fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; choose from {sorted(FAULTS)}")
        if node not in NODES:
            raise ValueError(f"unknown node {node!r}; choose from {NODES}")
        self.fault, self.node, self.always = fault, node, always
        self.calls: Counter[str] = Counter()
        self.faults_served = 0
        self._lock = threading.Lock()

    def heal(self) -> None:
        """No more faults from now on."""
        with self._lock:
            self.fault = None

    def __call__(self, request: RecordedRequest) -> Behaviour:
        messages = request.messages
        prompt = "\n".join(str(m.get("content") or "") for m in messages)
        node = node_of(prompt)
        with self._lock:
            self.calls[node] += 1
            inject = self.fault is not None and node == self.node
            if inject and not self.always:
                inject = self.faults_served == 0
            if inject:
                self.faults_served += 1
                return FAULTS[self.fault]()  # type: ignore[index]
        return ok(capable_reply(node, prompt), prompt_tokens=40, completion_tokens=8)


@dataclass
class FaultOutcome:
    """What one run under a fault did.

    Attributes:
        fault: The fault's name (a key of :data:`FAULTS`).
        node: Where it was injected.
        always: On every call of that node, or its first call only.
        state: The final state when the run finished, else None.
        error: The exception that ended the run, else None.
        calls: HTTP chat-completion requests per node.
        faults_served: How many faulty answers the endpoint gave.
        seconds: Wall time of the run.
        index_unchanged: The index files are byte for byte what they were before.
        recovered: The same checkpointed thread then answered the question correctly.
        checkpoint_ok: The thread's saved state after the run has well-formed fields.
    """

    fault: str
    node: str
    always: bool
    state: dict[str, Any] | None
    error: BaseException | None
    calls: dict[str, int]
    faults_served: int
    seconds: float
    index_unchanged: bool
    recovered: bool
    checkpoint_ok: bool

    @property
    def skipped(self) -> list[str]:
        """Nodes whose failed calls were recorded in ``dropped`` (in order, with repeats)."""
        if self.state is None:
            return []
        return [d["node"] for d in self.state["dropped"] if "error" in d]

    @property
    def summary(self) -> str:
        """One table cell: how the run ended, and the calls the faulted node made."""
        calls = self.calls.get(self.node, 0)
        where = f"{self.node}: {calls} call{'s' if calls != 1 else ''}"
        if self.error is not None:
            last = getattr(self.error, "last_error", self.error)
            return f"**fails**: {type(self.error).__name__} ({type(last).__name__}; {where})"
        assert self.state is not None
        skipped = Counter(self.skipped)
        answer = "answered" if self.state["answer"] == ANSWER else f"answer {self.state['answer']!r}"
        if skipped:
            what = ", ".join(f"{n} x{c}" if c > 1 else n for n, c in skipped.items())
            return f"{answer}, degraded: {what} skipped ({where})"
        return f"{answer} ({where})"


def index_digest(folder: Path) -> str:
    """SHA-256 over every file's relative path and bytes under ``folder``."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _checkpoint_ok(values: dict[str, Any]) -> bool:
    """Well-formed saved fields: string triples, one query per iteration started, dicts."""
    memory = values.get("gist_memory", [])
    queries = values.get("queries", [])
    return (
        all(len(t) == 3 and all(isinstance(p, str) and p for p in t) for t in memory)
        and all(isinstance(q, str) and q for q in queries)
        and len(queries) == values.get("iteration", 1)
        and all(isinstance(d, dict) and d.get("node") in NODES for d in values.get("dropped", []))
    )


def run_fault_case(
    runtime: OpenIndex,
    fault: str,
    node: str,
    *,
    always: bool,
    use_async: bool = False,
    index_dir: Path | None = None,
) -> FaultOutcome:
    """Run the agent once with ``fault`` injected at ``node``, then once more healed.

    Args:
        runtime: The tiny Rainbow Bridge index (``support.tiny_corpus.make_runtime``); its
            settings should allow 3 iterations and answering.
        fault: A key of :data:`FAULTS`.
        node: One of :data:`NODES`.
        always: Fault every call of ``node``, else only the first.
        use_async: Run with ``ainvoke`` (the model's async client) instead of ``invoke``.
        index_dir: The index folder to fingerprint; ``runtime.settings.index_dir`` if None.

    Returns:
        The outcome; the run's own exception is caught and kept in ``error``.
    """
    folder = index_dir or Path(runtime.settings.index_dir)
    before = index_digest(folder)
    endpoint = FaultyEndpoint(fault, node, always)
    settings = runtime.settings.model_copy(update={"llm_timeout_s": CLIENT_TIMEOUT_S})
    with running_fault_server(endpoint) as server:
        model = make_chat_model(settings, {"OPENAI_BASE_URL": server.base_url})
        llm = LLMClient(
            model,
            retry=RetryPolicy(max_retries=MAX_RETRIES, base_delay_s=0.05, max_delay_s=0.2),
        )
        agent = build_graph(index_parts(runtime.under(settings)), llm, settings).compile(checkpointer=InMemorySaver())
        config = {"configurable": {"thread_id": str(uuid.uuid4())}}
        state: dict[str, Any] | None = None
        error: BaseException | None = None
        started = time.monotonic()
        try:
            if use_async:
                state = asyncio.run(agent.ainvoke({"question": QUESTION}, config))
            else:
                state = agent.invoke({"question": QUESTION}, config)
        except LLMCallError as exc:
            error = exc
        seconds = time.monotonic() - started
        calls = dict(endpoint.calls)
        faults_served = endpoint.faults_served
        checkpoint_ok = _checkpoint_ok(agent.get_state(config).values)
        endpoint.heal()
        again = agent.invoke({"question": QUESTION}, config)
    return FaultOutcome(
        fault=fault,
        node=node,
        always=always,
        state=state,
        error=error,
        calls=calls,
        faults_served=faults_served,
        seconds=seconds,
        index_unchanged=index_digest(folder) == before,
        recovered=again["answer"] == ANSWER and again["dropped"] == [],
        checkpoint_ok=checkpoint_ok,
    )
