"""The build modes of SiReRAG; its knobs are :class:`gear_agent.config.SiReRAGSettings`, a
section of :class:`~gear_agent.config.GearSettings` (``GEAR_SIRERAG_*``), importable from here."""

from __future__ import annotations

from typing import Literal

from gear_agent.config import SiReRAGSettings

BuildMode = Literal["ablation", "full"]
"""``ablation``: stored OpenIE triples as propositions, aggregates, no LLM, no summaries;
``full``: LLM propositions and entities, aggregates, and both trees' recursive summaries."""

BUILD_MODES: tuple[BuildMode, ...] = ("ablation", "full")

__all__ = ["BUILD_MODES", "BuildMode", "SiReRAGSettings"]
