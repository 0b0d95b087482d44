"""What a prompt may be (text, messages, a prompt value) and how text comes out of a reply."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, convert_to_messages
from langchain_core.prompt_values import PromptValue

PromptInput = str | PromptValue | Sequence[Any]
"""A plain string (sent as one user message), a LangChain prompt value, or a sequence of
messages in any form :func:`langchain_core.messages.convert_to_messages` accepts."""


def to_messages(prompt: PromptInput) -> list[BaseMessage]:
    """Turn any accepted prompt form into a list of LangChain messages.

    Args:
        prompt: A string, a ``PromptValue`` or a sequence of messages / ``(role, text)`` pairs.

    Returns:
        The messages, in order.

    Raises:
        TypeError: ``prompt`` is of none of these forms, or is empty.

    Example:
        >>> to_messages("Who wrote Hamlet?")[0].content
        'Who wrote Hamlet?'
    """
    if isinstance(prompt, str):
        messages: list[BaseMessage] = [HumanMessage(content=prompt)]
    elif isinstance(prompt, PromptValue):
        messages = prompt.to_messages()
    elif isinstance(prompt, Sequence):
        messages = convert_to_messages(prompt)
    else:
        raise TypeError(
            f"cannot send a {type(prompt).__name__} to a chat model: pass a string, "
            "a PromptValue or a list of messages"
        )
    if not messages:
        raise TypeError("cannot send an empty list of messages to a chat model")
    return messages


def content_text(content: Any) -> str:
    """The text of a message's ``content``: a string, or the text blocks of a block list.

    Example:
        >>> content_text([{"type": "text", "text": "Paris"}, {"type": "image_url"}])
        'Paris'
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and block.get("type") == "text":
                text = block.get("text")
                if isinstance(text, str):
                    parts.append(text)
        return "".join(parts)
    return str(content)
