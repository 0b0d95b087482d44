"""Propositions: one fact each, with the entities it names and the passage it came from.

SiReRAG extracts propositions and their entities from each passage with an LLM
(:mod:`gear_agent.sirerag.extract`); its LLM-free ablation renders each stored OpenIE
triple as the proposition "subject predicate object", naming the subject and the object.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gear_agent.text.tokenizer import normalise_entity
from gear_agent.types import Triple


@dataclass(frozen=True)
class Proposition:
    """One proposition.

    Attributes:
        text: The proposition as a sentence.
        entities: The entities it names, normalised (:func:`normalise_entity`), each once.
        passage_id: The passage it was read from.
    """

    text: str
    entities: tuple[str, ...]
    passage_id: str


def entity_keys(names: Iterable[str]) -> tuple[str, ...]:
    """Normalised, non-empty, each once, in the order given.

    Example:
        >>> entity_keys(["Paris ", "paris", "", "France"])
        ('paris', 'france')
    """
    return tuple(dict.fromkeys(k for k in (normalise_entity(n) for n in names) if k))


def from_triples(triples: Iterable[Triple]) -> list[Proposition]:
    """The ablation's propositions: one per triple, in the order given.

    Example:
        >>> from gear_agent.types import Triple
        >>> from_triples([Triple("t-1", "Oskar Brenner", "founded", "Kestrel Observatory", "p-1")])[0]
        Proposition(text='Oskar Brenner founded Kestrel Observatory', entities=('oskar brenner', 'kestrel observatory'), passage_id='p-1')
    """
    return [Proposition(t.text, entity_keys([t.subject, t.object]), t.passage_id) for t in triples]
