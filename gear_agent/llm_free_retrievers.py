"""Deprecated: this module moved to :mod:`gear_agent.retrieval.llm_free` (the retrievers'
modules live in one package, :mod:`gear_agent.retrieval`)."""

from gear_agent._deprecated import NEXT_REMOVAL, moved_module

__getattr__ = moved_module(__name__, "gear_agent.retrieval.llm_free", removed_in=NEXT_REMOVAL)
