"""The knobs of the PPR expansions (``ppr``, ``ppr+filter``, ``hipporag``), apart from the
project's settings: the retrievers take this small object, not all of ``GearSettings``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from gear_agent.config import GearSettings


@dataclass(frozen=True)
class PPRSettings:
    """Personalized PageRank settings (``GEAR_PPR_*`` and ``GEAR_HIPPORAG_*``).

    Attributes:
        damping: Probability of following an edge (HippoRAG 2: 0.5).
        synonym_threshold: Cosine at or above which two phrases get a synonym edge.
        passage_weight: Restart mass of a passage node per unit of its dense score.
        seed_triples: Query-to-triple matches whose phrases seed the walk.
        method: ``local`` (push from the seeds; cost follows their neighbourhood) or
            ``global`` (power iteration over the whole graph; exact, for checking).
        tolerance: Local push: residual per unit of weighted degree left unpushed.
        dense_passages: Local push: the query's nearest passages that get restart mass.
        hipporag_seed_phrases: ``hipporag``: phrase nodes nearest the query used as seeds.
        hipporag_damping: ``hipporag``: probability of following an edge.
        title_weight: Seeds from the query (``ppr``, ``ppr+filter``): weight of the edges
            joining a passage to the phrase node its title names
            (:mod:`~gear_agent.expansion.ppr_walk`; 0: HippoRAG 2's graph).
        passage_sharpness: Seeds from the query: power of the normalised dense score in a
            passage's restart mass (:func:`~gear_agent.expansion.ppr.passage_mass`;
            HippoRAG 2 and the default: 1).
        query_entity_weight: Seeds from the query: restart mass (over specificity) of each
            phrase node the query names (:mod:`~gear_agent.expansion.query_entities`;
            0: none, HippoRAG 2).
        expand_title_weight: Seeds given (the agent's and SyncGE's expansion from linked
            triples): title edge weight; 0 keeps the walk the LLM replay recorded.
        expand_passage_sharpness: Seeds given: passage sharpness; 1 as recorded.

    Example:
        >>> PPRSettings().damping, PPRSettings(method="global").method
        (0.5, 'global')
    """

    damping: float = 0.5
    synonym_threshold: float = 0.8
    passage_weight: float = 0.05
    seed_triples: int = 5
    method: Literal["local", "global"] = "local"
    tolerance: float = 1e-7
    dense_passages: int = 1000
    hipporag_seed_phrases: int = 3
    hipporag_damping: float = 0.5
    title_weight: float = 2.0
    passage_sharpness: float = 1.0
    query_entity_weight: float = 0.25
    expand_title_weight: float = 0.0
    expand_passage_sharpness: float = 1.0

    @classmethod
    def hipporag2(cls, **changes: object) -> PPRSettings:
        """HippoRAG 2's walk exactly: no title edges, linear passage weights, no query
        names; for checks against its formula (``changes`` set other fields)."""
        return cls(title_weight=0.0, passage_sharpness=1.0, query_entity_weight=0.0,
                   **changes)  # type: ignore[arg-type]

    def knobs(self, seeds_given: bool) -> tuple[float, float, float]:
        """``(title_weight, passage_sharpness, query_entity_weight)`` of a walk whose seeds
        come from the query (``seeds_given`` False) or are given (the agent's linked triples).

        Example:
            >>> PPRSettings().knobs(False), PPRSettings().knobs(True)
            ((2.0, 1.0, 0.25), (0.0, 1.0, 0.0))
        """
        if seeds_given:
            return self.expand_title_weight, self.expand_passage_sharpness, 0.0
        return self.title_weight, self.passage_sharpness, self.query_entity_weight

    @classmethod
    def from_gear(cls, settings: GearSettings) -> PPRSettings:
        """The PPR part of the project's settings."""
        return cls(
            damping=settings.ppr_damping,
            synonym_threshold=settings.ppr_synonym_threshold,
            passage_weight=settings.ppr_passage_weight,
            seed_triples=settings.ppr_seed_triples,
            method=settings.ppr_method,
            tolerance=settings.ppr_tolerance,
            dense_passages=settings.ppr_dense_passages,
            hipporag_seed_phrases=settings.hipporag_seed_phrases,
            hipporag_damping=settings.hipporag_damping,
            title_weight=settings.ppr_title_weight,
            passage_sharpness=settings.ppr_passage_sharpness,
            query_entity_weight=settings.ppr_query_entities,
            expand_title_weight=settings.ppr_expand_title_weight,
            expand_passage_sharpness=settings.ppr_expand_passage_sharpness,
        )

    @classmethod
    def of(cls, settings: PPRSettings | GearSettings | None) -> PPRSettings:
        """``settings`` as :class:`PPRSettings` (a ``GearSettings`` is converted; None:
        the defaults)."""
        if settings is None:
            return cls()
        return settings if isinstance(settings, PPRSettings) else cls.from_gear(settings)
