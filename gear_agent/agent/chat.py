"""Chat input: the question of a ``{"messages": [...]}`` run and the turns before it.

Studio's chat and Agent Chat UI send the conversation as ``messages``; the last human
message is the question, and the earlier turns are shown to the rewriter and the QA prompt
as context (a follow-up such as "And where was she born?" needs them). A run given a
plain ``question`` adds it to ``messages`` as a human message, so a thread reads as one
conversation either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage

from gear_agent.llm.messages import content_text

HISTORY_MESSAGES = 6
"""Earlier messages shown to the rewriter and the QA prompt, most recent last."""

HISTORY_CHARS = 600
"""Longest text of one earlier message shown; longer ones are cut with an ellipsis."""

_ROLES = {"human": "User", "ai": "Assistant"}


def question_of(
    question: Any, messages: Sequence[BaseMessage]
) -> tuple[Any, list[list[str]], list[BaseMessage]]:
    """``(question, history, messages to add)`` of a run.

    A trailing human message is this run's question (every finished run ends its thread
    with the answer, so a trailing human message is new); otherwise ``question`` is, and
    it joins the chat as a human message. The question is returned unchecked: the caller
    checks it (empty, too long).

    Args:
        question: The ``question`` input, or None.
        messages: The run's ``messages`` (earlier turns of a thread included).

    Example:
        >>> from langchain_core.messages import AIMessage
        >>> chat = [HumanMessage("Who founded Kestrel?"), AIMessage("Oskar Brenner"),
        ...         HumanMessage("Whom did he marry?")]
        >>> q, history, new = question_of(None, chat)
        >>> q, history, new
        ('Whom did he marry?', [['human', 'Who founded Kestrel?'], ['ai', 'Oskar Brenner']], [])
    """
    if messages and messages[-1].type == "human":
        return content_text(messages[-1].content), history_of(messages[:-1]), []
    added = [HumanMessage(content=question.strip())] if isinstance(question, str) and question.strip() else []
    return question, history_of(messages), added


def history_of(messages: Sequence[BaseMessage]) -> list[list[str]]:
    """The last :data:`HISTORY_MESSAGES` human and AI turns as ``[role, text]``, cut to size."""
    turns: list[list[str]] = []
    for message in messages:
        if message.type not in _ROLES:
            continue  # system, tool and function messages are not conversation
        text = " ".join(content_text(message.content).split())
        if text:
            turns.append([message.type, _cut(text)])
    return turns[-HISTORY_MESSAGES:]


def render_conversation(history: Sequence[Sequence[str]]) -> str:
    """The ``{conversation}`` block of the rewriter and QA prompts: empty without history,
    so a plain question's prompts are exactly as they were.

    Example:
        >>> render_conversation([])
        ''
        >>> print(render_conversation([["human", "Who founded Kestrel?"], ["ai", "Oskar Brenner"]]))
        <BLANKLINE>
        Earlier in this conversation (the question may refer to it):
        User: Who founded Kestrel?
        Assistant: Oskar Brenner
        <BLANKLINE>
    """
    if not history:
        return ""
    lines = [f"{_ROLES.get(role, role)}: {text}" for role, text in history]
    return "\nEarlier in this conversation (the question may refer to it):\n" + "\n".join(lines) + "\n"


def _cut(text: str) -> str:
    if len(text) <= HISTORY_CHARS:
        return text
    return text[:HISTORY_CHARS].rsplit(" ", 1)[0] + " ..."
