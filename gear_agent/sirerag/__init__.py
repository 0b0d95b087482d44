"""SiReRAG (Zhang et al., "SiReRAG: Indexing Similar and Related Information for Multihop
Reasoning", ICLR 2025) as an indexing option beside GEAR's.

Two trees are built at index time and flattened into one retrieval pool with the passages:
a *similarity tree* (RAPTOR-style recursive summaries of soft clusters of passages) and a
*relatedness tree* (propositions grouped into aggregates by shared entity, then recursive
summaries). Nodes live in the store beside passages and triples, each knowing its passages.

Example:
    >>> from gear_agent.sirerag import build_ablation, SiReRAGRetriever  # doctest: +SKIP
    >>> build_ablation(index.store).level_rows()  # doctest: +SKIP
"""

from gear_agent.sirerag.build import build_ablation
from gear_agent.sirerag.report import BuildReport
from gear_agent.sirerag.retriever import SiReRAGRetriever
from gear_agent.sirerag.settings import BUILD_MODES, SiReRAGSettings

__all__ = ["BUILD_MODES", "BuildReport", "SiReRAGRetriever", "SiReRAGSettings", "build_ablation"]
