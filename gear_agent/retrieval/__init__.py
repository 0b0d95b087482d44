"""Passage retrievers: the ranked passage they return, BM25/dense/hybrid search, RRF, filters,
the edge record, and the one table of retrievers by name.

The public modules are listed in ``__all__``; each is imported on its own (importing the
subpackage imports none of them, so no layer pulls in the ones above it).
"""

__all__ = ["base", "filtering", "fusion", "llm_free", "records", "registry", "search"]
