"""A scripted model for the demo question over ``examples/demo/``, keyed by prompt kind.

The first read finds the founder of the Kestrel Observatory, a read with memory finds his
spouse, the reasoner says answerable once the spouse is in the memory, the rewriter asks
for the spouse of Oskar Brenner, and QA answers "Ilse Brenner" citing the passage that
says so (by its number in the prompt), plus one passage the prompt never showed (which
the agent must drop). :func:`demo_endpoint_reply` serves the same replies from a
:class:`~support.fault_server.FaultServer`, so a real ``ChatOpenAI`` (``gear ask``,
``langgraph dev``) talks to it over loopback.
"""

from __future__ import annotations

import json
import re

from support.fault_server import Behaviour, RecordedRequest, ok

QUESTION = "Who was the spouse of the founder of the Kestrel Observatory?"
ANSWER = "Ilse Brenner"
FOUNDER = ["Kestrel Observatory", "founded by", "Oskar Brenner"]
SPOUSE = ["Oskar Brenner", "spouse", "Ilse Brenner"]
QUOTE = "He was married to the painter Ilse Brenner"
UNSHOWN = 42
"""A passage number the QA prompt never shows: its citation is dropped."""


def demo_reply(prompt: str) -> str:
    """The scripted reply to one prompt (the prompts' first words tell the kinds apart)."""
    if prompt.startswith("You read"):
        with_memory = "Earlier steps have already collected" in prompt
        return json.dumps({"triples": [SPOUSE if with_memory else FOUNDER]})
    if prompt.startswith("You decide"):
        done = ANSWER in prompt.split("Facts", 1)[-1]  # answerable once the memory has it
        return json.dumps({"answerable": done, "answer": ANSWER if done else None,
                           "reason": None if done else "the spouse of Oskar Brenner"})
    if prompt.startswith("You answer"):
        number = _number_of(prompt, "Oskar Brenner")
        citations = [{"passage": number, "quote": QUOTE}] if number else []
        return json.dumps({"answer": ANSWER, "citations": [*citations, {"passage": UNSHOWN}]})
    return "spouse of Oskar Brenner"


def demo_endpoint_reply(request: RecordedRequest) -> Behaviour:
    """:func:`demo_reply` of the request's last message, as a fault-server behaviour."""
    messages = request.messages
    prompt = str(messages[-1].get("content", "")) if messages else ""
    text = demo_reply(prompt)
    return ok(text, prompt_tokens=len(prompt) // 4, completion_tokens=len(text) // 4 + 1)


def _number_of(prompt: str, title: str) -> int | None:
    """The number ``[n]`` the prompt gave the passage titled ``title``."""
    match = re.search(rf"^\[(\d+)\] {re.escape(title)}$", prompt, re.M)
    return int(match.group(1)) if match else None
