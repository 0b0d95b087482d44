"""Token accounting: per call, summed per node and in total, as a LangGraph-friendly dict.

The shape is plain data so it can live in graph state and in JSON traces::

    {"input": 120, "output": 30,
     "by_node": {"reader": {"input": 100, "output": 20, "calls": 1},
                 "reasoner": {"input": 20, "output": 10, "calls": 1}}}

Use :func:`merge_usage` as the reducer of a state field::

    usage: Annotated[UsageDict, merge_usage]

and return ``{"usage": usage_of_call("reader", reply)}`` from a node.
Cached replies count as a call with zero tokens: they cost nothing.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from typing_extensions import TypedDict  # pydantic reads it on Python < 3.12 (graph schemas)

if TYPE_CHECKING:
    from gear_agent.llm.client import LLMReply


class NodeUsage(TypedDict):
    """Tokens and calls of one node."""

    input: int
    output: int
    calls: int


class UsageDict(TypedDict):
    """Tokens in total and per node."""

    input: int
    output: int
    by_node: dict[str, NodeUsage]


def empty_usage() -> UsageDict:
    """A usage record with nothing counted yet."""
    return {"input": 0, "output": 0, "by_node": {}}


def usage_of_call(node: str, reply: LLMReply) -> UsageDict:
    """The usage record of one LLM call made by ``node``.

    Example:
        >>> from gear_agent.llm.client import LLMReply
        >>> usage_of_call("reader", LLMReply("x", 10, 2, cached=False))["by_node"]
        {'reader': {'input': 10, 'output': 2, 'calls': 1}}
    """
    return {
        "input": reply.input_tokens,
        "output": reply.output_tokens,
        "by_node": {node: {"input": reply.input_tokens, "output": reply.output_tokens, "calls": 1}},
    }


def merge_usage(left: UsageDict | None, right: UsageDict | None) -> UsageDict:
    """Sum two usage records into a new one (inputs are not changed); a LangGraph reducer.

    ``None`` or an empty dict counts as nothing, so a state field may start unset.

    Example:
        >>> a = {"input": 1, "output": 2, "by_node": {"qa": {"input": 1, "output": 2, "calls": 1}}}
        >>> merge_usage(a, a)["by_node"]["qa"]
        {'input': 2, 'output': 4, 'calls': 2}
    """
    merged = empty_usage()
    for part in (left, right):
        if not part:
            continue
        merged["input"] += int(part.get("input", 0))
        merged["output"] += int(part.get("output", 0))
        for node, counts in part.get("by_node", {}).items():
            into = merged["by_node"].setdefault(node, {"input": 0, "output": 0, "calls": 0})
            into["input"] += int(counts.get("input", 0))
            into["output"] += int(counts.get("output", 0))
            into["calls"] += int(counts.get("calls", 0))
    return merged


class TokenUsage:
    """A running total of LLM usage, safe to share between threads and tasks.

    Billed tokens go into :meth:`as_dict`; replies served from the cache are
    counted separately in :attr:`cached_calls`, :attr:`cached_input` and
    :attr:`cached_output` (the tokens the cached reply cost when it was made).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._usage = empty_usage()
        self.cached_calls = 0
        self.cached_input = 0
        self.cached_output = 0

    def record(self, node: str, input_tokens: int, output_tokens: int) -> None:
        """Count one billed call of ``node``."""
        with self._lock:
            self._usage["input"] += input_tokens
            self._usage["output"] += output_tokens
            counts = self._usage["by_node"].setdefault(node, {"input": 0, "output": 0, "calls": 0})
            counts["input"] += input_tokens
            counts["output"] += output_tokens
            counts["calls"] += 1

    def record_cached(self, node: str, input_tokens: int, output_tokens: int) -> None:
        """Count one call of ``node`` answered from the cache (zero billed tokens)."""
        with self._lock:
            counts = self._usage["by_node"].setdefault(node, {"input": 0, "output": 0, "calls": 0})
            counts["calls"] += 1
            self.cached_calls += 1
            self.cached_input += input_tokens
            self.cached_output += output_tokens

    @property
    def input_tokens(self) -> int:
        """Billed prompt tokens so far."""
        return self._usage["input"]

    @property
    def output_tokens(self) -> int:
        """Billed completion tokens so far."""
        return self._usage["output"]

    def as_dict(self) -> UsageDict:
        """A copy of the totals in the :class:`UsageDict` shape."""
        with self._lock:
            return merge_usage(self._usage, None)
