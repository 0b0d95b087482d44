"""The one record of a retrieved passage that every edge shows: text, score and triple chain.

Retrievers rank ids (:class:`~gear_agent.retrieval.base.RankedPassage`, whose chain is
triple ids); :func:`passage_records` is the one function that reads their passages and
chain triples (once) into :class:`PassageRecord`: for the agent's output (its ``finalize``
node), ``gear search``, :meth:`gear_agent.Gear.retrieve`, the LangChain retriever and the
server's ranking. :meth:`PassageRecord.to_dict` and :meth:`PassageRecord.from_dict` are its
JSON form each way (the agent's ``passages``; read back with no store read); every other
shape of a record is made from :meth:`~PassageRecord.to_dict` (a citation's
:meth:`CitedPassage.to_dict`, LangChain ``Document``s, the web page's rows). A record never
turns back into a ranked passage: whoever needs the ranking keeps the ranked list (the
agent's state holds it as ``ranked``). :func:`cite` is the one join of an answer's
citations to its passages, for every edge that shows them (the facade, ``gear ask``, the
web page, the LangServe playground).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gear_agent.ingest.location import cite_location
from gear_agent.retrieval.base import CHAIN_KINDS, ChainKind, RankedPassage
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
        """JSON-ready form (the agent's ``passages``): ``chain`` as ``[subject, predicate,
        object]`` lists, ``chain_ids`` the triples' ids and ``chain_passage_ids`` their
        passages' ids, ``location`` as :attr:`location` says it; :meth:`from_dict` reads it back.

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
            "chain_passage_ids": [t.passage_id for t in self.chain],
            "chain_kind": self.chain_kind,
            "source": self.source,
            "metadata": dict(self.metadata),
            "location": self.location,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PassageRecord:
        """The record back from :meth:`to_dict`'s form, with nothing read from the store (a
        dict without ``chain_ids`` or ``chain_passage_ids``, as an old trace holds, gives its
        chain triples an empty ``id`` or ``passage_id``).

        Example:
            >>> r = PassageRecord("p-1", "Bled", "A town.", 0.5, (Triple("t-1", "Bled", "in", "Slovenia", "p-1"),))
            >>> PassageRecord.from_dict(r.to_dict()) == r
            True
        """
        spo = data.get("chain") or ()
        blank = [""] * len(spo)
        triples = zip(data.get("chain_ids") or blank, spo, data.get("chain_passage_ids") or blank,
                      strict=False)
        kind = data.get("chain_kind")
        return cls(
            id=str(data["id"]),
            title=str(data.get("title", "")),
            text=str(data.get("text", "")),
            score=float(data.get("score") or 0.0),
            chain=tuple(Triple(tid, *spo, pid) for tid, spo, pid in triples),
            source=str(data.get("source", "")),
            metadata=dict(data.get("metadata") or {}),
            chain_kind=kind if kind in CHAIN_KINDS else "path",
        )


def passage_records(store: Store, ranked: Sequence[RankedPassage]) -> list[PassageRecord]:
    """The ranked passages with their text, source, metadata and chain triples, in order.

    Passages the store no longer holds are left out (a concurrent delete); chain triples
    it no longer holds are left out of their chain. This is the one place that reads them:
    the edges show the records, or their :meth:`PassageRecord.to_dict` form.
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


@dataclass(frozen=True)
class CitedPassage:
    """One citation of an answer: the passage (with its chain) and the quote.

    Attributes:
        number: The citation's number, as the answer text marks it (``[1]`` is 1).
        passage: The cited passage, with its score and the chain of triples that reached it.
        quote: The words of the passage the model quoted as support, or None.
    """

    number: int
    passage: PassageRecord
    quote: str | None = None

    @property
    def location(self) -> str:
        """Where the cited passage is: its source and page or section
        (``annual-report.pdf, p. 14``; :attr:`PassageRecord.location`)."""
        return self.passage.location

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: ``number`` and ``quote`` around the passage's fields as
        :meth:`PassageRecord.to_dict` writes them (``passage_id``, ``title``, ``location``,
        ``source``, ``text``, ``chain``), in that order (``gear ask --json``'s citations).

        Example:
            >>> record = PassageRecord("p1", "Paris", "Paris is the capital.", 0.5)
            >>> list(CitedPassage(1, record, "capital").to_dict())
            ['number', 'passage_id', 'title', 'location', 'source', 'quote', 'text', 'chain']
        """
        p = self.passage.to_dict()
        return {"number": self.number, "passage_id": p["id"], "title": p["title"],
                "location": p["location"], "source": p["source"], "quote": self.quote,
                "text": p["text"], "chain": p["chain"]}


def cite(citations: Sequence[Mapping[str, Any]], passages: Sequence[PassageRecord]) -> list[CitedPassage]:
    """The one join of an answer's citations (the agent's ``citations``, numbered by their
    place, 1-based) to its ranked passages; a citation of a passage not among them is left
    out (never: only passages the QA prompt was shown, all ranked, can be cited).

    Example:
        >>> record = PassageRecord("p1", "Paris", "Paris is the capital.", 0.5)
        >>> [(c.number, c.passage.title, c.quote) for c in cite([{"passage_id": "p1", "quote": "capital"}], [record])]
        [(1, 'Paris', 'capital')]
    """
    by_id = {p.id: p for p in passages}
    return [CitedPassage(number, by_id[c["passage_id"]], c.get("quote"))
            for number, c in enumerate(citations, start=1) if c.get("passage_id") in by_id]
