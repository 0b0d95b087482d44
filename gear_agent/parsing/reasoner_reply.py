"""Read the reasoner's verdict: can the question be answered from the gist memory yet?

The prompt asks for ``{"answerable": true/false, "answer": ..., "reason": ...}``;
replies in prose (``Yes. Answer: Paris`` / ``No - the birth date is missing``) are
understood too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gear_agent.parsing.errors import ParseError
from gear_agent.parsing.json_reply import extract_json

ANSWERABLE_KEYS = ("answerable", "is_answerable", "can_answer", "sufficient", "enough")
ANSWER_KEYS = ("answer", "final_answer")
REASON_KEYS = ("reason", "missing", "explanation", "rationale", "what_is_missing")

_NO_ANSWER = {"", "none", "null", "n/a", "na", "unknown", "-", "not available", "not answerable"}
_TRUE = {"true", "yes", "y", "1", "answerable"}
_FALSE = {"false", "no", "n", "0", "not answerable", "unanswerable"}
_LABEL = r"(?im)^[\s*#>-]*\**{label}\**\s*[:=]\s*(.+)$"
_FIRST_WORD = re.compile(r"^[\s*#>\"'`-]*(yes|no|true|false)\b", re.I)
_ANSWERABLE_LINE = re.compile(r"(?i)answerable\**\s*[:=]\s*\**\s*(yes|no|true|false)\b")


@dataclass(frozen=True)
class ReasonerVerdict:
    """The reasoner's decision.

    Attributes:
        answerable: Whether the memory suffices to answer the question.
        answer: The answer when answerable, else None.
        reason: When not answerable, what is missing (else None or a short note).
    """

    answerable: bool
    answer: str | None
    reason: str | None


def _as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().strip(".!").lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
    return None


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (list, tuple)):
        value = ", ".join(str(v) for v in value if v is not None)
    text = str(value).strip().strip("\"'`*").strip()
    return None if text.lower().strip(".") in _NO_ANSWER else text


def _pick(mapping: dict[str, Any], keys: tuple[str, ...]) -> Any:
    lowered = {str(k).strip().lower(): v for k, v in mapping.items()}
    for key in keys:
        if key in lowered:
            return lowered[key]
    return None


def _verdict(answerable: bool, answer: str | None, reason: str | None) -> ReasonerVerdict:
    if answerable and answer is None:
        return ReasonerVerdict(
            False, None, reason or "the reasoner said answerable but gave no answer"
        )
    return ReasonerVerdict(answerable, answer if answerable else None, reason)


def _labelled(text: str, label: str) -> str | None:
    matches = re.findall(_LABEL.format(label=label), text)
    return _text(matches[-1]) if matches else None


def parse_reasoner_reply(text: str) -> ReasonerVerdict:
    """The verdict in a reply to the ``reasoner`` prompt.

    "Answerable" without an answer is read as not answerable (the loop goes on).
    In prose without an ``Answer:`` label, the rest of the first line after "Yes" is the answer.

    Args:
        text: The model's reply.

    Returns:
        The verdict.

    Raises:
        ParseError: The reply says neither yes nor no.

    Example:
        >>> parse_reasoner_reply('{"answerable": false, "reason": "birth year of X"}')
        ReasonerVerdict(answerable=False, answer=None, reason='birth year of X')
    """
    try:
        value = extract_json(text, want=dict)
    except ParseError:
        value = None
    if isinstance(value, dict):
        flag = _as_bool(_pick(value, ANSWERABLE_KEYS))
        if flag is not None:
            return _verdict(
                flag, _text(_pick(value, ANSWER_KEYS)), _text(_pick(value, REASON_KEYS))
            )
    if not isinstance(text, str):
        raise ParseError(f"expected the reply as text, got {type(text).__name__}")
    match = _ANSWERABLE_LINE.search(text) or _FIRST_WORD.match(text)
    if match is None:
        raise ParseError("the reasoner reply says neither yes nor no", text)
    flag = match.group(1).lower() in ("yes", "true")
    answer = _labelled(text, "answer")
    reason = _labelled(text, "reason") or _labelled(text, "missing")
    if answer is None and flag and match.re is _FIRST_WORD:
        rest = text[match.end() :].lstrip(" \t*,.:;-!").split("\n", 1)[0]
        answer = _text(rest)
    if reason is None and not flag:
        rest = text[match.end() :].lstrip(" \t*,.:;-!").strip()
        reason = _text(rest.split("\n", 1)[0]) if rest else None
    return _verdict(flag, answer, reason)
