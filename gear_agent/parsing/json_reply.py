"""Find the JSON value in a model reply: code fences, prose around it, and common slips.

Models wrap JSON in code fences and sentences, leave trailing commas, use single
quotes or Python's ``True``/``None``, and get cut off at the token cap. The reply is
first tried as strict JSON, then every ``{``/``[`` in it is tried with the standard
decoder and then with a small lenient parser of our own (no ``eval``). The longest
value wins; with ``repair_truncated=True`` a value cut off at the end of the reply
counts too, closed after its last complete item.
"""

from __future__ import annotations

import json
import re
from typing import Any

from gear_agent.parsing.errors import ParseError

MAX_FAILED_STARTS = 64
"""Positions tried without success before the search gives up (bounds the work)."""

MAX_DEPTH = 64
"""Deepest nesting the lenient parser follows."""

_FENCE = re.compile(r"```[ \t]*[A-Za-z0-9_+-]*[ \t]*\r?\n?(.*?)(?:```|\Z)", re.S)
_NUMBER = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_BARE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")
_LITERALS = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}
_QUOTE_CLOSE = {'"': '"', "'": "'"}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "/": "/", "\\": "\\"}
_CLOSERS = {"[": "]", "(": ")"}


class _Fail(Exception):
    """Not a value here."""


class _Truncated(Exception):
    """The text ended inside a value; ``partial`` holds what was complete (or None)."""

    def __init__(self, partial: Any) -> None:
        self.partial = partial


class _Lenient:
    """A forgiving JSON reader: single quotes, bare keys, trailing commas, Python literals."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def parse(self, start: int) -> tuple[Any, int]:
        self.pos = start
        return self._value(0), self.pos

    def _skip(self) -> None:
        text, pos = self.text, self.pos
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
        self.pos = pos
        if pos >= len(text):
            raise _Truncated(None)

    def _value(self, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise _Fail
        self._skip()
        char = self.text[self.pos]
        if char == "{":
            return self._object(depth)
        if char in _CLOSERS:
            return self._array(depth, _CLOSERS[char])
        if char in _QUOTE_CLOSE:
            return self._string()
        match = _NUMBER.match(self.text, self.pos)
        if match:
            self.pos = match.end()
            if self.pos >= len(self.text):
                raise _Truncated(None)  # a number cut off is not trusted
            literal = match.group()
            try:
                return int(literal) if re.fullmatch(r"-?\d+", literal) else float(literal)
            except ValueError as exc:
                raise _Fail from exc
        match = _BARE_KEY.match(self.text, self.pos)
        if match and match.group() in _LITERALS:
            self.pos = match.end()
            return _LITERALS[match.group()]
        if match and match.end() >= len(self.text):
            raise _Truncated(None)
        raise _Fail

    def _string(self) -> str:
        text = self.text
        quote = text[self.pos]
        out: list[str] = []
        pos = self.pos + 1
        while pos < len(text):
            char = text[pos]
            if char == "\\" and pos + 1 < len(text):
                nxt = text[pos + 1]
                if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[pos + 2 : pos + 6]):
                    out.append(chr(int(text[pos + 2 : pos + 6], 16)))
                    pos += 6
                    continue
                out.append(_ESCAPES.get(nxt, nxt))
                pos += 2
                continue
            if char == quote:
                after = pos + 1
                while after < len(text) and text[after] in " \t":
                    after += 1
                # A quote closes the string only where JSON structure may follow;
                # otherwise it is an apostrophe or quotation inside the text.
                if after >= len(text) or text[after] in ",:]})\r\n":
                    self.pos = pos + 1
                    return "".join(out)
            out.append(char)
            pos += 1
        raise _Truncated(None)

    def _key(self) -> str:
        self._skip()
        char = self.text[self.pos]
        if char in _QUOTE_CLOSE:
            return self._string()
        match = _BARE_KEY.match(self.text, self.pos)
        if not match:
            raise _Fail
        if match.end() >= len(self.text):
            raise _Truncated(None)
        self.pos = match.end()
        return match.group()

    def _object(self, depth: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        self.pos += 1
        while True:
            try:
                self._skip()
            except _Truncated:
                raise _Truncated(result) from None
            if self.text[self.pos] == "}":
                self.pos += 1
                return result
            try:
                key = self._key()
                self._skip()
            except _Truncated:
                raise _Truncated(result) from None
            if self.text[self.pos] != ":":
                raise _Fail
            self.pos += 1
            try:
                result[key] = self._value(depth + 1)
                self._skip()
            except _Truncated as cut:
                if isinstance(cut.partial, (dict, list)):
                    result[key] = cut.partial
                raise _Truncated(result) from None
            char = self.text[self.pos]
            if char == ",":
                self.pos += 1
            elif char != "}":
                raise _Fail

    def _array(self, depth: int, closer: str) -> list[Any]:
        result: list[Any] = []
        self.pos += 1
        while True:
            try:
                self._skip()
            except _Truncated:
                raise _Truncated(result) from None
            if self.text[self.pos] == closer:
                self.pos += 1
                return result
            try:
                result.append(self._value(depth + 1))
                self._skip()
            except _Truncated as cut:
                if isinstance(cut.partial, (dict, list)):
                    result.append(cut.partial)
                raise _Truncated(result) from None
            char = self.text[self.pos]
            if char == ",":
                self.pos += 1
            elif char != closer:
                raise _Fail


def _wanted(value: Any, want: type | tuple[type, ...] | None) -> bool:
    return want is None or isinstance(value, want)


def _candidates(
    text: str, repair_truncated: bool, want: type | tuple[type, ...] | None
) -> list[tuple[bool, int, Any]]:
    """Every wanted JSON value in ``text`` as ``(complete, length, value)``.

    After a value of an unwanted type the search goes on inside it, so a wanted
    object nested in a list is still found.
    """
    found: list[tuple[bool, int, Any]] = []
    stripped = text.strip()
    try:
        value = json.loads(stripped)
    except (ValueError, RecursionError):
        pass
    else:
        if _wanted(value, want):
            return [(True, len(stripped), value)]
    decoder = json.JSONDecoder()
    lenient = _Lenient(text)
    failures = 0
    pos = 0
    while failures < MAX_FAILED_STARTS:
        starts = [i for i in (text.find("{", pos), text.find("[", pos)) if i >= 0]
        if not starts:
            break
        start = min(starts)
        parsed: tuple[Any, int] | None = None
        try:
            parsed = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            try:
                parsed = lenient.parse(start)
            except _Truncated as cut:
                # an empty cut-off value says nothing
                if repair_truncated and cut.partial and _wanted(cut.partial, want):
                    found.append((False, len(text) - start, cut.partial))
            except (_Fail, RecursionError):
                pass
        if parsed is None:
            failures += 1
            pos = start + 1
        elif _wanted(parsed[0], want):
            found.append((True, parsed[1] - start, parsed[0]))
            pos = parsed[1]
        else:
            pos = start + 1
    return found


def extract_json(
    text: str,
    *,
    want: type | tuple[type, ...] | None = None,
    repair_truncated: bool = False,
) -> Any:
    """The JSON value in a model reply.

    Args:
        text: The reply.
        want: Accept only values of this type (e.g. ``dict``); others are skipped.
        repair_truncated: Also accept a value cut off at the end of the reply, closed
            after its last complete item (for long lists; never for single answers).

    Returns:
        The value: fenced blocks first, then the longest value in the text.

    Raises:
        ParseError: No (wanted) JSON value in the text.

    Example:
        >>> extract_json("Sure! ```json\\n{'answerable': True, 'answer': 'Paris',}\\n```")
        {'answerable': True, 'answer': 'Paris'}
    """
    if not isinstance(text, str):
        raise ParseError(f"expected the reply as text, got {type(text).__name__}")

    def best(source: str) -> tuple[bool, Any]:
        options = _candidates(source, repair_truncated, want)
        if not options:
            return False, None
        top = max(options, key=lambda c: (c[1], c[0]))  # longest, complete on a tie
        return True, top[2]

    for block in _FENCE.findall(text):
        ok, value = best(block)
        if ok:
            return value
    ok, value = best(text)
    if ok:
        return value
    raise ParseError(f"no JSON{_type_names(want)} value found in the model reply", text)


def _type_names(want: type | tuple[type, ...] | None) -> str:
    if want is None:
        return ""
    types = want if isinstance(want, tuple) else (want,)
    return " " + "/".join(t.__name__ for t in types)
