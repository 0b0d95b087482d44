"""The one error the parsers raise on model output they cannot read."""

from __future__ import annotations

from gear_agent.errors import GearError


class ParseError(GearError, ValueError):
    """Model output could not be parsed into the shape asked for.

    Attributes:
        text: The start of the offending text (at most 300 characters), for logs.
    """

    def __init__(self, message: str, text: str = "") -> None:
        self.text = text[:300]
        if text:
            snippet = text[:120].replace("\n", " ")
            more = "..." if len(text) > 120 else ""
            message = f"{message} (reply starts: {snippet!r}{more})"
        super().__init__(message)
