"""The GEAR agent for ``langgraph dev`` / LangGraph Platform (see ``langgraph.json``).

Settings come from the environment (``GEAR_*``, e.g. ``GEAR_INDEX_DIR``), the chat
model from ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``. Compiled without a
checkpointer: the LangGraph server brings its own persistence.
"""

from gear_agent.agent.graph import build_agent
from gear_agent.config import GearSettings

graph = build_agent(GearSettings())
