"""LangSmith-style run trees written as JSON Lines, and read back.

The public modules are listed in ``__all__``; each is imported on its own (importing the
subpackage imports none of them, so no layer pulls in the ones above it).
"""

__all__ = ["jsonl_tracer", "reader"]
