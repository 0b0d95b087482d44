"""Reading JSON Lines traces back: runs by id, one tree per root, children in start order."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gear_agent.errors import GearError
from gear_agent.text.json_input import JSONInputError, load_json


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
        nodes: list[TraceNode] = []
        pending = [self]
        while pending:
            node = pending.pop()
            nodes.append(node)
            pending.extend(reversed(node.children))
        return nodes


def read_runs(path: str | Path) -> list[dict[str, Any]]:
    """Every run record of a trace file, in file order.

    Raises:
        TraceError: The file is missing, or a line is not UTF-8 JSON, not an object, nested
            too deep, without a string ``id``, or with ``inputs``/``outputs``/``tokens`` that
            are not objects (the message names the line).
    """
    path = Path(path)
    if not path.is_file():
        raise TraceError(f"no trace file at {path}")
    runs = []
    with path.open("rb") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                record = load_json(line, where)
            except JSONInputError as exc:
                raise TraceError(str(exc)) from None
            if not isinstance(record, dict):
                raise TraceError(f"{where}: a run must be a JSON object, got {type(record).__name__}")
            if not isinstance(record.get("id"), str) or not record["id"]:
                raise TraceError(f"{where}: the run has no string 'id'")
            parent = record.get("parent_run_id")
            if parent is not None and not isinstance(parent, str):
                raise TraceError(f"{where}: 'parent_run_id' must be a string or null")
            for key in ("inputs", "outputs", "tokens"):
                if record.get(key) is not None and not isinstance(record[key], dict):
                    raise TraceError(f"{where}: {key!r} must be an object or null, "
                                     f"got {type(record[key]).__name__}")
            runs.append(record)
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
            children.setdefault(str(run["parent_run_id"]), []).append(run)

    # Grown without recursion, each run once: a parent cycle or a very deep trace in a
    # hand-edited file cannot recurse forever.
    root = TraceNode(start)
    seen = {str(start.get("id"))}
    pending = [root]
    while pending:
        node = pending.pop()
        kids = sorted(children.get(str(node.record.get("id")), []),
                      key=lambda r: str(r.get("dotted_order") or ""))
        for kid in kids:
            if str(kid.get("id")) in seen:
                continue  # a cycle: this run is already in the tree
            seen.add(str(kid.get("id")))
            child = TraceNode(kid)
            node.children.append(child)
            pending.append(child)
    return root
