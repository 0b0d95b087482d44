"""The Ask page's run: the agent's steps as they happen, the answer as it is written, and
the result with cited quotes located in their passages and each passage's chain drawn.

:func:`ask_events` runs the agent (:func:`~gear_agent.agent.streaming.arun_events`) and
yields page events, each a ``(name, data)`` pair sent as one server-sent event:

* ``step``: a node finished: ``{"node", "iteration", "text"}`` (one line a person reads),
  plus ``memory`` (the whole gist memory, after ``link``) and ``verdict`` (after
  ``reason``: ``{"answerable", "answer", "reason"}``) and ``query`` (the query in use);
* ``token``: ``{"text"}``, a piece of the answer as the model writes it;
* ``result``: the answer, its citations (number, passage, quote) and the ranked passages,
  each with ``quote_spans`` (where its citations' quotes are in its text) and ``svg`` (its
  triple chain drawn by :mod:`gear_agent.serve._graph_svg`).

:func:`search_result` gives an LLM-free retriever's ranking in the same ``result`` shape.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from typing import Any

from gear_agent.agent.state import merge_memory
from gear_agent.agent.streaming import arun_events
from gear_agent.llm.usage import merge_usage
from gear_agent.retrieval.base import Retriever
from gear_agent.retrieval.filtering import checked_where
from gear_agent.retrieval.records import CitedPassage, PassageRecord, cite, passage_records
from gear_agent.serve._graph_svg import chain_svg
from gear_agent.store import Store

AGENT = "gear"
"""The Ask page's retriever choice that runs the agent (the others only rank passages)."""


def quote_spans(text: str, quote: str | None) -> list[int] | None:
    """``[start, end]`` of ``quote`` in ``text``, matching words case-insensitively across
    any spacing and punctuation (as citations are checked), or None when it is not there.

    Example:
        >>> text = "He was married to the painter Ilse Brenner."
        >>> quote_spans(text, "married to the painter ilse brenner")
        [7, 42]
    """
    words = re.findall(r"\w+", quote or "")
    if not words:
        return None
    pattern = r"\W+".join(re.escape(w) for w in words)
    match = re.search(pattern, text, re.IGNORECASE)
    return [match.start(), match.end()] if match else None


def _passages_out(records: Sequence[PassageRecord], cited: Sequence[CitedPassage]) -> list[dict[str, Any]]:
    marks: dict[str, list[CitedPassage]] = {}
    for citation in cited:
        marks.setdefault(citation.passage.id, []).append(citation)
    out = []
    for rank, record in enumerate(records, start=1):
        passage = record.to_dict()
        mine = marks.get(record.id, [])
        spans = [s for s in (quote_spans(record.text, c.quote) for c in mine) if s]
        out.append({
            "rank": rank, **{key: passage[key] for key in (
                "id", "title", "text", "score", "source", "metadata", "chain", "location", "chain_kind")},
            "cited": [c.number for c in mine], "quote_spans": spans,
            "svg": chain_svg(passage["chain"], record.id, record.title, kind=record.chain_kind),
        })
    return out


def result_of(state: dict[str, Any]) -> dict[str, Any]:
    """The ``result`` event of a finished run's output state."""
    records = [PassageRecord.from_dict(p) for p in state.get("passages") or []]
    cited = cite(state.get("citations") or [], records)
    tokens = state.get("tokens") or {}
    return {
        "answer": state.get("answer"),
        # where: source and page or section; the page links it to the passage among its
        # document's passages (Documents, filtered by its source)
        "citations": [{key: c.to_dict()[key] for key in ("number", "passage_id", "title", "quote",
                                                          "location", "source")} for c in cited],
        "passages": _passages_out(records, cited),
        "iterations": state.get("iterations"), "stop_reason": state.get("stop_reason"),
        "queries": list(state.get("queries") or []),
        "tokens": int(tokens.get("input", 0)) + int(tokens.get("output", 0)),
        "dropped": len(state.get("dropped") or []),
    }


class _Steps:
    """Follows a run's updates and says each step in one line."""

    def __init__(self) -> None:
        self.iteration = 1
        self.query = ""
        self.memory: list[list[str]] = []
        self.tokens: dict[str, Any] = {}

    def step(self, node: str, update: dict[str, Any]) -> dict[str, Any]:
        if "tokens" in update:
            self.tokens = merge_usage(self.tokens, update["tokens"])
        out: dict[str, Any] = {"node": node, "iteration": self.iteration}
        if node == "start":
            self.query = str(update.get("query", ""))
            out["text"] = f"question: {update.get('question', '')}"
        elif node == "retrieve":
            out["text"] = f"retrieved {len(update.get('base') or [])} passages for “{self.query}”"
        elif node == "read":
            out["text"] = f"read {len(update.get('proximal') or [])} triple(s) from them"
        elif node == "link":
            self.memory = merge_memory(self.memory, update.get("gist_memory") or [])
            out["text"] = f"linked to the graph; gist memory: {len(self.memory)} triple(s)"
            out["memory"] = self.memory
        elif node == "expand":
            ranked = (update.get("retrieved") or [[]])[-1]
            out["text"] = f"expanded over the graph: {len(ranked)} passages"
        elif node == "reason":
            verdict = {k: update.get(k) for k in ("answerable", "answer", "reason")}
            out["verdict"] = verdict
            out["text"] = (f"answerable: {verdict['answer']}" if verdict["answerable"]
                           else f"not yet answerable: missing {verdict['reason'] or 'more facts'}")
        elif node == "rewrite":
            self.iteration = int(update.get("iteration", self.iteration + 1))
            self.query = str(update.get("query", ""))
            out.update(iteration=self.iteration, text=f"next query: “{self.query}”")
        elif node == "finalize":
            out["text"] = f"ranked {len(update.get('passages') or [])} passages"
        elif node == "answer":
            out["text"] = "answered" if update.get("answer") else "no answer"
        else:
            out["text"] = node
        out["query"] = self.query
        out["tokens"] = int(self.tokens.get("input", 0)) + int(self.tokens.get("output", 0))
        return out


async def ask_events(agent: Any, inputs: dict[str, Any]) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """The page events of one agent run on ``inputs`` (see the module docstring)."""
    steps = _Steps()
    async for event in arun_events(agent, inputs):
        if event.kind == "update" and event.node is not None:
            yield "step", steps.step(event.node, event.data)
        elif event.kind == "token":
            yield "token", event.data
        elif event.kind == "final":
            yield "result", result_of(event.data)


def search_result(store: Store, retriever: Retriever, name: str, question: str, k: int,
                  where: Any) -> dict[str, Any]:
    """The top ``k`` of ``retriever`` (called ``name``) over ``store`` for ``question`` as a
    ``result`` event (no answer)."""
    checked = checked_where(store, where)
    ranked = retriever.retrieve(question, k, checked)
    return {"answer": None, "citations": [], "passages": _passages_out(passage_records(store, ranked), []),
            "iterations": 0, "stop_reason": None, "queries": [question], "tokens": 0, "dropped": 0,
            "retriever": name}
