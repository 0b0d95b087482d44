"""Splitting long texts into passages: word windows that end at sentence breaks."""

from __future__ import annotations

import re

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n\s*\n")


def chunk_text(text: str, max_words: int = 200, overlap_words: int = 30) -> list[str]:
    """Split ``text`` into chunks of at most ``max_words`` words, breaking between sentences.

    Sentences are packed greedily; consecutive chunks share up to ``overlap_words``
    words of whole trailing sentences, so a fact on a boundary is seen whole once.
    A single sentence longer than ``max_words`` is cut into word windows.

    Example:
        >>> chunk_text("One two. Three four. Five six.", max_words=4, overlap_words=0)
        ['One two. Three four.', 'Five six.']
    """
    if overlap_words >= max_words:
        raise ValueError(f"overlap_words ({overlap_words}) must be below max_words ({max_words})")
    sentences: list[list[str]] = []
    for sentence in _SENTENCE_END.split(text):
        words = sentence.split()
        for start in range(0, len(words), max_words):
            sentences.append(words[start : start + max_words])
    chunks: list[str] = []
    current: list[list[str]] = []
    size = 0
    for sentence in sentences:
        if current and size + len(sentence) > max_words:
            chunks.append(" ".join(" ".join(s) for s in current))
            kept: list[list[str]] = []
            kept_size = 0
            for previous in reversed(current):
                if kept_size + len(previous) > overlap_words:
                    break
                kept.insert(0, previous)
                kept_size += len(previous)
            if kept_size + len(sentence) > max_words:
                kept, kept_size = [], 0
            current, size = kept, kept_size
        current.append(sentence)
        size += len(sentence)
    if current:
        chunks.append(" ".join(" ".join(s) for s in current))
    return chunks
