"""The knobs of a SiReRAG build, in one typed object."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

BuildMode = Literal["ablation", "full"]
"""``ablation``: stored OpenIE triples as propositions, aggregates, no LLM, no summaries;
``full``: LLM propositions and entities, aggregates, and both trees' recursive summaries."""

BUILD_MODES: tuple[BuildMode, ...] = ("ablation", "full")


@dataclass(frozen=True)
class SiReRAGSettings:
    """How the trees are built.

    Attributes:
        min_propositions: An entity makes an aggregate when at least this many propositions
            name it ("propositions sharing an entity"); 1 would make one per entity.
        min_passages: ... and when they come from at least this many passages (2 keeps only
            aggregates that relate passages to each other).
        reduction_dim: Dimensions the embeddings are reduced to before clustering (PCA;
            RAPTOR reduces with UMAP to 10).
        max_clusters: The most mixture components the BIC search tries at one level.
        threshold: Soft clustering: a node joins every cluster whose posterior is at least
            this (RAPTOR's 0.1); it always joins its most likely one.
        max_cluster_size: A cluster with more members is clustered again on its own
            (RAPTOR reclusters clusters over its token budget).
        max_levels: Summary levels above the leaves, at most.
        stop_below: A level with fewer nodes than this is not clustered further.
        seed: Seed of the mixture fits (clustering is deterministic for a seed).
        summary_max_words: Length the summary prompt asks for.
        concurrency: LLM calls in flight at once.
    """

    min_propositions: int = 2
    min_passages: int = 1
    reduction_dim: int = 10
    max_clusters: int = 50
    threshold: float = 0.1
    max_cluster_size: int = 12
    max_levels: int = 3
    stop_below: int = 4
    seed: int = 0
    summary_max_words: int = 100
    concurrency: int = 4
