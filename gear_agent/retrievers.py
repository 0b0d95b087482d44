"""Deprecated: this module moved to :mod:`gear_agent.registry`, the one table of retrievers."""

from gear_agent._deprecated import NEXT_REMOVAL, moved_module

__getattr__ = moved_module(__name__, "gear_agent.registry", removed_in=NEXT_REMOVAL)
