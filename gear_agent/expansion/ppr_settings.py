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
        )

    @classmethod
    def of(cls, settings: PPRSettings | GearSettings | None) -> PPRSettings:
        """``settings`` as :class:`PPRSettings` (a ``GearSettings`` is converted; None:
        the defaults)."""
        if settings is None:
            return cls()
        return settings if isinstance(settings, PPRSettings) else cls.from_gear(settings)
