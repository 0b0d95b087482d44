"""A reading view of the agent for the LangServe playground: the answer first, as text.

``/gear/playground/`` shows ``/gear/stream``'s node updates one JSON object after another,
so the answer is at the bottom of several screens of updates. ``/gear/ask/`` runs the same
agent on the same request, but streams text: one line naming each step as it finishes,
then the answer with its numbered citations (quote and triple chain of each cited
passage), then the ranked passages with their chains. Its playground,
``/gear/ask/playground/``, so shows the result on one screen.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from langchain_core.runnables import Runnable, RunnableGenerator, RunnableLambda
from langgraph.types import Overwrite

from gear_agent.config import AgentSettings
from gear_agent.llm.usage import merge_usage
from gear_agent.retrieval.records import PassageRecord, cite
from gear_agent.serve.schemas import GearRequest, request_model

ASK_PATH = "/gear/ask"
"""Where the reading view's routes (``invoke``, ``stream``, ``playground/``) live."""

PREVIEW_CHARS = 160
"""Characters of a ranked passage's text shown."""


def answer_runnable(agent: Runnable, settings: AgentSettings, callbacks: list[Any] | None = None) -> Runnable:
    """The agent behind the request check, streaming readable text instead of node updates.

    Args:
        agent: The compiled GEAR graph.
        settings: The agent's section; ``max_question_chars`` bounds the question.
        callbacks: Handlers attached to every run (a tracer).

    Example:
        >>> text = answer_runnable(agent, settings).invoke({"question": "Who founded Kestrel?"})  # doctest: +SKIP
        >>> print(text)  # doctest: +SKIP
        steps: start → retrieve → ... → answer
        <BLANKLINE>
        Oskar Brenner [1]
        ...
    """
    model = request_model(settings.max_question_chars)

    def to_state(request: dict[str, Any] | GearRequest) -> dict[str, Any]:
        data = request.model_dump() if isinstance(request, GearRequest) else request
        return model.model_validate(data).to_state()

    updates = agent.copy(update={"stream_mode": "updates"}) if hasattr(agent, "copy") else agent
    text = RunnableGenerator(_text_of, _atext_of, name="gear_answer_text")
    chain = (RunnableLambda(to_state, name="gear_request") | updates | text).with_types(
        input_type=model, output_type=str
    )
    config: dict[str, Any] = {"run_name": "gear_ask"}
    if callbacks:
        config["callbacks"] = callbacks
    return chain.with_config(config)


class _Collector:
    """Gathers the final fields from node updates and renders the text."""

    def __init__(self) -> None:
        self.state: dict[str, Any] = {}
        self.steps = 0

    def step(self, chunk: Any) -> str:
        if not isinstance(chunk, dict):
            return ""
        if not all(v is None or isinstance(v, dict) for v in chunk.values()):
            self.state.update(chunk)  # ``invoke`` gives the final values, not node updates
            return ""
        parts = []
        for node, update in chunk.items():
            if isinstance(update, dict):
                for key, value in update.items():
                    self._merge(key, value)
            parts.append(("steps: " if self.steps == 0 else " → ") + str(node))
            self.steps += 1
        return "".join(parts)

    def _merge(self, key: str, value: Any) -> None:
        if isinstance(value, Overwrite):  # the start node resets accumulating fields
            self.state[key] = value.value
        elif key == "tokens":  # updates carry each call's usage; the state sums them
            self.state[key] = merge_usage(self.state.get(key), value)
        else:
            self.state[key] = value

    def result(self) -> str:
        return ("\n\n" if self.steps else "") + render_result(self.state)


def _text_of(chunks: Iterator[Any]) -> Iterator[str]:
    collector = _Collector()
    for chunk in chunks:
        text = collector.step(chunk)
        if text:
            yield text
    yield collector.result()


async def _atext_of(chunks: AsyncIterator[Any]) -> AsyncIterator[str]:
    collector = _Collector()
    async for chunk in chunks:
        text = collector.step(chunk)
        if text:
            yield text
    yield collector.result()


def render_result(state: dict[str, Any]) -> str:
    """The agent's output as text: answer with ``[n]`` markers, its sources (where the
    passage is: source and page or section, quote, chain),
    the ranked passages (chains), and a line on iterations and tokens.

    Example:
        >>> print(render_result({"answer": "Paris", "citations": [{"passage_id": "p1",
        ...     "title": "Paris", "quote": "capital of France"}], "passages": [{"id": "p1",
        ...     "title": "Paris", "text": "Paris is the capital of France.", "score": 0.5,
        ...     "source": "atlas.pdf", "metadata": {"page": 3},
        ...     "chain": [["Paris", "capital of", "France"]]}], "iterations": 1,
        ...     "stop_reason": "answerable", "tokens": {"input": 90, "output": 10}}))
        Paris [1]
        <BLANKLINE>
        [1] atlas.pdf, p. 3 — Paris: "capital of France"
            ↳ (Paris; capital of; France)
        <BLANKLINE>
        Ranked passages:
        1. Paris  (score 0.5000)
           Paris is the capital of France.
           ↳ (Paris; capital of; France)
        <BLANKLINE>
        1 iteration(s), stopped: answerable · 100 tokens
    """
    records = [PassageRecord.from_dict(p) for p in state.get("passages") or []]
    cited = cite(state.get("citations") or [], records)
    answer = state.get("answer")
    marks = "".join(f"[{c.number}]" for c in cited)
    lines = [f"{answer} {marks}".rstrip() if answer is not None else "(no answer)"]
    for citation in cited:
        quote = f': "{citation.quote}"' if citation.quote else ""
        head = " — ".join(part for part in (citation.location, citation.passage.title) if part)
        lines += ["" if citation.number == 1 else None, f"[{citation.number}] {head}{quote}"]
        arrow = _arrow(citation.passage.chain_kind)
        lines += [f"    {arrow} ({'; '.join(t.as_tuple())})" for t in citation.passage.chain]
    lines = [line for line in lines if line is not None]
    if records:
        lines += ["", "Ranked passages:"]
        for rank, record in enumerate(records, start=1):
            text = " ".join(record.text.split())
            if len(text) > PREVIEW_CHARS:
                text = text[:PREVIEW_CHARS].rsplit(" ", 1)[0] + " …"
            lines.append(f"{rank}. {record.title}  (score {record.score:.4f})")
            lines.append(f"   {text}")
            lines += [f"   {_arrow(record.chain_kind)} ({'; '.join(t.as_tuple())})" for t in record.chain]
    tokens = state.get("tokens") or {}
    total = int(tokens.get("input", 0)) + int(tokens.get("output", 0))
    lines += ["", f"{state.get('iterations', 0)} iteration(s), stopped: {state.get('stop_reason')}"
              f" · {total:,} tokens"]
    return "\n".join(lines)


def _arrow(chain_kind: str) -> str:
    """``↳`` before a triple of the path that reached a passage; ``⇢ seed`` before a PPR
    seed triple whose mass reached it (``chain_kind="seeds"``)."""
    return "⇢ seed" if chain_kind == "seeds" else "↳"
