"""The GEAR agent's graph state, its input, output and context schemas, and their reducers.

Accumulating fields use ``Annotated[..., reducer]`` (LangGraph merges what a node
returns into the state with the reducer); the rest are replaced. Every schema is a
``typing_extensions.TypedDict``: pydantic (and so ``graph.get_input_jsonschema()``, the
LangGraph server and Studio) refuses ``typing.TypedDict`` before Python 3.12.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from typing_extensions import NotRequired, TypedDict

from gear_agent.llm.usage import UsageDict, merge_usage

TripleList = list[list[str]]
"""Triples as ``[subject, predicate, object]`` lists (JSON-friendly, checkpoint-safe)."""

WhereField = dict[str, Any] | list[str]
"""A passage filter as JSON: ``{"year": {"$gte": 2020}}`` or ``["source=reports/2024"]``."""

RankedList = list[dict[str, Any]]
"""A ranked passage list, best first: each a
:meth:`~gear_agent.retrieval.base.RankedPassage.to_dict` dict (``{"id", "score", "chain":
[triple ids]}``; the state keeps JSON, not objects, so any checkpointer can store it)."""


def _key(triple: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    return tuple(" ".join(str(part).split()).lower() for part in triple)


def merge_memory(left: TripleList | None, right: TripleList | None) -> TripleList:
    """Gist-memory reducer: ``left`` then the new triples of ``right``, case-insensitively unique.

    Order is kept (first spelling wins); neither input is changed.

    Example:
        >>> merge_memory([["Paris", "capital of", "France"]], [["paris", "Capital of", "france"],
        ...                                                   ["France", "in", "Europe"]])
        [['Paris', 'capital of', 'France'], ['France', 'in', 'Europe']]
    """
    merged: TripleList = []
    seen: set[tuple[str, ...]] = set()
    for part in (left or [], right or []):
        for triple in part:
            key = _key(triple)
            if key not in seen:
                seen.add(key)
                merged.append([str(p) for p in triple])
    return merged


class Citation(TypedDict):
    """One passage an answer cites, numbered by its place in ``citations`` (1-based).

    Attributes:
        passage_id: The cited passage (always one the QA prompt was shown).
        title: Its title.
        quote: The words of the passage the model quoted as support, when it gave a
            quote that is really in the passage; None otherwise.
        location: Where the passage is, as a citation names it: its source and page or
            section (``annual-report.pdf, p. 14``; empty for a passage with no source).
    """

    passage_id: str
    title: str
    quote: str | None
    location: str


class InputState(TypedDict):
    """What a caller passes: a question, or a chat; optional per-run overrides of the settings.

    Give ``question``, or ``messages`` whose last human message is the question (earlier
    turns are context for the rewriter and the answer), or both (then ``question`` is asked
    and joins the chat).
    """

    question: NotRequired[str]
    messages: NotRequired[Annotated[list[AnyMessage], add_messages]]
    max_iterations: NotRequired[int]
    top_k: NotRequired[int]
    where: NotRequired[WhereField]
    deadline_s: NotRequired[float]


class GearContext(TypedDict, total=False):
    """Per-run choices that are not part of the state (LangGraph ``context=``).

    Attributes:
        model: The chat model of this run, as ``GEAR_LLM_MODEL`` names one
            (``"provider:model"`` or a plain OpenAI-compatible name); it must be the
            configured model or one listed in ``GEAR_LLM_MODELS``. Absent: the configured one.
        deadline_s: This run's time budget in seconds (see ``GearState.deadline_at``);
            absent: ``GEAR_DEADLINE_S``.
    """

    model: str
    deadline_s: float


class OutputState(TypedDict):
    """What ``invoke`` returns.

    Attributes:
        iterations: Iterations run: the state's last ``iteration``, set by ``finalize``
            (an output key only; the loop itself reads ``GearState.iteration``).
        passages: The final ranked passages as
            :meth:`~gear_agent.retrieval.records.PassageRecord.to_dict` dicts.
    """

    answer: str | None
    citations: list[Citation]
    messages: Annotated[list[AnyMessage], add_messages]
    passages: list[dict[str, Any]]
    gist_memory: TripleList
    iterations: int
    queries: list[str]
    stop_reason: str | None
    tokens: UsageDict
    dropped: list[dict[str, Any]]


class GearState(TypedDict):
    """Everything the GEAR loop reads and writes.

    Attributes:
        question: The user's question (from ``messages`` when not given).
        messages: The chat: the question as a human message and each answer as an AI
            message (appended).
        history: Earlier turns of the chat as ``[role, text]`` pairs (this run's context
            for the rewriter and the answer).
        max_iterations: Per-run override of ``GearSettings.max_iterations``.
        top_k: Per-run override of ``GearSettings.top_k``.
        where: A filter on passages (see :mod:`gear_agent.filters`): every search of the run
            ranks only passages that pass it.
        deadline_s: Per-run time budget in seconds (``GEAR_DEADLINE_S``; 0 for none).
        deadline_at: When the run's time budget ends (epoch seconds), or None for no
            budget; set by ``start``. Every LLM call, retry and ``Retry-After`` wait of the
            run shares it.
        query: The current retrieval query (the question in iteration 1).
        queries: Every query used, in order (appended).
        iteration: The current iteration, 1-based.
        base: This iteration's base (hybrid) retrieval list.
        retrieved: One ranked list per iteration: RRF of the base and expansion lists (appended).
        proximal: This iteration's reader triples.
        dropped: Reader items the parser left out, unreadable replies, and LLM calls that
            failed for good in read, rewrite or answer (appended); a failed reason call
            stops the run.
        linked: Ids of the indexed triples the proximal triples linked to (this iteration).
        gist_memory: Triples gathered so far, case-insensitively unique, in order.
        answerable: The reasoner's last verdict.
        reason: What the reasoner said is missing (when not answerable).
        answer: The answer (reasoner's, then the QA node's when answering is on).
        citations: The passages the QA node's answer cites, checked against those shown.
        stop_reason: ``"answerable"``, ``"max_iterations"`` or ``"deadline"`` (the time
            budget ran out; the run returns what it had) once the loop has stopped.
        ranked: The final ranking (set by ``finalize``): :meth:`RankedPassage.to_dict
            <gear_agent.retrieval.base.RankedPassage.to_dict>` dicts, the chain as triple
            ids; what the agent as a retriever returns (``GearRetriever``).
        passages: The final ranked passages as records (``ranked`` with each passage's
            text and chain triples, read once by ``finalize``): the output's ``passages``.
        tokens: LLM usage, in total and per node (summed).
    """

    question: str
    messages: Annotated[list[AnyMessage], add_messages]
    history: list[list[str]]
    max_iterations: NotRequired[int]
    top_k: NotRequired[int]
    where: NotRequired[WhereField]
    deadline_s: NotRequired[float]
    deadline_at: NotRequired[float | None]
    query: str
    queries: Annotated[list[str], operator.add]
    iteration: int
    base: RankedList
    retrieved: Annotated[list[RankedList], operator.add]
    proximal: TripleList
    dropped: Annotated[list[dict[str, Any]], operator.add]
    linked: list[str]
    gist_memory: Annotated[TripleList, merge_memory]
    answerable: bool
    reason: str | None
    answer: str | None
    citations: list[Citation]
    stop_reason: str | None
    ranked: RankedList
    passages: list[dict[str, Any]]
    tokens: Annotated[UsageDict, merge_usage]
