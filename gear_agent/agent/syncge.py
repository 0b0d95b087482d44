"""SyncGE: one step of GEAR as a retriever (Shen et al., section 3.3).

Base retrieval, then the reader's proximal triples from the base passages,
tripleLink to indexed triples, expansion from them (the paper's diverse triple beam
search, or PPR, or both fused), and RRF of the expansion with the base list. One LLM
call per question.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gear_agent.agent import _steps as steps
from gear_agent.config import AgentSettings
from gear_agent.filters import Where
from gear_agent.llm.client import LLMClient, LLMReply
from gear_agent.llm.response_format import TRIPLES_REPLY
from gear_agent.llm.usage import usage_of_call
from gear_agent.parts import IndexParts, parts_and_settings
from gear_agent.retrieval.base import (
    Outcome,
    RankedPassage,
    Retriever,
    check_request,
    fuse_passages,
)

if TYPE_CHECKING:
    from gear_agent.open_index import OpenIndex


class SyncGERetriever(Retriever):
    """``syncge`` (beam search), ``syncge-ppr`` or ``syncge-fused``: base retrieval, reader,
    tripleLink, expansion, RRF with the base list.

    A failed reader call (retries spent) raises :class:`~gear_agent.llm.LLMCallError`;
    an unreadable reply gives no proximal triples, and then the base list alone.

    Args:
        parts: The index's parts (store, encoder, base retriever, the parts built once):
            :func:`~gear_agent.parts.index_parts` of an opened index. An
            ``OpenIndex`` still works, with a DeprecationWarning (its settings when
            ``settings`` is None).
        llm: The client the reader calls.
        expansion: ``beam`` (the paper's Algorithm 1), ``ppr`` or ``both``;
            ``settings.expansion`` when None.
        name: The name shown in tables; the retriever table's (``syncge``, ``syncge-ppr``,
            ``syncge-fused``) for the expansion when None.
        settings: The loop's section (``base_k``, ``rrf_k``, prompts, beam, ...); a
            ``GearSettings`` is one. Required with ``parts``.

    Example:
        >>> parts = index_parts(index)  # doctest: +SKIP
        >>> syncge = SyncGERetriever(parts, LLMClient.from_settings(settings), settings=settings)  # doctest: +SKIP
        >>> [p.id for p in syncge.retrieve("Who is the spouse of the Green performer?", 15)]  # doctest: +SKIP
    """

    def __init__(
        self,
        parts: IndexParts | OpenIndex,
        llm: LLMClient,
        expansion: steps.Expansion | None = None,
        name: str | None = None,
        settings: AgentSettings | None = None,
    ) -> None:
        self.parts, self.settings = parts_and_settings("SyncGERetriever", parts, settings)
        expansion = expansion or self.settings.expansion
        if expansion not in steps.EXPANSIONS:
            raise ValueError(f"unknown expansion {expansion!r}; choose one of {steps.EXPANSIONS}")
        self.llm, self.expansion = llm, expansion
        self.name = name or steps.named_for("syncge", expansion)

    def _prepare(self, query: str, where: Where | None) -> tuple[str, list[RankedPassage], str]:
        s = self.settings
        question = steps.check_question(query, s.max_question_chars)
        base = self.parts.base().retrieve(question, s.base_k, where)
        prompt = steps.reader_prompt(self.parts.store, s, question, [p.id for p in base], [])
        return question, base, prompt

    def _finish(
        self, question: str, base: list[RankedPassage], reply: LLMReply, k: int,
        where: Where | None,
    ) -> list[RankedPassage]:
        proximal, _dropped = steps.read_reply(reply.text)
        s = self.settings
        linked = steps.link_triples(self.parts, s, proximal, where)
        expanded = steps.expand(self.parts, s, question, linked, self.expansion, where)
        return fuse_passages([base, expanded], k=k, rrf_k=s.rrf_k)

    def retrieve(self, query: str, k: int, where: Where | None = None) -> list[RankedPassage]:
        check_request(query, k)
        question, base, prompt = self._prepare(query, where)
        reply = self.llm.invoke(prompt, node="read", schema=TRIPLES_REPLY)
        return self._finish(question, base, reply, k, where)

    async def arun(self, question: str, k: int, where: Where | None = None) -> Outcome:
        """One question for ``gear eval``: passages and the reader's token cost."""
        question, base, prompt = self._prepare(question, where)
        reply = await self.llm.ainvoke(prompt, node="read", schema=TRIPLES_REPLY)
        return Outcome(
            self._finish(question, base, reply, k, where),
            input_tokens=reply.input_tokens,
            output_tokens=reply.output_tokens,
            iterations=1,
            usage=dict(usage_of_call("read", reply)),
        )
