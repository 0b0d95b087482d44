"""Graph expansion of a base passage list: GEAR's diverse triple beam search (NaiveGE) and
Personalized PageRank (HippoRAG 1 and 2), alone or fused.

The public modules are listed in ``__all__``; each is imported on its own (importing the
subpackage imports none of them, so no layer pulls in the ones above it).
"""

__all__ = ["beam", "fused", "hipporag", "hipporag_ner", "naive_ge", "ppr", "ppr_filter", "ppr_graph", "ppr_graph_files", "ppr_walk", "scorers"]
