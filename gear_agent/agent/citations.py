"""Answers with citations: read the QA reply, keep only citations of passages it was shown.

The QA prompt numbers the passages it shows ``[1]`` .. ``[n]`` and asks for
``{"answer": ..., "citations": [{"passage": number, "quote": ...}]}``. The reply is read
leniently (JSON anywhere in the text, bare numbers, ``"[2]"``, a passage id, ``[2]``
markers in the answer itself, or a plain answer with no JSON at all), then every citation
is checked against the passages shown:

* a number outside ``1..n`` or an id that was not shown is dropped, and recorded;
* a quote that is not in the cited passage (compared case-, space- and
  punctuation-insensitively) is removed from the citation, and recorded;
* a passage cited twice is kept once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gear_agent.agent.state import Citation
from gear_agent.llm.response_format import ReplySchema
from gear_agent.parsing import ParseError, extract_json, parse_short_reply

MAX_CITATIONS = 10
"""Most citations kept from one reply (the QA prompt shows ``answer_top_k`` passages)."""

MAX_QUOTE_CHARS = 300
"""Longest quote kept; a longer one is cut at a word boundary with an ellipsis."""

CITED_ANSWER_REPLY = ReplySchema(
    "cited_answer",
    {
        "type": "object",
        "properties": {
            "answer": {"type": "string"},
            "citations": {
                "type": "array",
                "maxItems": MAX_CITATIONS,
                "items": {
                    "type": "object",
                    "properties": {
                        "passage": {"type": "integer", "minimum": 1},
                        "quote": {"type": "string"},
                    },
                    "required": ["passage"],
                    "additionalProperties": False,
                },
            },
        },
        "required": ["answer", "citations"],
        "additionalProperties": False,
    },
)
"""The QA prompt's reply: ``{"answer": str, "citations": [{"passage": int, "quote": str}]}``."""

_MARKER = re.compile(r"\s*\[(\d{1,3})\]")
_WORD = re.compile(r"\w+")
_PASSAGE_KEYS = ("passage", "number", "n", "id", "passage_id", "index", "source")
_QUOTE_KEYS = ("quote", "text", "evidence", "support")


@dataclass(frozen=True)
class CitedAnswer:
    """A QA reply read and checked.

    Attributes:
        answer: The short answer (None when the reply holds none).
        citations: The citations kept, in the order the reply gave them.
        dropped: What was left out and why: ``{"citation": raw, "error": why}`` dicts.
    """

    answer: str | None
    citations: list[Citation] = field(default_factory=list)
    dropped: list[dict[str, Any]] = field(default_factory=list)


def read_cited_answer(text: str, shown: Sequence[Mapping[str, Any]]) -> CitedAnswer:
    """The answer and checked citations in a QA reply.

    Args:
        text: The model's reply.
        shown: The passages the prompt showed, in prompt order (``[1]`` first): dicts
            with ``id``, ``title``, ``text`` and ``location`` (where the passage is).

    Returns:
        The answer with the citations of shown passages only; the rest in ``dropped``.

    Raises:
        ParseError: The reply holds no answer at all.

    Example:
        >>> shown = [{"id": "p1", "title": "Paris", "text": "Paris is the capital of France."}]
        >>> reply = '{"answer": "Paris", "citations": [{"passage": 1, "quote": "capital of France"},'
        >>> reply += ' {"passage": 4}]}'
        >>> cited = read_cited_answer(reply, shown)
        >>> cited.answer, cited.citations
        ('Paris', [{'passage_id': 'p1', 'title': 'Paris', 'quote': 'capital of France', 'location': ''}])
        >>> cited.dropped
        [{'citation': {'passage': 4}, 'error': 'passage 4 was not shown (the prompt showed 1..1)'}]
    """
    data = _reply_object(text)
    if data is None:
        answer, raw = parse_short_reply(text, label="answer"), []
    else:
        answer, raw = _answer_of(data, text), _raw_citations(data)
    answer, markers = _split_markers(answer)
    raw = raw + [m for m in markers if m not in raw]
    if not answer:
        raise ParseError("the reply holds no answer", text)
    citations, dropped = check_citations(raw, shown)
    return CitedAnswer(answer, citations, dropped)


def check_citations(
    raw: Sequence[Any], shown: Sequence[Mapping[str, Any]]
) -> tuple[list[Citation], list[dict[str, Any]]]:
    """Citations of shown passages only, each passage once; the rest with why.

    Each raw citation is a passage number (``2``, ``"2"``, ``"[2]"``), a shown passage's
    id, or a dict holding one of those (``passage``/``number``/``id``) and an optional
    ``quote``.

    Example:
        >>> shown = [{"id": "p1", "title": "A", "text": "Alpha beta."}]
        >>> check_citations([1, "p1", {"passage": 1, "quote": "gamma"}], shown)[0]
        [{'passage_id': 'p1', 'title': 'A', 'quote': None, 'location': ''}]
    """
    citations: list[Citation] = []
    dropped: list[dict[str, Any]] = []
    by_id = {str(p["id"]): i for i, p in enumerate(shown)}
    seen: dict[str, Citation] = {}
    for item in raw:
        index, quote, error = _locate(item, shown, by_id)
        if index is None:
            dropped.append({"citation": item, "error": error})
            continue
        passage = shown[index]
        if quote is not None and not quote_in(quote, str(passage.get("text", ""))):
            dropped.append({"citation": item, "error": f"quote not found in passage {index + 1}"})
            quote = None
        pid = str(passage["id"])
        if pid in seen:
            if seen[pid]["quote"] is None and quote is not None:
                seen[pid]["quote"] = quote
            continue
        if len(citations) >= MAX_CITATIONS:
            dropped.append({"citation": item, "error": f"more than {MAX_CITATIONS} citations"})
            continue
        citation = Citation(passage_id=pid, title=str(passage.get("title", "")), quote=quote,
                            location=str(passage.get("location") or ""))
        seen[pid] = citation
        citations.append(citation)
    return citations, dropped


def quote_in(quote: str, text: str) -> bool:
    """Whether ``quote`` is in ``text``, ignoring case, spacing and punctuation.

    Example:
        >>> quote_in("founded the  Kestrel observatory", "Oskar founded the Kestrel Observatory.")
        True
        >>> quote_in("founded in 1925", "It was founded in 1923.")
        False
    """
    words = _WORD.findall(quote.casefold())
    if not words:
        return False
    return f" {' '.join(words)} " in f" {' '.join(_WORD.findall(text.casefold()))} "


def render_citations(answer: str | None, citations: Sequence[Citation]) -> str:
    """The answer as a chat message: the answer with ``[n]`` markers, then its sources, each
    named by where it is (its ``location``: file and page or section, as ``gear ask``
    prints them) and its title.

    Example:
        >>> print(render_citations("Paris", [{"passage_id": "p1", "title": "Paris",
        ...                                   "quote": "capital of France", "location": "atlas.pdf, p. 3"}]))
        Paris [1]
        <BLANKLINE>
        Sources:
        [1] atlas.pdf, p. 3 — Paris: "capital of France"
    """
    if answer is None:
        return "I could not find an answer in the indexed passages."
    if not citations:
        return answer
    markers = "".join(f"[{n}]" for n in range(1, len(citations) + 1))
    lines = [f"{answer} {markers}", "", "Sources:"]
    for number, citation in enumerate(citations, start=1):
        quote = f': "{citation["quote"]}"' if citation.get("quote") else ""
        where = citation.get("location") or ""
        head = " — ".join(part for part in (where, citation["title"] or citation["passage_id"]) if part)
        lines.append(f"[{number}] {head}{quote}")
    return "\n".join(lines)


def _reply_object(text: str) -> dict[str, Any] | None:
    try:
        data = extract_json(text, want=dict)
    except ParseError:
        return None
    if not any(key in data for key in ("answer", "citations")):
        return None
    return data


def _answer_of(data: Mapping[str, Any], text: str) -> str:
    value = data.get("answer")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if isinstance(value, bool):
        value = "yes" if value else "no"
    if not isinstance(value, str) or not value.strip():
        raise ParseError("the reply's JSON holds no answer", text)
    return " ".join(value.split())


def _raw_citations(data: Mapping[str, Any]) -> list[Any]:
    value = data.get("citations", data.get("sources", []))
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _split_markers(answer: str) -> tuple[str, list[int]]:
    """The answer without ``[n]`` markers, and the numbers they named."""
    numbers = [int(m.group(1)) for m in _MARKER.finditer(answer)]
    return _MARKER.sub("", answer).strip(), numbers


def _locate(
    item: Any, shown: Sequence[Mapping[str, Any]], by_id: Mapping[str, int]
) -> tuple[int | None, str | None, str]:
    """``(index into shown, quote, why not)`` of one raw citation."""
    quote: str | None = None
    ref: Any = item
    if isinstance(item, Mapping):
        ref = next((item[k] for k in _PASSAGE_KEYS if item.get(k) is not None), None)
        raw_quote = next((item[k] for k in _QUOTE_KEYS if isinstance(item.get(k), str)), None)
        if raw_quote and raw_quote.strip():
            quote = _short(" ".join(raw_quote.strip().strip("\"'\u201c\u201d").split()))
    if isinstance(ref, str) and ref.strip() in by_id:
        return by_id[ref.strip()], quote, ""
    number = _number(ref)
    if number is None:
        return None, None, f"not a passage number or a shown passage id: {ref!r}"
    if not 1 <= number <= len(shown):
        return None, None, f"passage {number} was not shown (the prompt showed 1..{len(shown)})"
    return number - 1, quote, ""


def _number(ref: Any) -> int | None:
    if isinstance(ref, bool):
        return None
    if isinstance(ref, int):
        return ref
    if isinstance(ref, float) and ref.is_integer():
        return int(ref)
    if isinstance(ref, str):
        match = re.fullmatch(r"\s*\[?\s*(?:passage\s*)?(\d{1,3})\s*\]?\s*", ref, re.I)
        return int(match.group(1)) if match else None
    return None


def _short(quote: str) -> str:
    if len(quote) <= MAX_QUOTE_CHARS:
        return quote
    return quote[:MAX_QUOTE_CHARS].rsplit(" ", 1)[0] + " ..."
