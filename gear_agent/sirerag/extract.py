"""SiReRAG's propositions with the LLM: each passage → propositions, each with its entities.

One call per passage (prompt ``sirerag_propositions``) through the cached
:class:`~gear_agent.llm.client.LLMClient`, so recorded replies replay the whole build. A
passage whose call fails, or whose reply cannot be read, is recorded and left for the next
run; only errors that would fail every call (bad key, unknown model) stop the run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gear_agent.llm.client import LLMClient
from gear_agent.llm.errors import LLMCallError
from gear_agent.llm.response_format import ReplySchema
from gear_agent.llm.retry import is_fatal
from gear_agent.parsing.errors import ParseError
from gear_agent.parsing.json_reply import extract_json
from gear_agent.prompts import Prompt
from gear_agent.sirerag.propositions import Proposition, entity_keys
from gear_agent.types import Passage

MAX_PROPOSITIONS = 32
"""Most propositions a constrained reply may hold (a grammar with no cap lets a small model
repeat itself until the token cap cuts the JSON short)."""

PROPOSITIONS_REPLY = ReplySchema(
    "propositions",
    {
        "type": "object",
        "properties": {
            "propositions": {
                "type": "array",
                "maxItems": MAX_PROPOSITIONS,
                "items": {
                    "type": "object",
                    "properties": {
                        "text": {"type": "string", "minLength": 1},
                        "entities": {"type": "array", "items": {"type": "string"}, "maxItems": 8},
                    },
                    "required": ["text", "entities"],
                },
            }
        },
        "required": ["propositions"],
        "additionalProperties": False,
    },
)
"""The reply: ``{"propositions": [{"text": str, "entities": [str, ...]}, ...]}``."""


def parse_propositions(text: str, passage_id: str) -> tuple[list[Proposition], int]:
    """Propositions from a reply, and how many malformed items were dropped.

    Items may be objects (``text``/``proposition`` and ``entities``) or plain strings (no
    entities). Replies cut off at the token cap keep their complete items.

    Raises:
        ParseError: The reply holds no ``propositions`` list.

    Example:
        >>> parse_propositions('{"propositions": [{"text": "A met B.", "entities": ["A", "B"]}, 3]}', "p1")
        ([Proposition(text='A met B.', entities=('a', 'b'), passage_id='p1')], 1)
    """
    value = extract_json(text, want=(dict, list), repair_truncated=True)
    items = value.get("propositions") if isinstance(value, dict) else value
    if not isinstance(items, list):
        raise ParseError("the reply has no 'propositions' list", text)
    found: list[Proposition] = []
    dropped = 0
    seen: set[str] = set()
    for item in items:
        body, names = _item(item)
        if body is None:
            dropped += 1
            continue
        if body not in seen:
            seen.add(body)
            found.append(Proposition(body, entity_keys(names), passage_id))
    return found, dropped


def _item(item: Any) -> tuple[str | None, list[str]]:
    if isinstance(item, str):
        return (item.strip() or None), []
    if not isinstance(item, dict):
        return None, []
    body = item.get("text", item.get("proposition"))
    names = item.get("entities", [])
    if not isinstance(body, str) or not body.strip():
        return None, []
    if not isinstance(names, list):
        names = []
    return body.strip(), [n for n in names if isinstance(n, str)]


@dataclass
class ExtractionOutcome:
    """Propositions per passage for the passages that succeeded, and the rest.

    Attributes:
        propositions: passage id → its propositions, for the passages read.
        failures: passage id → why it failed (left for the next run).
        dropped: Malformed items left out of good replies.
        input_tokens: Prompt tokens billed (cached replies count 0).
        output_tokens: Completion tokens billed.
        cached: Replies served from the cache.
    """

    propositions: dict[str, list[Proposition]] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    dropped: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached: int = 0


async def extract_propositions(
    passages: Sequence[Passage], llm: LLMClient, prompt: Prompt, concurrency: int = 4
) -> ExtractionOutcome:
    """Ask the LLM for every passage's propositions, ``concurrency`` calls at a time.

    Raises:
        LLMCallError: A fatal error (bad key, unknown model): every call would fail.
    """
    outcome = ExtractionOutcome()
    semaphore = asyncio.Semaphore(concurrency)

    async def one(passage: Passage) -> None:
        async with semaphore:
            try:
                reply = await llm.ainvoke(prompt.format(title=passage.title, passage=passage.text),
                                          node="sirerag_propositions", schema=PROPOSITIONS_REPLY)
            except LLMCallError as exc:
                if is_fatal(exc.__cause__ or exc):
                    raise
                outcome.failures[passage.id] = str(exc)[:200]
                return
        outcome.input_tokens += reply.input_tokens
        outcome.output_tokens += reply.output_tokens
        outcome.cached += int(reply.cached)
        try:
            found, dropped = parse_propositions(reply.text, passage.id)
        except ParseError as exc:
            outcome.failures[passage.id] = str(exc)[:200]
            return
        outcome.propositions[passage.id] = found
        outcome.dropped += dropped

    await asyncio.gather(*(one(p) for p in passages))
    return outcome
