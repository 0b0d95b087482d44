"""The one record of a retrieved passage that every edge shows: text, score and triple chain.

Retrievers rank ids (:class:`~gear_agent.retrieval.base.RankedPassage`); the CLI, the
Python facade, the LangChain retriever, the agent's output and the server all turn them
into :class:`PassageRecord` with :func:`passage_records`, so a passage always comes with
the same fields, and with the chain of triples whose path reached it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gear_agent.ingest.location import cite_location
from gear_agent.retrieval.base import ChainKind, RankedPassage
from gear_agent.store.base import Store
from gear_agent.types import Triple


@dataclass(frozen=True)
class PassageRecord:
    """A retrieved passage with its score and the triple chain that reached it.

    Attributes:
        id: Passage id.
        title: Document title.
        text: Passage text.
        score: Score in the ranked list it came from (higher is better; fused lists
            carry RRF scores, so compare scores within one list only).
        chain: The triples whose path reached the passage, in order (empty when a plain
            passage search found it); for ``chain_kind="seeds"``, the PPR seed triples
            whose mass reached it.
        chain_kind: ``path`` or ``seeds`` (:data:`~gear_agent.retrieval.base.ChainKind`).
        source: Where the passage came from (file path or corpus name).
        metadata: The passage's other fields (``year``, ``url``, ...; ``page`` and
            ``section`` for a passage of a document).
    """

    id: str
    title: str
    text: str
    score: float
    chain: tuple[Triple, ...] = ()
    source: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    chain_kind: ChainKind = "path"

    @property
    def location(self) -> str:
        """Where the passage is, as a citation names it: ``annual-report.pdf, p. 14``,
        ``guide.md, § Tickets`` (:func:`gear_agent.ingest.location.cite_location`).

        Example:
            >>> PassageRecord("p-1", "R", "x", 0.5, source="docs/r.pdf", metadata={"page": 3}).location
            'r.pdf, p. 3'
        """
        return cite_location(self.source, self.metadata)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: ``chain`` as ``[subject, predicate, object]`` lists,
        ``chain_ids`` as the triples' ids (the shape of the agent's ``passages``) and
        ``location`` as :attr:`location` says it.

        Example:
            >>> PassageRecord("p-1", "Bled", "A town.", 0.5).to_dict()["chain"]
            []
        """
        return {
            "id": self.id,
            "title": self.title,
            "text": self.text,
            "score": self.score,
            "chain": [list(t.as_tuple()) for t in self.chain],
            "chain_ids": [t.id for t in self.chain],
            "chain_kind": self.chain_kind,
            "source": self.source,
            "metadata": dict(self.metadata),
            "location": self.location,
        }


def passage_records(store: Store, ranked: Sequence[RankedPassage]) -> list[PassageRecord]:
    """The ranked passages with their text, source, metadata and chain triples, in order.

    Passages the store no longer holds are left out (a concurrent delete); chain triples
    it no longer holds are left out of their chain. :meth:`PassageRecord.to_dict` is the one
    place the chain turns into ``[subject, predicate, object]`` triples for the edges (server
    JSON, CLI JSON, the agent's output, traces); :meth:`RankedPassage.from_dict` reads a
    record's dict back into a ranked passage.
    """
    found = {p.id: p for p in store.passages.get([r.id for r in ranked])}
    triple_ids = list(dict.fromkeys(t for r in ranked for t in r.chain))
    triples = {t.id: t for t in store.triples.get(triple_ids)}
    records = []
    for r in ranked:
        passage = found.get(r.id)
        if passage is None:
            continue
        records.append(
            PassageRecord(
                id=r.id,
                title=passage.title,
                text=passage.text,
                score=r.score,
                chain=tuple(triples[t] for t in r.chain if t in triples),
                source=passage.source,
                metadata=dict(passage.metadata),
                chain_kind=r.chain_kind,
            )
        )
    return records


def records_from_dicts(store: Store, passages: Sequence[Mapping[str, Any]]) -> list[PassageRecord]:
    """Passage records back from :meth:`PassageRecord.to_dict` dicts (the agent's
    ``passages``): the text, score, source and metadata come from the dicts (what the
    agent's ``finalize`` already read, so the passages are not read again); only the chain
    triples are looked up by id, for the passage each came from (a triple the store no
    longer holds is left out of its chain, as :func:`passage_records` does).
    """
    ranked = [RankedPassage.from_dict(p) for p in passages]
    triples = {t.id: t for t in store.triples.get(list(dict.fromkeys(t for r in ranked for t in r.chain)))}
    return [
        PassageRecord(
            id=r.id,
            title=str(p.get("title", "")),
            text=str(p.get("text", "")),
            score=r.score,
            chain=tuple(triples[t] for t in r.chain if t in triples),
            source=str(p.get("source", "")),
            metadata=dict(p.get("metadata") or {}),
            chain_kind=r.chain_kind,
        )
        for r, p in zip(ranked, passages)
    ]
