"""Deprecated: this module moved to :mod:`gear_agent.parts`, with the other parts of an index."""

from gear_agent._deprecated import NEXT_REMOVAL, moved_module

__getattr__ = moved_module(__name__, "gear_agent.parts", removed_in=NEXT_REMOVAL)
