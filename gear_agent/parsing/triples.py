"""Read (subject, predicate, object) triples out of a model reply, whatever its format.

Understood: JSON (``[["s", "p", "o"], ...]``, ``{"triples": [...]}``, items as lists or
as ``{subject, predicate, object}`` / ``{head, relation, tail}`` dicts), quoted or bare
tuples ``("s", "p", "o")`` / ``(s, p, o)``, numbered or bulleted lines, pipe-separated
lines and markdown tables ``s | p | o``, arrows ``s -> p -> o``, code fences and prose
around any of these. Replies cut off at the token cap keep their complete triples.

Items that look like a triple but are not one (two or four parts, an empty part, a
part that is not text) are left out and listed in ``dropped``, never guessed at.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from gear_agent.parsing.errors import ParseError
from gear_agent.parsing.json_reply import extract_json

Triple3 = tuple[str, str, str]

TRIPLE_LIST_KEYS = (
    "triples",
    "extracted_triples",
    "proximal_triples",
    "relations",
    "relationships",
    "facts",
    "fact",
)
"""Keys under which a JSON object may hold its list of triples (matched case-insensitively)."""

TRIPLE_DICT_KEYS = (
    ("subject", "predicate", "object"),
    ("subject", "relation", "object"),
    ("head", "relation", "tail"),
    ("head", "predicate", "tail"),
    ("source", "relation", "target"),
    ("s", "p", "o"),
)
"""Key triples a dict item may use for its three parts."""

MAX_FAILED_GROUPS = 256
"""Unclosed brackets tolerated before the text scan stops (bounds the work)."""

_HEADERS = {
    ("subject", "predicate", "object"),
    ("subject", "relation", "object"),
    ("head", "relation", "tail"),
    ("head", "predicate", "tail"),
    ("entity 1", "relation", "entity 2"),
    ("s", "p", "o"),
}
_QUOTES = {'"': '"', "'": "'", "\u201c": "\u201d", "\u2018": "\u2019", "`": "`"}
_CLOSING_QUOTES = set(_QUOTES.values())
_OPENING_QUOTE = {close: open_ for open_, close in _QUOTES.items()}
_OPEN = {"(": ")", "[": "]", "{": "}"}
_CLOSE = {")", "]", "}"}
_BULLET = re.compile(
    r"^\s*(?:[-*\u2022+>]|\d+\s*[.):]|#+|(?:triple|fact)\s*#?\d*\s*[:.)-])\s*", re.I
)
_TABLE_RULE = re.compile(r"^:?-{2,}:?$")
_ARROW = re.compile(r"\s*(?:->|\u2192|=>)\s*")
_SPACES = re.compile(r"\s+")
_NUMERIC = re.compile(r"\s*[-+]?[\d.,]*\d[\d.,]*\s*")


@dataclass(frozen=True)
class ParsedTriples:
    """Triples read from a reply, and the items that were left out.

    Attributes:
        triples: Distinct triples in reply order; every part a non-empty stripped string.
        dropped: Text of each malformed item (wrong number of parts, empty part, ...).
    """

    triples: list[Triple3] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)


def _unwrap(text: str, lone: bool = True) -> str:
    """Remove wrapping quotes and emphasis, and (``lone``) a lone unmatched quote at either end."""
    while True:
        before = text
        text = text.strip().strip("*").strip()
        if len(text) >= 2 and text[0] in _QUOTES and text[-1] == _QUOTES[text[0]]:
            text = text[1:-1]
        elif not lone:
            pass
        elif text and text[0] in _QUOTES and _QUOTES[text[0]] not in text[1:]:
            text = text[1:]
        elif text and text[-1] in _CLOSING_QUOTES and _OPENING_QUOTE[text[-1]] not in text[:-1]:
            text = text[:-1]
        if text == before:
            return text


def clean_part(value: Any, *, unescape: bool = False) -> str | None:
    """One triple part as clean text, or None when it is empty or not a scalar.

    Strips whitespace, wrapping quotes and markdown emphasis, collapses inner
    whitespace, and with ``unescape`` (raw reply text, not decoded JSON) undoes
    backslash escapes of quotes and drops a lone quote at either end (the scan's
    leftover of a broken quoted item). A decoded JSON string keeps a lone quote: JSON
    delimited it already, so it is content (``'70s``, ``Lovin'``, ``6'0"``). Numbers
    become text (``1961`` -> ``"1961"``).

    Example:
        >>> clean_part(' "Barack  Obama" '), clean_part(1961), clean_part(None)
        ('Barack Obama', '1961', None)
        >>> clean_part("'70s"), clean_part("'70s", unescape=True)
        ("'70s", '70s')
    """
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        value = str(value)
    elif isinstance(value, float):
        value = str(int(value)) if value.is_integer() and abs(value) < 1e16 else str(value)
    if not isinstance(value, str):
        return None
    text = value
    if unescape:
        text = text.replace('\\"', '"').replace("\\'", "'").replace("\\\\", "\\")
    text = _SPACES.sub(" ", _unwrap(text, lone=unescape)).strip()
    return text or None


class _Collector:
    """Accumulates distinct triples and the dropped items."""

    def __init__(self) -> None:
        self.triples: list[Triple3] = []
        self.dropped: list[str] = []
        self._seen: set[Triple3] = set()

    def add(self, parts: list[Any], raw: str, *, unescape: bool = False) -> None:
        if len(parts) == 4 and isinstance(parts[0], str) and parts[0].strip().isdigit():
            parts = parts[1:]  # a numbered markdown table row: | 1 | s | p | o |
        cleaned = [clean_part(p, unescape=unescape) for p in parts]
        if len(cleaned) != 3 or any(p is None for p in cleaned):
            self.dropped.append(raw.strip()[:200])
            return
        triple: Triple3 = (cleaned[0], cleaned[1], cleaned[2])  # type: ignore[assignment]
        lowered = tuple(p.lower() for p in triple)
        if lowered in _HEADERS or all(p in {"...", "\u2026"} for p in triple):
            return  # a table header or a template placeholder, not a fact
        if triple not in self._seen:
            self._seen.add(triple)
            self.triples.append(triple)

    def result(self) -> ParsedTriples:
        return ParsedTriples(self.triples, self.dropped)


# ---- text scanning (tuples, bracket lists, pipes, arrows) -------------------------


def _at_value_start(text: str, index: int, low: int) -> bool:
    k = index - 1
    while k >= low and text[k] in " \t\r\n":
        k -= 1
    return k < low or text[k] in "([{,|:"


def _quote_end(text: str, index: int) -> int:
    """Index of the quote closing the one at ``index``, or -1 (then it was an apostrophe)."""
    close = _QUOTES[text[index]]
    j = index + 1
    while j < len(text):
        char = text[j]
        if char == "\\":
            j += 2
            continue
        if char == close:
            k = j + 1
            while k < len(text) and text[k] in " \t":
                k += 1
            if k >= len(text) or text[k] in ",)]}|:\r\n":
                return j
        j += 1
    return -1


def _group_end(text: str, start: int) -> int:
    """Index of the bracket closing the one at ``start``, or -1 if it is never closed."""
    stack = [_OPEN[text[start]]]
    j = start + 1
    while j < len(text):
        char = text[j]
        if char in _QUOTES and _at_value_start(text, j, start + 1):
            end = _quote_end(text, j)
            if end >= 0:
                j = end + 1
                continue
        elif char in _OPEN:
            stack.append(_OPEN[char])
        elif char in _CLOSE:
            if char != stack[-1]:
                return -1
            stack.pop()
            if not stack:
                return j
        j += 1
    return -1


def _split_top(content: str, separator: str) -> list[str]:
    """Split ``content`` at ``separator`` outside quotes and brackets."""
    parts: list[str] = []
    depth = 0
    last = 0
    j = 0
    while j < len(content):
        char = content[j]
        if char in _QUOTES and _at_value_start(content, j, 0):
            end = _quote_end(content, j)
            if end >= 0:
                j = end + 1
                continue
        elif char in _OPEN:
            depth += 1
        elif char in _CLOSE:
            depth = max(0, depth - 1)
        elif char == separator and depth == 0:
            parts.append(content[last:j])
            last = j + 1
        j += 1
    parts.append(content[last:])
    return [p.strip() for p in parts]


def _is_group(part: str) -> bool:
    return len(part) >= 2 and part[0] in "([" and _group_end(part, 0) == len(part) - 1


def _add_group(content: str, into: _Collector, depth: int = 0) -> None:
    """A bracketed group: a triple, a list of groups, or prose (ignored)."""
    parts = _split_top(content, ",")
    if len(parts) == 1 and "|" in parts[0] and not _is_group(parts[0]):
        parts = _split_top(parts[0], "|")
    nested = [p for p in parts if _is_group(p)]
    if nested:
        if depth < 32:
            for part in nested:
                _add_group(part[1:-1], into, depth + 1)
        return
    if len(parts) >= 2 and not all(_NUMERIC.fullmatch(p) for p in parts):
        into.add(parts, content, unescape=True)  # all-number groups are citations, not facts


def _add_line(line: str, into: _Collector) -> None:
    """A line without brackets: ``s | p | o`` (table rows too) or ``s -> p -> o``."""
    body = _BULLET.sub("", line, count=1).strip()
    if "|" in body:
        parts = [p.strip() for p in body.split("|")]
        if parts and parts[0] == "":
            parts = parts[1:]
        if parts and parts[-1] == "":
            parts = parts[:-1]
        if parts and all(_TABLE_RULE.match(p) for p in parts):
            return
        into.add(parts, body, unescape=True)
    elif len(_ARROW.findall(body)) == 2:
        into.add(_ARROW.split(body), body, unescape=True)


def _scan_text(text: str, into: _Collector) -> None:
    """Every bracketed group in ``text``, then the lines outside any group."""
    covered: list[tuple[int, int]] = []
    failures = 0
    pos = 0
    while failures < MAX_FAILED_GROUPS:
        starts = [i for i in (text.find("(", pos), text.find("[", pos)) if i >= 0]
        if not starts:
            break
        start = min(starts)
        end = _group_end(text, start)
        if end < 0:
            failures += 1
            pos = start + 1
            continue
        _add_group(text[start + 1 : end], into)
        covered.append((start, end))
        pos = end + 1
    offset = 0
    index = 0  # groups are found left to right, so ``covered`` is sorted
    for line in text.splitlines(keepends=True):
        line_end = offset + len(line)
        while index < len(covered) and covered[index][1] < offset:
            index += 1
        if not (index < len(covered) and covered[index][0] < line_end):
            _add_line(line, into)
        offset = line_end


# ---- JSON items ------------------------------------------------------------------


def _lookup(mapping: dict[Any, Any], keys: Iterable[str]) -> Any:
    lowered = {str(k).strip().lower(): v for k, v in mapping.items()}
    for key in keys:
        if key in lowered:
            return lowered[key]
    return None


def _dict_parts(item: dict[Any, Any]) -> list[Any] | None:
    lowered = {str(k).strip().lower(): v for k, v in item.items()}
    for names in TRIPLE_DICT_KEYS:
        if all(name in lowered for name in names):
            return [lowered[name] for name in names]
    return None


def _add_item(item: Any, into: _Collector) -> None:
    if isinstance(item, (list, tuple)):
        into.add(list(item), repr(item))
    elif isinstance(item, dict):
        parts = _dict_parts(item)
        if parts is None:
            into.dropped.append(repr(item)[:200])
        else:
            into.add(parts, repr(item))
    elif isinstance(item, str):
        before = (len(into.triples), len(into.dropped))
        _scan_text(item, into)
        if (len(into.triples), len(into.dropped)) == before:
            into.dropped.append(item.strip()[:200])
    else:
        into.dropped.append(repr(item)[:200])


def triples_from_items(items: Iterable[Any]) -> ParsedTriples:
    """Triples from already-decoded JSON items (lists, dicts or strings).

    Example:
        >>> triples_from_items([["Paris", "capital of", "France"], {"head": "x"}]).dropped
        ["{'head': 'x'}"]
    """
    into = _Collector()
    for item in items:
        _add_item(item, into)
    return into.result()


def _json_items(value: Any) -> list[Any] | None:
    """The triple items of a decoded JSON value, or None if it holds no triples."""
    if isinstance(value, dict):
        found = _lookup(value, TRIPLE_LIST_KEYS)
        if isinstance(found, list):
            return found
        return [value] if _dict_parts(value) is not None else None
    if isinstance(value, list) and value:
        if any(isinstance(v, (list, tuple, dict)) for v in value):
            return value  # a list of items; those that are not triples are dropped
        if all(isinstance(v, str) for v in value) and len(value) != 3:
            return value  # e.g. ["(a, b, c)", "d | e | f"]
    return None  # a flat list of three strings is read by the text scan, with any others


def parse_triples(text: str) -> ParsedTriples:
    """Triples in a model reply, in any of the formats listed in the module docstring.

    Never raises on odd text: a reply without triples gives an empty result.

    Args:
        text: The model's reply.

    Returns:
        Distinct triples in order, and the malformed items that were dropped.

    Example:
        >>> parse_triples('1. ("Paris", "capital of", "France")\\n2. (Paris, in)').triples
        [('Paris', 'capital of', 'France')]
    """
    if not isinstance(text, str):
        return ParsedTriples([], [f"not text: {type(text).__name__}"])
    try:
        value = extract_json(text, want=(dict, list), repair_truncated=True)
    except ParseError:
        value = None
    items = _json_items(value)
    if items is not None:
        return triples_from_items(items)
    into = _Collector()
    _scan_text(text, into)
    return into.result()
