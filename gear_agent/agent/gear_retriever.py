"""The whole GEAR agent as a retriever: ``gear`` (beam search), ``gear-ppr``, ``gear-fused``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gear_agent.agent import _steps as steps
from gear_agent.config import AgentSettings
from gear_agent.filters import Where
from gear_agent.llm.client import LLMClient
from gear_agent.parts import IndexParts, parts_and_settings
from gear_agent.retrieval.base import Outcome, RankedPassage, Retriever, check_request

if TYPE_CHECKING:
    from gear_agent.open_index import OpenIndex


OUTCOME_KEYS = ["ranked", "answer", "tokens", "iterations"]
"""The agent's state keys an :class:`Outcome` is made of (the final ranking as triple ids,
not the output's passage records)."""


class GearRetriever(Retriever):
    """The agent's final ranking as a retriever; ``arun`` also gives answer, tokens, iterations.

    Every passage keeps the chain of triples that reached it.

    Args:
        parts: The index's parts: :func:`~gear_agent.parts.index_parts` of an opened
            index. An ``OpenIndex`` still works, with a DeprecationWarning (its settings
            when ``settings`` is None).
        llm: The client every LLM node calls.
        expansion: ``beam`` (the paper's), ``ppr`` or ``both``; ``settings.expansion``
            when None.
        name: The name shown in tables; the retriever table's (``gear``, ``gear-ppr``,
            ``gear-fused``) for the expansion when None.
        base: The agent's base retriever (``gear-sirerag``: SiReRAG's pool); the configured
            base mode when None.
        settings: The loop's settings section (a ``GearSettings`` is one). Required with
            ``parts``.

    Example:
        >>> parts = index_parts(index)  # doctest: +SKIP
        >>> gear = GearRetriever(parts, LLMClient.from_settings(settings), settings=settings)  # doctest: +SKIP
        >>> outcome = asyncio.run(gear.arun("Who is the spouse of the Green performer?", 15))  # doctest: +SKIP
    """

    def __init__(
        self,
        parts: IndexParts | OpenIndex,
        llm: LLMClient,
        expansion: steps.Expansion | None = None,
        name: str | None = None,
        base: Retriever | None = None,
        *,
        settings: AgentSettings | None = None,
    ) -> None:
        from gear_agent.agent.graph import build_graph
        parts, settings = parts_and_settings("GearRetriever", parts, settings)
        expansion = expansion or settings.expansion
        self.parts, self.expansion = parts, expansion
        self.name = name or steps.named_for("gear", expansion)
        graph = build_graph(parts, llm, settings, expansion=expansion, base=base)
        self.agent = graph.compile(name="gear")

    def retrieve(self, query: str, k: int, where: Where | None = None) -> list[RankedPassage]:
        check_request(query, k)
        result = self.agent.invoke(_input(query, k, where), output_keys=["ranked"])
        return [RankedPassage.from_dict(p) for p in result["ranked"]]

    async def arun(self, question: str, k: int, where: Where | None = None) -> Outcome:
        """One question for ``gear eval``: passages, answer, tokens and iterations."""
        result: dict[str, Any] = await self.agent.ainvoke(_input(question, k, where), output_keys=OUTCOME_KEYS)
        tokens = result.get("tokens") or {}
        return Outcome(
            [RankedPassage.from_dict(p) for p in result["ranked"]],
            answer=result.get("answer"),
            input_tokens=int(tokens.get("input", 0)),
            output_tokens=int(tokens.get("output", 0)),
            iterations=result.get("iterations"),
            usage=tokens or None,
        )


def _input(question: str, k: int, where: Where | None) -> dict[str, Any]:
    """The agent's input for one question (the filter in its JSON form)."""
    given: dict[str, Any] = {"question": question, "top_k": k}
    if where is not None:
        given["where"] = where.to_dict()
    return given
