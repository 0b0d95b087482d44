"""The records every part of gear-agent passes around: passages, triples, hits."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Collection = Literal["passage", "triple"]
"""The two things a store indexes: passages, and the triples extracted from them."""

ResponseFormatMode = Literal["text", "json_object", "json_schema", "json_object_schema"]
"""How JSON replies are asked of a chat model (``GEAR_LLM_RESPONSE_FORMAT``); see
:mod:`gear_agent.llm.response_format`."""


@dataclass(frozen=True)
class Passage:
    """One retrievable unit of text.

    Attributes:
        id: Content hash of ``title`` and ``text`` (see :func:`gear_agent.ids.passage_id`).
        title: Document title; kept for every chunk of a long document.
        text: The passage body.
        source: Where it came from (a file path or a corpus name); used by delete-by-source.
        metadata: Any other fields the record came with (JSON values: ``year``, ``url``,
            ...); kept with the passage and returned with it. Not part of the id.
    """

    id: str
    title: str
    text: str
    source: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def content(self) -> str:
        """Title and text as one string, the form that is embedded and BM25-indexed."""
        return f"{self.title}\n{self.text}" if self.title else self.text


@dataclass(frozen=True)
class Triple:
    """A (subject, predicate, object) fact, linked to exactly one passage.

    Attributes:
        id: Content hash of the passage id and the three parts.
        subject: Head entity.
        predicate: Relation.
        object: Tail entity.
        passage_id: The passage the triple was extracted from.
    """

    id: str
    subject: str
    predicate: str
    object: str
    passage_id: str

    @property
    def text(self) -> str:
        """The triple as the text that is embedded and BM25-indexed."""
        return f"{self.subject} {self.predicate} {self.object}"

    def as_tuple(self) -> tuple[str, str, str]:
        return (self.subject, self.predicate, self.object)


@dataclass(frozen=True)
class Hit:
    """One search result: an id in a collection and its score (higher is better)."""

    id: str
    score: float


@dataclass(frozen=True)
class AddResult:
    """What an add did: ids newly stored, and ids that were already there (no-ops)."""

    added: list[str] = field(default_factory=list)
    existing: list[str] = field(default_factory=list)
