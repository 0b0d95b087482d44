"""What a passage retriever returns, and the interface every retriever implements."""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from gear_agent.filters import Where
from gear_agent.questions import QuestionError, RunOptionError

ChainKind = Literal["path", "seeds"]
"""What a passage's chain is. ``path``: the triples, in order, of the path that reached it
(beam search, a triple's own passage). ``seeds``: the seed triples of a PPR walk that name
a phrase the passage contains, so their restart mass flowed straight into it (HippoRAG 2);
evidence that reached it, not a path, and never the seeds that did not reach it."""
CHAIN_KINDS: tuple[ChainKind, ...] = get_args(ChainKind)


@dataclass(frozen=True)
class RankedPassage:
    """A passage id in a ranked list, with the evidence that put it there.

    Attributes:
        id: Passage id.
        score: The ranking score of the list it is in (higher is better).
        chain: Ids of the triples whose path (or seed mass) reached this passage
            (empty when a plain passage search found it, or no triple's reached it).
        chain_kind: What ``chain`` is (:data:`ChainKind`).
    """

    id: str
    score: float
    chain: tuple[str, ...] = ()
    chain_kind: ChainKind = field(default="path", repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form the agent's state holds (``base``, ``retrieved``, ``ranked``): ``{"id", "score",
        "chain": [triple ids]}``; :meth:`from_dict` reads it back.

        Example:
            >>> RankedPassage("p-1", 0.5, ("t-1",)).to_dict()
            {'id': 'p-1', 'score': 0.5, 'chain': ['t-1']}
        """
        data: dict[str, Any] = {"id": self.id, "score": self.score, "chain": list(self.chain)}
        if self.chain and self.chain_kind != "path":  # a path is what a chain was before kinds
            data["chain_kind"] = self.chain_kind
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RankedPassage:
        """A ranked passage back from its JSON form (:meth:`to_dict`); a passage record's
        dict reads back with :meth:`~gear_agent.retrieval.records.PassageRecord.from_dict`.

        Raises:
            TypeError: The chain holds triples, not triple ids (a record's dict).

        Example:
            >>> RankedPassage.from_dict({"id": "p-1", "score": 0.5, "chain": ["t-1"]})
            RankedPassage(id='p-1', score=0.5, chain=('t-1',))
        """
        chain = tuple(data.get("chain") or ())
        if not all(isinstance(t, str) for t in chain):
            raise TypeError("a ranked passage's chain is triple ids; this dict holds triples (a passage "
                            "record's form: read it with PassageRecord.from_dict)")
        kind = data.get("chain_kind")
        return cls(str(data["id"]), float(data.get("score") or 0.0), chain,
                   kind if kind in CHAIN_KINDS else "path")


@dataclass
class Outcome:
    """What one retriever produced for one question (``gear eval`` reads it).

    Attributes:
        ranked: The ranked passages, best first, with their chains.
        answer: The answer, for retrievers that answer (the GEAR agent).
        input_tokens: Billed prompt tokens of the LLM calls made.
        output_tokens: Billed completion tokens.
        iterations: Retrieval iterations run (1 for one-step retrievers).
        seconds: Wall time of the question (set by the caller that timed it).
        usage: Every LLM call of the question by node, billed and counted with the
            model's tokenizer (:class:`~gear_agent.llm.usage.UsageDict`); None for a
            retriever that makes no call.
    """

    ranked: list[RankedPassage] = field(default_factory=list)
    answer: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    iterations: int | None = None
    seconds: float = 0.0
    usage: dict[str, Any] | None = None

    @property
    def passage_ids(self) -> list[str]:
        """The ranked passage ids, best first."""
        return [p.id for p in self.ranked]


class Retriever(ABC):
    """Turns a query into a ranked list of passages.

    Retrievers that call an LLM also implement ``async arun(question, k) -> Outcome``
    (answer, tokens, iterations), which ``gear eval`` awaits with many questions in flight.

    ``where`` restricts the result to passages that pass a filter: base retrieval applies it
    in the store before ranking, expansions keep only passing passages (see
    :mod:`gear_agent.retrieval.filtering`; callers check it first with ``checked_where``).
    """

    #: Short name used in tables and configuration, e.g. ``"hybrid+naive_ge"``.
    name: str

    @abstractmethod
    def retrieve(self, query: str, k: int, where: Where | None = None) -> list[RankedPassage]:
        """The top ``k`` passages for ``query`` that pass ``where``, best first."""


def check_request(query: object, k: object) -> None:
    """What every retriever checks first: ``query`` is non-empty text and ``k`` a whole
    number >= 1 (a retriever used directly, without the facade, gets the same checks).

    Raises:
        QuestionError: The query is not text, is empty, or holds undecodable bytes.
        RunOptionError: ``k`` is not a whole number >= 1.

    Example:
        >>> check_request("Who founded Rome?", 0)  # doctest: +IGNORE_EXCEPTION_DETAIL
        Traceback (most recent call last):
        gear_agent.questions.RunOptionError: k must be a whole number >= 1, got 0
    """
    if not isinstance(query, str):
        raise QuestionError(f"the query must be text, got {type(query).__name__}")
    if not query.strip():
        raise QuestionError("the query is empty; ask something, e.g. 'Who founded Rome?'")
    if any("\ud800" <= char <= "\udfff" for char in query):
        raise QuestionError("the query is not valid text (it holds bytes that are not UTF-8)")
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
        raise RunOptionError(f"k must be a whole number >= 1, got {k!r}")


def fuse_passages(lists: list[list[RankedPassage]], k: int, rrf_k: int | None = None) -> list[RankedPassage]:
    """RRF of ranked passage lists; each passage keeps the first non-empty chain it had
    (``rrf_k``: the setting's default when None).

    Example:
        >>> a = [RankedPassage("p1", 1.0), RankedPassage("p2", 0.5)]
        >>> b = [RankedPassage("p2", 3.0, ("t9",))]
        >>> [(p.id, p.chain) for p in fuse_passages([a, b], k=2)]
        [('p2', ('t9',)), ('p1', ())]
    """
    from gear_agent.retrieval.fusion import rrf

    chains: dict[str, RankedPassage] = {}
    for ranked in lists:
        for passage in ranked:
            if passage.chain and passage.id not in chains:
                chains[passage.id] = passage
    fused = rrf([[p.id for p in ranked] for ranked in lists], k=rrf_k)
    return [RankedPassage(pid, score, chains[pid].chain, chains[pid].chain_kind) if pid in chains
            else RankedPassage(pid, score) for pid, score in fused[:k]]
