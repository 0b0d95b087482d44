"""The records every part of gear-agent passes around: passages, triples, hits."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

Collection = Literal["passage", "triple"]
"""The two things a store indexes: passages, and the triples extracted from them."""

NodeKind = Literal["aggregate", "summary"]
"""What a SiReRAG node is: a proposition aggregate (propositions sharing an entity,
concatenated) or an LLM summary of a cluster of nodes or passages."""

TreeName = Literal["similarity", "relatedness"]
"""The SiReRAG tree a node belongs to."""

BaseMode = Literal["bm25", "dense", "hybrid"]
"""How a plain search ranks: BM25, cosine of embeddings, or RRF of the two (hybrid)."""

BASE_MODES: tuple[BaseMode, ...] = get_args(BaseMode)
"""The base search modes, in the order tables list them."""

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


@dataclass(frozen=True)
class Node:
    """A SiReRAG tree node, stored beside passages and triples (see :mod:`gear_agent.sirerag`).

    Attributes:
        id: Content hash of kind, tree, level and text (see :func:`gear_agent.ids.node_id`).
        kind: ``aggregate`` or ``summary``.
        tree: ``similarity`` (RAPTOR-style summaries of passages) or ``relatedness``
            (aggregates and their summaries).
        level: 0 for aggregates, 1 and up for summaries (a summary is one above the
            highest of its children; passages are level 0 of the similarity tree).
        text: The text that is embedded and shown.
        passage_ids: Provenance: the passages under the node, in order (for an aggregate,
            the order its propositions were read; for a summary, its children's in turn).
        children: Ids of the nodes (or, at level 1 of the similarity tree, passages) it
            summarises; empty for aggregates.
        entity: The shared entity of an aggregate (normalised); empty for summaries.
    """

    id: str
    kind: NodeKind
    tree: TreeName
    level: int
    text: str
    passage_ids: tuple[str, ...]
    children: tuple[str, ...] = ()
    entity: str = ""
