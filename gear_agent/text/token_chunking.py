"""Chunks an encoder reads whole: measured in the embedding model's own tokens, stable under edits.

A chunk (its title included, as :attr:`~gear_agent.types.Passage.content` is embedded) holds
at most the tokens the encoder reads (``max_seq_length`` less its special tokens), so no
chunk's end is silently dropped by the encoder. Where the embedder has no tokenizer (an
endpoint, the stand-in ``hashing-*`` embedders of tests) the same rules count words instead
(``chunk_words``).

Chunks follow the text's paragraphs so an edit moves as few chunks as possible (sync by
source re-embeds only what changed): a paragraph of at least half the budget is a chunk of
its own, shorter ones are joined to the paragraphs after them until the chunk holds half the
budget; a paragraph longer than the budget is cut between sentences into windows that share
``overlap`` tokens (a sentence longer than the budget is cut between tokens). A chunk
boundary after any long paragraph is therefore the same before and after an edit elsewhere.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

_PARAGRAPH = re.compile(r"\n\s*\n")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


class TokenCounter(Protocol):
    """What a chunker needs of a tokenizer: its budget and where each token lies.

    Attributes:
        name: What counts (a model name, or ``"words"``), for reports.
        max_tokens: Tokens of text the encoder reads (its maximum sequence length less the
            special tokens it adds).
    """

    name: str
    max_tokens: int

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Character ``(start, end)`` of each token of ``text``, special tokens left out."""
        ...


@dataclass(frozen=True)
class WordCounter:
    """Words as tokens (whitespace-separated): the fallback where the embedder has no
    tokenizer.

    Example:
        >>> WordCounter(3).spans("a bb  c")
        [(0, 1), (2, 4), (6, 7)]
    """

    max_tokens: int
    name: str = "words"

    def spans(self, text: str) -> list[tuple[int, int]]:
        return [m.span() for m in re.finditer(r"\S+", text)]


@dataclass(frozen=True)
class Chunker:
    """Splits texts into chunks of at most ``counter.max_tokens`` tokens, title included.

    Attributes:
        counter: How tokens are counted (the encoder's tokenizer, or :class:`WordCounter`).
        overlap: Tokens shared by consecutive windows of one long paragraph.

    Example:
        >>> chunker = Chunker(WordCounter(7), overlap=0)
        >>> chunker.chunks("One two. Three four.\\n\\nFive six seven eight nine ten.", title="T")
        ['One two. Three four.', 'Five six seven eight nine ten.']
    """

    counter: TokenCounter
    overlap: int = 0

    def __post_init__(self) -> None:
        if self.counter.max_tokens < 2:
            raise ValueError(f"a chunk must hold at least 2 tokens, got {self.counter.max_tokens}")
        if not 0 <= self.overlap < self.counter.max_tokens // 2:
            raise ValueError(f"overlap ({self.overlap}) must be below half the chunk size "
                             f"({self.counter.max_tokens})")

    def size(self, text: str) -> int:
        """Tokens of ``text``."""
        return len(self.counter.spans(text))

    def budget(self, title: str) -> int:
        """Tokens left for the text of a chunk with this ``title`` (``title\\n`` is embedded
        before it); at least a quarter of the whole, however long the title."""
        used = self.size(title) if title else 0
        return max(self.counter.max_tokens // 4, self.counter.max_tokens - used)

    def fits(self, text: str, title: str = "") -> bool:
        """Whether the encoder reads ``title`` and ``text`` whole."""
        return (self.size(title) if title else 0) + self.size(text) <= self.counter.max_tokens

    def chunks(self, text: str, title: str = "") -> list[str]:
        """The chunks of ``text`` (see the module docstring); empty for blank text."""
        budget = self.budget(title)
        overlap = min(self.overlap, budget // 4)
        units: list[tuple[str, int]] = []
        for paragraph in _PARAGRAPH.split(text):
            paragraph = " ".join(paragraph.split())
            if not paragraph:
                continue
            size = self.size(paragraph)
            if size <= budget:
                units.append((paragraph, size))
            else:
                units.extend((w, budget) for w in self._windows(paragraph, budget, overlap))
        return _join(units, budget)

    def _windows(self, paragraph: str, budget: int, overlap: int) -> list[str]:
        """A long paragraph cut into windows of at most ``budget`` tokens, between sentences
        where it can, consecutive windows sharing about ``overlap`` tokens."""
        pieces: list[tuple[str, int]] = []
        for sentence in _SENTENCE.split(paragraph):
            spans = self.counter.spans(sentence)
            if len(spans) <= budget:
                pieces.append((sentence, len(spans)))
                continue
            step = budget - overlap
            for start in range(0, len(spans), step):
                window = spans[start : start + budget]
                pieces.append((sentence[window[0][0] : window[-1][1]], len(window)))
                if start + budget >= len(spans):
                    break
        windows: list[str] = []
        current: list[tuple[str, int]] = []
        size = 0
        for piece, tokens in pieces:
            if current and size + tokens > budget:
                windows.append(" ".join(p for p, _ in current))
                kept: list[tuple[str, int]] = []
                for previous in reversed(current):
                    if sum(t for _, t in kept) + previous[1] > overlap:
                        break
                    kept.insert(0, previous)
                size = sum(t for _, t in kept)
                current = kept if size + tokens <= budget else []
                size = size if current else 0
            current.append((piece, tokens))
            size += tokens
        if current:
            windows.append(" ".join(p for p, _ in current))
        return windows


def _join(units: Sequence[tuple[str, int]], budget: int) -> list[str]:
    """Paragraph units joined into chunks: a chunk closes once it holds half the budget, or
    before a unit that would take it past the budget."""
    chunks: list[str] = []
    current: list[str] = []
    size = 0
    for text, tokens in units:
        if current and size + tokens > budget:
            chunks.append("\n\n".join(current))
            current, size = [], 0
        current.append(text)
        size += tokens
        if size >= budget // 2:
            chunks.append("\n\n".join(current))
            current, size = [], 0
    if current:
        chunks.append("\n\n".join(current))
    return chunks
