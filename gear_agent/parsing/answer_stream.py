"""The answer's words while a QA reply is still arriving, token by token.

The QA prompt asks for ``{"answer": "...", "citations": [...]}``; a person watching the
reply arrive wants the answer's words, not the JSON around them. :class:`AnswerTextStream`
is fed the reply's pieces in order and returns, for each, the characters of the answer
that piece completed: the decoded value of the ``"answer"`` key (escapes resolved), or the
reply itself when it does not start as JSON (a model that answers in plain words). What it
streams is a preview: the answer of record is the one
:func:`~gear_agent.agent.citations.read_cited_answer` reads from the whole reply.
"""

from __future__ import annotations

import json
import re

_KEY = re.compile(r'"answer"\s*:\s*"')
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class AnswerTextStream:
    """Feeds on a QA reply piece by piece; returns the answer text each piece adds.

    Example:
        >>> stream = AnswerTextStream()
        >>> [stream.feed(p) for p in ['{"ans', 'wer": "Ilse', ' Bren', 'ner", "citations": []}']]
        ['', 'Ilse', ' Bren', 'ner']
        >>> plain = AnswerTextStream()
        >>> plain.feed("Ilse ") + plain.feed("Brenner")
        'Ilse Brenner'
    """

    def __init__(self) -> None:
        self._buffer = ""
        self._mode: str | None = None  # None: undecided; "json", "plain", "done"
        self._at = 0  # next unread character of the answer's value, in _buffer
        self.text = ""
        """Everything streamed so far."""

    def feed(self, piece: str) -> str:
        """The answer characters that ``piece`` completes ('' while they are not known)."""
        self._buffer += piece
        if self._mode is None:
            self._mode = self._decide()
        if self._mode == "plain":
            new = piece if self.text else self._buffer.lstrip()
        elif self._mode == "json":
            new = self._json_value()
        else:
            new = ""
        self.text += new
        return new

    def _decide(self) -> str | None:
        start = self._buffer.lstrip()
        if not start:
            return None
        if start[0] in "{`" or start.startswith(("json", "JSON")):
            return "json"
        if len(start) < 8 and "```".startswith(start[:3]):
            return None
        return "plain"

    def _json_value(self) -> str:
        if self._at == 0:
            match = _KEY.search(self._buffer)
            if match is None:
                return ""
            self._at = match.end()
        out = []
        buffer, i = self._buffer, self._at
        while i < len(buffer):
            char = buffer[i]
            if char == '"':
                self._mode = "done"
                i += 1
                break
            if char != "\\":
                out.append(char)
                i += 1
                continue
            if i + 1 >= len(buffer):
                break  # the escape's second half has not come yet
            code = buffer[i + 1]
            if code == "u":
                if i + 6 > len(buffer):
                    break
                out.append(_unicode(buffer[i : i + 6]))
                i += 6
            else:
                out.append(_ESCAPES.get(code, code))
                i += 2
        self._at = i
        return "".join(out)


def _unicode(escape: str) -> str:
    try:
        return json.loads(f'"{escape}"')
    except ValueError:
        return ""
