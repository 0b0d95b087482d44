"""One run of the agent as events: each node's update as it finishes, and the answer's
words as the QA model writes them.

LangGraph streams node updates (``stream_mode="updates"``) and, from a chat model that
streams, its tokens (``stream_mode="messages"``). :func:`run_events` (and the async
:func:`arun_events`) merge the two into :class:`RunEvent` objects: an ``update`` per
finished node, in order, a ``token`` per piece of the answer (the QA reply's tokens with
its JSON taken off by :class:`~gear_agent.parsing.answer_stream.AnswerTextStream`), and a
last ``final`` event holding the run's output state. A model that does not stream gives
no ``token`` events; the answer is then in the ``answer`` node's update and the final
state. Only the QA call's tokens are streamed: the reader's and reasoner's replies are
JSON for the agent, not words for a person.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.messages import AIMessageChunk
from langgraph.types import Overwrite

from gear_agent.llm.messages import content_text
from gear_agent.parsing.answer_stream import AnswerTextStream

ANSWER_NODE = "answer"
"""The node whose model call is streamed (its LLM calls carry ``gear_node="answer"``)."""

STREAM_MODES = ["updates", "messages", "values"]
"""What :func:`run_events` asks LangGraph for."""

EventKind = Literal["update", "token", "final"]


@dataclass(frozen=True)
class RunEvent:
    """One thing that happened in a run.

    Attributes:
        kind: ``update`` (a node finished), ``token`` (answer text arrived) or ``final``.
        node: The node of an ``update`` (``answer`` for a ``token``; None for ``final``).
        data: An ``update``'s changes (``Overwrite`` markers replaced by their values),
            a ``token``'s ``{"text": ...}``, or the ``final`` output state.
    """

    kind: EventKind
    node: str | None = None
    data: dict[str, Any] = field(default_factory=dict)


class RunEventMerger:
    """Turns LangGraph's ``(mode, chunk)`` pairs (``stream_mode`` a list) into
    :class:`RunEvent` objects; one per run, since it follows the answer's text."""

    def __init__(self) -> None:
        self.answer = AnswerTextStream()
        self.values: dict[str, Any] = {}

    def events(self, mode: str, chunk: Any) -> list[RunEvent]:
        if mode == "values":
            self.values = chunk if isinstance(chunk, dict) else self.values
            return []
        if mode == "messages":
            message, metadata = chunk
            if not isinstance(message, AIMessageChunk) or (metadata or {}).get("gear_node") != ANSWER_NODE:
                return []
            text = self.answer.feed(content_text(message.content))
            return [RunEvent("token", ANSWER_NODE, {"text": text})] if text else []
        if mode == "updates" and isinstance(chunk, dict):
            return [RunEvent("update", str(node), plain_update(update)) for node, update in chunk.items()]
        return []

    def final(self, output_keys: Any) -> RunEvent:
        keys = output_keys if isinstance(output_keys, (list, tuple)) else None
        state = {k: v for k, v in self.values.items() if keys is None or k in keys}
        return RunEvent("final", None, state)


def plain_update(update: Any) -> dict[str, Any]:
    """A node's update with LangGraph ``Overwrite`` markers replaced by their values.

    Example:
        >>> plain_update({"queries": Overwrite(["q"]), "iteration": 1})
        {'queries': ['q'], 'iteration': 1}
    """
    if not isinstance(update, dict):
        return {}
    return {k: v.value if isinstance(v, Overwrite) else v for k, v in update.items()}


def run_events(agent: Any, inputs: dict[str, Any], **kwargs: Any) -> Iterator[RunEvent]:
    """Run the compiled agent on ``inputs``, yielding its events (see the module docstring).

    Args:
        agent: The compiled GEAR graph.
        inputs: Its input (``{"question": ...}`` or ``{"messages": [...]}``, overrides).
        **kwargs: Passed to ``agent.stream`` (``config``, ``context``).

    Example:
        >>> for event in run_events(agent, {"question": "Who founded Kestrel?"}):  # doctest: +SKIP
        ...     print(event.data["text"] if event.kind == "token" else event.node, end="")
    """
    merger = RunEventMerger()
    for mode, chunk in agent.stream(inputs, stream_mode=STREAM_MODES, **kwargs):
        yield from merger.events(mode, chunk)
    yield merger.final(getattr(agent, "output_channels", None))


async def arun_events(agent: Any, inputs: dict[str, Any], **kwargs: Any) -> AsyncIterator[RunEvent]:
    """Async :func:`run_events` (``agent.astream``)."""
    merger = RunEventMerger()
    async for mode, chunk in agent.astream(inputs, stream_mode=STREAM_MODES, **kwargs):
        for event in merger.events(mode, chunk):
            yield event
    yield merger.final(getattr(agent, "output_channels", None))
