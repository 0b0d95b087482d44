"""Benchmarks: questions with gold passages, Recall@k and answer metrics, and the runner behind ``gear eval``.

The public modules are listed in ``__all__``; each is imported on its own (importing the
subpackage imports none of them, so no layer pulls in the ones above it).
"""

__all__ = ["dataset", "metrics", "prepare", "runner"]
