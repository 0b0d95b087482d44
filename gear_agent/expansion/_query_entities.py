"""The graph's phrases that a query names, found without an LLM (a lexical NER).

HippoRAG 1 asks an LLM for the query's named entities and links each to its nearest
phrase node; ``ppr`` seeds from the query's nearest triples only. This finds the names a
query spells out, as a gazetteer tagger does, with the graph's phrase nodes as the
gazetteer:

1. **Spans**: runs of capitalised words or numbers in the query, joined across lower-case
   connectors (``of``, ``the``, ``de``, ...) between two of them ("Haymo of Faversham",
   "2003-04"); a lone capitalised first word is the sentence's, not a name ("Which").
2. **Longest match**: within each span, left to right, the longest run of words whose text
   (the query's own characters, punctuation included: "M. Ward", "L'Amour"), normalised as
   phrase nodes are, is a phrase node; a matched run is not matched again inside.

The phrases found get restart mass of their own in ``ppr``
(:func:`gear_agent.expansion.ppr.ppr_expand`, ``query_entity_weight``).
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["CONNECTORS", "capitalised_spans", "query_entity_vertices"]

CONNECTORS = frozenset({"of", "the", "and", "de", "la", "le", "du", "da", "del", "von", "van",
                        "der", "in", "for", "on", "&", "a"})
"""Lower-case words that may join two capitalised words inside one name."""

MAX_WORDS = 8
"""The longest phrase looked up, in words."""

_WORD = re.compile(r"\w+")


def _is_named(word: str) -> bool:
    return word[:1].isupper() or word[:1].isdigit()


def capitalised_spans(words: list[str]) -> list[tuple[int, int]]:
    """Word index ranges ``[start, end)`` of the capitalised runs in ``words``.

    Example:
        >>> words = "Who was the mother of Haymo of Faversham in 1240".split()
        >>> [" ".join(words[a:b]) for a, b in capitalised_spans(words)]
        ['Haymo of Faversham', '1240']
    """
    spans: list[tuple[int, int]] = []
    i, n = 0, len(words)
    while i < n:
        if not _is_named(words[i]):
            i += 1
            continue
        j = i + 1
        while j < n and (_is_named(words[j]) or (
                words[j].lower() in CONNECTORS and j + 1 < n and _is_named(words[j + 1]))):
            j += 1
        if not (i == 0 and j == 1):  # a lone capitalised first word starts the sentence
            spans.append((i, j))
        i = j
    return spans


def query_entity_vertices(query: str, vertex_of: Callable[[str], int | None]) -> list[int]:
    """The phrase vertices the query names, in the query's order, each once.

    Args:
        query: The query text.
        vertex_of: A phrase's vertex or None (:meth:`PPRGraph.phrase_vertex`, which
            normalises the text it is given).

    Example:
        >>> names = {"m. ward": 7, "transfiguration of vincent": 3}
        >>> query_entity_vertices("Is Transfiguration of Vincent by M. Ward?", names.get)
        [3, 7]
    """
    matches = list(_WORD.finditer(query))
    words = [m.group() for m in matches]
    found: list[int] = []
    for start, end in capitalised_spans(words):
        i = start
        while i < end:
            for size in range(min(MAX_WORDS, end - i), 0, -1):
                text = query[matches[i].start():matches[i + size - 1].end()]
                vertex = vertex_of(text.lower())
                if vertex is not None:
                    if vertex not in found:
                        found.append(vertex)
                    i += size
                    break
            else:
                i += 1
    return found
