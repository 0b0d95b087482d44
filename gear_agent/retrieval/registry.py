"""Deprecated: this module moved to :mod:`gear_agent.registry` (the table builds the agent's
retrievers, so it stands above the agent, not inside :mod:`gear_agent.retrieval`)."""

from gear_agent._deprecated import NEXT_REMOVAL, moved_module

__getattr__ = moved_module(__name__, "gear_agent.registry", removed_in=NEXT_REMOVAL)
