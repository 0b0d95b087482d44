"""Deprecated: this module moved to :mod:`gear_agent.parts` (the retrievers without an LLM
are parts assembled from an open index, below the agent that takes one as its base)."""

from gear_agent._deprecated import NEXT_REMOVAL, moved_module

__getattr__ = moved_module(__name__, "gear_agent.parts", removed_in=NEXT_REMOVAL)
