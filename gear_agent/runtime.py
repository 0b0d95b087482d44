"""Deprecated: ``Runtime`` is now :class:`gear_agent.open_index.OpenIndex` (the old name
collided with LangGraph's ``langgraph.runtime.Runtime``)."""

from gear_agent._deprecated import NEXT_REMOVAL, moved_names

__getattr__ = moved_names(__name__, {"Runtime": ("gear_agent.open_index", "OpenIndex")},
                          "the old name collided with langgraph.runtime.Runtime",
                          removed_in=NEXT_REMOVAL)
