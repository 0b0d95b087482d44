"""The node meta a SiReRAG pool keeps about itself: the index state it reflects, the
passages placed into it since its build, and the summaries marked for refresh
(:mod:`gear_agent.sirerag.freshness` reads and writes them; a build resets them)."""

from __future__ import annotations

import json

from gear_agent.store.changes import Stamp

__all__ = ["PLACED_KEY", "REFRESH_KEY", "STAMP_KEY", "built_meta"]

STAMP_KEY = "stamp"
"""Node meta key of the stamp the saved pool reflects."""
PLACED_KEY = "placed"
"""Node meta key of the placements (JSON: node id → passage ids placed under it)."""
REFRESH_KEY = "refresh"
"""Node meta key of the nodes marked for refresh (JSON list of ids)."""


def built_meta(stamp: Stamp) -> dict[str, str]:
    """The node meta a build records: the stamp it reflects, and no placements or refresh
    marks (the build's trees hold every passage and fresh summaries)."""
    return {STAMP_KEY: json.dumps(stamp.as_dict()), PLACED_KEY: "{}", REFRESH_KEY: "[]"}
