"""Proposition aggregates: the propositions sharing an entity, concatenated (no LLM).

SiReRAG's relatedness tree starts here (Zhang et al., "SiReRAG", section 3.2): propositions
that name the same entity are grouped, and each group, concatenated in the order its
propositions were read, is one leaf of the tree, linking the passages they came from.
"""

from __future__ import annotations

from collections.abc import Sequence

from gear_agent.config import SiReRAGSettings
from gear_agent.ids import node_id
from gear_agent.sirerag.propositions import Proposition
from gear_agent.types import Node

SEPARATOR = "\n"
"""Between the propositions of an aggregate."""


def aggregate_text(propositions: Sequence[Proposition]) -> str:
    """The aggregate's text: its propositions in order, one a line."""
    return SEPARATOR.join(p.text for p in propositions)


def group_by_entity(
    propositions: Sequence[Proposition], min_propositions: int | None = None,
    min_passages: int | None = None,
) -> list[Node]:
    """One aggregate node per entity named by enough propositions.

    Entities are taken in order of first mention; an aggregate's propositions and its
    passages keep the order of ``propositions`` (each once). Two entities with the same
    propositions give the same text, hence the same node (kept once, under the first).

    Args:
        propositions: Every proposition, in reading order (passage by passage).
        min_propositions: Fewest propositions an entity needs (``sirerag_min_propositions``
            when None).
        min_passages: Fewest distinct passages they must come from (``sirerag_min_passages``
            when None).

    Example:
        >>> from gear_agent.sirerag.propositions import Proposition as P
        >>> props = [P("A founded B", ("a", "b"), "p1"), P("A married C", ("a", "c"), "p2")]
        >>> [(n.entity, n.text, n.passage_ids) for n in group_by_entity(props)]
        [('a', 'A founded B\\nA married C', ('p1', 'p2'))]
    """
    if min_propositions is None:
        min_propositions = SiReRAGSettings.default_of("sirerag_min_propositions")
    if min_passages is None:
        min_passages = SiReRAGSettings.default_of("sirerag_min_passages")
    groups: dict[str, list[int]] = {}
    for index, proposition in enumerate(propositions):
        for entity in proposition.entities:
            members = groups.setdefault(entity, [])
            if not members or members[-1] != index:
                members.append(index)
    nodes: dict[str, Node] = {}
    for entity, members in groups.items():
        chosen = [propositions[i] for i in members]
        passages = tuple(dict.fromkeys(p.passage_id for p in chosen))
        if len(chosen) < min_propositions or len(passages) < min_passages:
            continue
        text = aggregate_text(chosen)
        nid = node_id("aggregate", "relatedness", 0, text)
        nodes.setdefault(nid, Node(nid, "aggregate", "relatedness", 0, text, passages, (), entity))
    return list(nodes.values())
