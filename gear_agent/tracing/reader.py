"""Reading JSON Lines traces back: runs by id, one tree per root, children in start order."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gear_agent.errors import GearError


class TraceError(GearError):
    """A trace file that cannot be read, or a run id that is not in it."""


@dataclass
class TraceNode:
    """One run of a trace with its children (sorted by ``dotted_order``)."""

    record: dict[str, Any]
    children: list[TraceNode] = field(default_factory=list)

    @property
    def name(self) -> str:
        return str(self.record.get("name"))

    def walk(self) -> list[TraceNode]:
        """This node and its descendants, depth first, in start order."""
        nodes = [self]
        for child in self.children:
            nodes.extend(child.walk())
        return nodes


def read_runs(path: str | Path) -> list[dict[str, Any]]:
    """Every run record of a trace file, in file order.

    Raises:
        TraceError: The file is missing or a line is not JSON (names the line).
    """
    path = Path(path)
    if not path.is_file():
        raise TraceError(f"no trace file at {path}")
    runs = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                runs.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise TraceError(f"{path}:{number}: not a JSON line ({exc.msg})") from None
    return runs


def roots(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The root runs (no parent), in file order."""
    return [r for r in runs if not r.get("parent_run_id")]


def build_tree(runs: list[dict[str, Any]], run_id: str | None = None) -> TraceNode:
    """The tree under ``run_id`` (an id or a unique prefix); the last root when None.

    Raises:
        TraceError: No run matches, or the prefix matches several.
    """
    if not runs:
        raise TraceError("the trace holds no runs")
    if run_id is None:
        found = roots(runs)
        if not found:
            raise TraceError("the trace holds no root run")
        start = found[-1]
    else:
        matches = [r for r in runs if str(r.get("id", "")).startswith(run_id)]
        if not matches:
            raise TraceError(f"no run with id {run_id!r} in the trace")
        if len(matches) > 1:
            raise TraceError(f"run id prefix {run_id!r} matches {len(matches)} runs; give more")
        start = matches[0]
    children: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        if run.get("parent_run_id"):
            children.setdefault(run["parent_run_id"], []).append(run)

    def grow(record: dict[str, Any]) -> TraceNode:
        kids = sorted(children.get(record["id"], []), key=lambda r: r.get("dotted_order") or "")
        return TraceNode(record, [grow(k) for k in kids])

    return grow(start)
