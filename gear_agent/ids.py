"""Content-hash ids: the same passage or triple always gets the same id."""

from __future__ import annotations

import hashlib

_SEP = "\x1f"  # unit separator: never appears in normal text, so parts cannot run together


def _digest(*parts: str) -> str:
    return hashlib.sha256(_SEP.join(parts).encode("utf-8")).hexdigest()[:24]


def passage_id(title: str, text: str) -> str:
    """Id of a passage: a hash of its stripped title and text.

    >>> passage_id("Paris", "Paris is the capital of France.") == passage_id(" Paris", "Paris is the capital of France. ")
    True
    """
    return "p-" + _digest(title.strip(), text.strip())


def triple_id(passage: str, subject: str, predicate: str, obj: str) -> str:
    """Id of a triple: a hash of its passage id and its three parts."""
    return "t-" + _digest(passage, subject, predicate, obj)


def node_id(kind: str, tree: str, level: int, text: str) -> str:
    """Id of a SiReRAG node: a hash of its kind, tree, level and text.

    >>> node_id("aggregate", "relatedness", 0, "a b") == node_id("aggregate", "relatedness", 0, "a b")
    True
    """
    return "n-" + _digest(kind, tree, str(level), text)
