"""Read a one-line reply (an answer, a search query): labels, quotes and fences removed."""

from __future__ import annotations

import re

from gear_agent.parsing.errors import ParseError

_FENCE = re.compile(r"```[A-Za-z0-9_+-]*")
_STRIP = " \t\"'`*\u201c\u201d"


def parse_short_reply(text: str, *, label: str = "answer") -> str:
    """The short reply in ``text``.

    Takes the text after the last ``<label>:`` (case-insensitive) when there is one,
    else the first non-empty line; strips quotes, markdown emphasis and a final period
    after a single word or number.

    Args:
        text: The model's reply.
        label: The label the prompt asks for (``"answer"`` for qa, ``"query"`` for rewriter).

    Returns:
        The reply, on one line.

    Raises:
        ParseError: Nothing is left.

    Example:
        >>> parse_short_reply("Thought: ...\\nAnswer: **Paris**.")
        'Paris'
    """
    if not isinstance(text, str):
        raise ParseError(f"expected the reply as text, got {type(text).__name__}")
    body = _FENCE.sub("", text)
    matches = list(re.finditer(rf"(?im)\b{re.escape(label)}\**\s*:\**", body))
    if matches:
        body = body[matches[-1].end() :]
    lines = [line.strip() for line in body.splitlines() if line.strip()]
    if not lines:
        raise ParseError(f"the reply holds no {label}", text)
    result = lines[0].strip(_STRIP)
    if result.endswith(".") and " " not in result and result.count(".") == 1:
        result = result[:-1].strip(_STRIP)
    if not result:
        raise ParseError(f"the reply holds no {label}", text)
    return result
