"""Registers the LLM retrievers ``syncge``, ``syncge+ppr`` and ``gear`` with the retriever registry.

Importing this module is what makes them available to ``make_retriever``.
"""

from __future__ import annotations

from typing import Any

from gear_agent.evaluation.runner import Outcome
from gear_agent.llm.client import LLMClient
from gear_agent.retrieval.base import RankedPassage, Retriever
from gear_agent.retrieval.registry import register
from gear_agent.runtime import Runtime


class GearRetriever(Retriever):
    """``gear``: the whole agent as a retriever; ``arun`` also gives answer, tokens, iterations.

    Example:
        >>> gear = GearRetriever(runtime, LLMClient.from_settings(settings))  # doctest: +SKIP
        >>> outcome = asyncio.run(gear.arun("Who is the spouse of the Green performer?", 15))  # doctest: +SKIP
    """

    name = "gear"

    def __init__(self, runtime: Runtime, llm: LLMClient) -> None:
        from gear_agent.agent.graph import build_graph

        self.runtime = runtime
        self.agent = build_graph(runtime, llm, runtime.settings).compile(name="gear")

    @staticmethod
    def _ranked(result: dict[str, Any]) -> list[RankedPassage]:
        return [RankedPassage(p["id"], p["score"]) for p in result["passages"]]

    def retrieve(self, query: str, k: int) -> list[RankedPassage]:
        return self._ranked(self.agent.invoke({"question": query, "top_k": k}))

    async def arun(self, question: str, k: int) -> Outcome:
        """One question for ``gear eval``: passages, answer, tokens and iterations."""
        result = await self.agent.ainvoke({"question": question, "top_k": k})
        tokens = result.get("tokens") or {}
        return Outcome(
            [p.id for p in self._ranked(result)],
            answer=result.get("answer"),
            input_tokens=int(tokens.get("input", 0)),
            output_tokens=int(tokens.get("output", 0)),
            iterations=result.get("iterations"),
        )


def _syncge(runtime: Runtime) -> Retriever:
    from gear_agent.agent.syncge import SyncGERetriever

    return SyncGERetriever(runtime, LLMClient.from_settings(runtime.settings))


def _syncge_ppr(runtime: Runtime) -> Retriever:
    from gear_agent.agent.syncge import SyncGERetriever

    settings = runtime.settings.model_copy(update={"expansion": "both"})
    both = Runtime(settings, runtime.embedder, runtime.store, runtime.encode)
    return SyncGERetriever(both, LLMClient.from_settings(settings), name="syncge+ppr")


def _gear(runtime: Runtime) -> Retriever:
    return GearRetriever(runtime, LLMClient.from_settings(runtime.settings))


register("syncge", _syncge)
register("syncge+ppr", _syncge_ppr)
register("gear", _gear)
