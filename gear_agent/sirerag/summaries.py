"""Cluster summaries with the LLM (prompt ``sirerag_summary``), RAPTOR's abstractive step."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from gear_agent.llm.client import LLMClient
from gear_agent.prompts import Prompt

CHILD_MAX_CHARS = 1500
"""Each member's text is cut to this many characters in the prompt (a large aggregate
would otherwise crowd out the rest of its cluster)."""


def summary_prompt(prompt: Prompt, texts: Sequence[str], max_words: int) -> str:
    """The filled summary prompt: the members as numbered blocks.

    Example:
        >>> from gear_agent.prompts import load_prompt
        >>> "[2] B" in summary_prompt(load_prompt("sirerag_summary"), ["A", "B"], 50)
        True
    """
    blocks = []
    for number, text in enumerate(texts, start=1):
        body = text.strip()
        if len(body) > CHILD_MAX_CHARS:
            body = body[:CHILD_MAX_CHARS].rsplit(" ", 1)[0] + " ..."
        blocks.append(f"[{number}] {body}")
    return prompt.format(texts="\n\n".join(blocks), max_words=max_words)


@dataclass
class SummaryCalls:
    """Token totals of a batch of summary calls."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached: int = 0


async def summarise(
    clusters: Sequence[Sequence[str]], llm: LLMClient, prompt: Prompt, max_words: int,
    concurrency: int, calls: SummaryCalls,
) -> list[str]:
    """One summary per cluster of texts, in order, ``concurrency`` calls at a time.

    A failed call raises :class:`~gear_agent.llm.errors.LLMCallError` (after the client's
    retries): a tree with a missing summary would be a different tree, so the build stops
    and the next run resumes from the levels already stored (with ``GEAR_LLM_CACHE_DIR`` set,
    replies already received are not paid for twice).
    """
    semaphore = asyncio.Semaphore(concurrency)

    async def one(texts: Sequence[str]) -> str:
        async with semaphore:
            reply = await llm.ainvoke(summary_prompt(prompt, texts, max_words), node="sirerag_summary")
        calls.input_tokens += reply.input_tokens
        calls.output_tokens += reply.output_tokens
        calls.cached += int(reply.cached)
        return " ".join(reply.text.split())

    return list(await asyncio.gather(*(one(c) for c in clusters)))
