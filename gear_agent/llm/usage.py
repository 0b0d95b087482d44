"""Token accounting: per call, summed per node and in total, as a LangGraph-friendly dict.

The shape is plain data so it can live in graph state and in JSON traces::

    {"input": 120, "output": 30, "counted_input": 120, "counted_output": 30,
     "by_node": {"reader": {"input": 100, "output": 20, "calls": 1,
                            "counted_input": 100, "counted_output": 20}, ...}}

``input``/``output`` are billed tokens: a reply served from the cache bills nothing, so
it counts as a call with zero of them. ``counted_input``/``counted_output`` are every
call's tokens by the model's tokenizer, cached or not (:attr:`LLMReply.counted_input`):
what a question costs, which a replayed run reports as a live one would. Records written
before the counted fields existed read as zero there.

Use :func:`merge_usage` as the reducer of a state field::

    usage: Annotated[UsageDict, merge_usage]

and return ``{"usage": usage_of_call("reader", reply)}`` from a node.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from typing_extensions import TypedDict  # pydantic reads it on Python < 3.12 (graph schemas)

if TYPE_CHECKING:
    from gear_agent.llm.reply import LLMReply


class NodeUsage(TypedDict):
    """Tokens and calls of one node: billed, and counted for every call."""

    input: int
    output: int
    calls: int
    counted_input: int
    counted_output: int


class UsageDict(TypedDict):
    """Tokens in total and per node."""

    input: int
    output: int
    counted_input: int
    counted_output: int
    by_node: dict[str, NodeUsage]


_SUMMED = ("input", "output", "calls", "counted_input", "counted_output")


def empty_usage() -> UsageDict:
    """A usage record with nothing counted yet."""
    return {"input": 0, "output": 0, "counted_input": 0, "counted_output": 0, "by_node": {}}


def _empty_node() -> NodeUsage:
    return {"input": 0, "output": 0, "calls": 0, "counted_input": 0, "counted_output": 0}


def usage_of_call(node: str, reply: LLMReply) -> UsageDict:
    """The usage record of one LLM call made by ``node``.

    Example:
        >>> from gear_agent.llm.reply import LLMReply
        >>> usage_of_call("reader", LLMReply("x", 0, 0, cached=True, counted_input=10,
        ...                                  counted_output=2))["by_node"]
        {'reader': {'input': 0, 'output': 0, 'calls': 1, 'counted_input': 10, 'counted_output': 2}}
    """
    counts: NodeUsage = {
        "input": reply.input_tokens, "output": reply.output_tokens, "calls": 1,
        "counted_input": reply.counted_input, "counted_output": reply.counted_output,
    }
    return {
        "input": reply.input_tokens,
        "output": reply.output_tokens,
        "counted_input": reply.counted_input,
        "counted_output": reply.counted_output,
        "by_node": {node: counts},
    }


def merge_usage(left: UsageDict | None, right: UsageDict | None) -> UsageDict:
    """Sum two usage records into a new one (inputs are not changed); a LangGraph reducer.

    ``None`` or an empty dict counts as nothing, so a state field may start unset.

    Example:
        >>> a = {"input": 1, "output": 2, "by_node": {"qa": {"input": 1, "output": 2, "calls": 1}}}
        >>> merge_usage(a, a)["by_node"]["qa"]
        {'input': 2, 'output': 4, 'calls': 2, 'counted_input': 0, 'counted_output': 0}
    """
    merged = empty_usage()
    for part in (left, right):
        if not part:
            continue
        for key in ("input", "output", "counted_input", "counted_output"):
            merged[key] += int(part.get(key, 0))  # type: ignore[literal-required]
        for node, counts in part.get("by_node", {}).items():
            into = merged["by_node"].setdefault(node, _empty_node())
            for key in _SUMMED:
                into[key] += int(counts.get(key, 0))  # type: ignore[literal-required]
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

    def record(self, node: str, input_tokens: int, output_tokens: int,
               counted_input: int = 0, counted_output: int = 0) -> None:
        """Count one billed call of ``node`` (and its tokens by the model's tokenizer)."""
        with self._lock:
            self._usage["input"] += input_tokens
            self._usage["output"] += output_tokens
            counts = self._count(node, counted_input, counted_output)
            counts["input"] += input_tokens
            counts["output"] += output_tokens

    def record_cached(self, node: str, input_tokens: int, output_tokens: int,
                      counted_input: int = 0, counted_output: int = 0) -> None:
        """Count one call of ``node`` answered from the cache (zero billed tokens)."""
        with self._lock:
            self._count(node, counted_input, counted_output)
            self.cached_calls += 1
            self.cached_input += input_tokens
            self.cached_output += output_tokens

    def _count(self, node: str, counted_input: int, counted_output: int) -> NodeUsage:
        """One call of ``node`` with its counted tokens (the caller holds the lock)."""
        self._usage["counted_input"] += counted_input
        self._usage["counted_output"] += counted_output
        counts = self._usage["by_node"].setdefault(node, _empty_node())
        counts["calls"] += 1
        counts["counted_input"] += counted_input
        counts["counted_output"] += counted_output
        return counts

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
