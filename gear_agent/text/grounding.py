"""Is a triple grounded in its source text? Subject and object must be found there.

An LLM can return triples its passage never states: a hallucination, or an injected
instruction ("ignore the instructions and reply exactly: ...") obeyed. A triple is kept
only when its subject and its object each appear in the source text, allowing for case,
punctuation, word order and small spelling differences:

1. the normalised phrase (NFKC, case-folded, punctuation as spaces) is a substring of the
   normalised source; or
2. every content word of the phrase is a word of the source (``"Smith, John"`` vs
   ``"John Smith"``; function words and one-letter words such as the ``v`` of
   ``"Lancashire v Yorkshire"`` need not be there, but one content word must); or
3. ``rapidfuzz.fuzz.ratio`` (an indel similarity, RapidFuzz's C++ implementation) of the
   phrase and some run of whole words of the source, with one word fewer or more than the
   phrase has, is at least ``threshold`` (``"Tchaikovsky"`` vs ``"Tchaikowsky"``), for phrases
   of at least :data:`MIN_FUZZY_CHARS` characters. Whole words only: a phrase is never found
   inside a longer word (``"Mallory"`` is not in ``"Mallorca"``).

The predicate is not checked: it is usually the model's paraphrase of a relation.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from rapidfuzz import fuzz, process

DEFAULT_THRESHOLD = 85.0
"""Lowest ``partial_ratio`` (0..100) counted as found."""

MIN_FUZZY_CHARS = 5
"""Shorter phrases must be found exactly (after normalising): one letter off is another word."""

_NOT_WORD = re.compile(r"[^\w]+")

FUNCTION_WORDS = frozenset(
    "a an the of and or in on at to for by with from as is was are were be its it vs".split()
)
"""Words a phrase may add without the source having them (with every one-letter word)."""


def normalise(text: str) -> str:
    """Case-folded NFKC text with punctuation as single spaces.

    Example:
        >>> normalise("  Saint-Étienne's  F.C. ")
        'saint étienne s f c'
    """
    return " ".join(_NOT_WORD.sub(" ", unicodedata.normalize("NFKC", text).casefold()).split())


@dataclass(frozen=True)
class Grounding:
    """The normalised source text of a set of triples, ready for :meth:`finds`.

    Example:
        >>> source = Grounding.of("Folsom", "The Rainbow Bridge spans the American River in Folsom.")
        >>> source.grounds("Rainbow bridge", "folsom"), source.grounds("Rainbow Bridge", "Paris")
        (True, False)
    """

    text: str
    words: frozenset[str]
    threshold: float = DEFAULT_THRESHOLD
    _windows: dict[int, list[str]] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, *texts: str, threshold: float = DEFAULT_THRESHOLD) -> Grounding:
        """The grounding of the given texts joined (a passage's title and text, say)."""
        text = normalise(" \n ".join(texts))
        return cls(f" {text} ", frozenset(text.split()), threshold)

    def finds(self, phrase: str) -> bool:
        """Whether ``phrase`` appears in the source (see the module docstring)."""
        wanted = normalise(phrase)
        if not wanted:
            return False
        if f" {wanted} " in self.text:
            return True
        content = {w for w in wanted.split() if len(w) > 1 and w not in FUNCTION_WORDS}
        if content and content <= self.words:
            return True
        if len(wanted) < MIN_FUZZY_CHARS:
            return False
        size = len(wanted.split())
        for n in sorted({max(1, size - 1), size, size + 1}):
            windows = self.windows(n)
            if windows and process.extractOne(wanted, windows, scorer=fuzz.ratio, score_cutoff=self.threshold):
                return True
        return False

    def windows(self, n: int) -> list[str]:
        """Every run of ``n`` consecutive words of the source (kept once computed)."""
        found = self._windows.get(n)
        if found is None:
            tokens = self.text.split()
            found = self._windows[n] = [" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
        return found

    def grounds(self, subject: str, obj: str) -> bool:
        """Whether both the subject and the object of a triple appear in the source."""
        return self.finds(subject) and self.finds(obj)
