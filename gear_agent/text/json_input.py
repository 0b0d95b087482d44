"""JSON from files and requests, read so that no input can raise anything but one error.

``json.loads`` raises ``RecursionError`` on arrays nested ~1,000 deep, a bare ``ValueError``
on integers past Python's 4,300-digit limit, and ``UnicodeDecodeError`` on bytes that are
not UTF-8; each would reach the user as a traceback. :func:`load_json` turns all of them
(and nesting deeper than :data:`MAX_DEPTH`, which later code would recurse into) into
:class:`JSONInputError` with a one-line message that names where the input came from.
"""

from __future__ import annotations

import json
import re
from typing import Any

from gear_agent.errors import GearError

MAX_DEPTH = 200
"""Deepest nesting of arrays and objects accepted (corpus records, OpenIE docs, traces and
request bodies are a handful of levels deep)."""


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class JSONInputError(GearError, ValueError):
    """Input that is not UTF-8 JSON, or nested too deep, or with a number too long to read."""


def depth_exceeds(text: str, limit: int = MAX_DEPTH) -> bool:
    """Whether brackets in ``text`` (outside strings) nest deeper than ``limit``: a linear
    scan, so it is safe to run before parsing.

    Example:
        >>> depth_exceeds("[[1]]", 1), depth_exceeds('["[[[["]', 1)
        (True, False)
    """
    depth = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > limit:
                return True
        elif char in "]}":
            depth -= 1
    return False


def load_json(data: str | bytes, where: str, *, max_depth: int = MAX_DEPTH) -> Any:
    """The JSON value of ``data`` (bytes must be UTF-8).

    Args:
        data: The text, or bytes decoded as UTF-8.
        where: What the input is, for the message (``"corpus.jsonl:12"``, ``"the request body"``).
        max_depth: Deepest nesting accepted.

    Raises:
        JSONInputError: Not UTF-8, not JSON, nested deeper than ``max_depth``, or a number
            Python cannot read; the message is one line and names ``where``.

    Example:
        >>> load_json(b'{"a": [1, 2]}', "x")
        {'a': [1, 2]}
        >>> load_json("[" * 5000, "x")  # doctest: +IGNORE_EXCEPTION_DETAIL
        Traceback (most recent call last):
        gear_agent.text.json_input.JSONInputError: x: JSON nested deeper than 200 levels
    """
    if isinstance(data, (bytes, bytearray)):
        try:
            data = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JSONInputError(
                f"{where} is not UTF-8 (bad byte 0x{data[exc.start]:02x} at offset {exc.start})"
            ) from None
    if data.startswith("\ufeff"):
        data = data[1:]
    if depth_exceeds(data, max_depth):
        raise JSONInputError(f"{where}: JSON nested deeper than {max_depth} levels")
    try:
        value = json.loads(data)
    except json.JSONDecodeError as exc:
        raise JSONInputError(f"{where} is not valid JSON: {exc.msg} (line {exc.lineno}, "
                             f"column {exc.colno})") from None
    except ValueError as exc:  # int() past sys.get_int_max_str_digits()
        if "digits" in str(exc):
            raise JSONInputError(f"{where}: a number in the JSON is longer than Python reads "
                                 "(4,300 digits)") from None
        raise JSONInputError(f"{where} cannot be read as JSON: {str(exc)[:160]}") from None
    except RecursionError:
        raise JSONInputError(f"{where}: JSON nested too deep to read") from None
    if _SURROGATE_ESCAPE.search(data):
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise JSONInputError(f"{where}: a \\u escape in the JSON is half a character "
                                 "(a lone surrogate), which is not text") from None
    return value
