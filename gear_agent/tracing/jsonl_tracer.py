"""A LangChain tracer that writes each finished run tree as JSON Lines, LangSmith-style.

One line per run (the graph's root run, each node, each chat-model call), written when
the root run ends, all lines of one tree together::

    {"id", "trace_id", "parent_run_id", "dotted_order", "name", "run_type", "inputs",
     "outputs", "start_time", "end_time", "error", "tags", "metadata", "tokens"}

``dotted_order`` sorts a tree's runs in start order (LangSmith's format: per level,
``<start time>Z<run id>`` joined with dots). ``tokens`` is ``{"input", "output",
"total"}``: a chat call's reported usage, a chain's sum over its calls. The file
``<folder>/gear-trace.jsonl`` is rotated to ``.1``, ``.2``, ... before a tree would take it
past ``max_bytes``; a tree never spans two files.

Example:
    >>> tracer = JsonlTracer("traces")  # doctest: +SKIP
    >>> agent.invoke({"question": "..."}, config={"callbacks": [tracer]})  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

from langchain_core.tracers.base import BaseTracer
from langchain_core.tracers.schemas import Run

from gear_agent.config import TraceSettings
from gear_agent.errors import SettingsError

FILE_NAME = "gear-trace.jsonl"
"""The live trace file inside the folder; rotated copies add ``.1``, ``.2``, ..."""

FILE_MODE = 0o600
"""Permissions of a new trace file: readable and writable by its owner only."""

Tokens = dict[str, int]


class JsonlTracer(BaseTracer):
    """Writes every finished run tree to ``folder/gear-trace.jsonl`` (thread-safe).

    Args:
        folder: Where the trace files go (created when missing).
        max_bytes: Rotate the file before a tree would take it past this size.
        backups: Rotated files kept (``.1`` newest ... ``.backups`` oldest).
    """

    run_inline: bool = True  # keep callback order in async runs (no executor hop)

    def __init__(self, folder: str | Path, *, max_bytes: int = 20_000_000, backups: int = 5) -> None:
        super().__init__()
        if max_bytes < 1:
            raise ValueError(f"max_bytes must be positive, got {max_bytes}")
        if backups < 1:
            raise ValueError(f"backups must be at least 1, got {backups}")
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / FILE_NAME
        self.max_bytes = max_bytes
        self.backups = backups
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: TraceSettings) -> JsonlTracer:
        """A tracer writing to ``trace_dir``, rotating at ``trace_max_bytes``.

        Raises:
            SettingsError: ``trace_dir`` is not set.
        """
        if settings.trace_dir is None:
            raise SettingsError("settings.trace_dir is not set (GEAR_TRACE_DIR)")
        return cls(settings.trace_dir, max_bytes=settings.trace_max_bytes)

    # ---- BaseTracer ----------------------------------------------------------
    def _persist_run(self, run: Run) -> None:
        records = list(run_records(run))
        payload = "".join(json.dumps(r, default=_jsonable, ensure_ascii=False) + "\n" for r in records)
        data = payload.encode("utf-8", "replace")  # a lone surrogate in a run's text: '?'
        with self._lock:
            self._rotate_if_needed(len(data))
            # Created owner-only (0600): traces hold questions, passages and model replies.
            descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
            with os.fdopen(descriptor, "ab") as handle:
                handle.write(data)
        for record in records:  # the tree is done: its ids are needed no more
            self.order_map.pop(UUID(record["id"]), None)

    # ---- rotation ------------------------------------------------------------
    def rotated_paths(self) -> list[Path]:
        """The live file then its rotated copies that exist, newest first."""
        paths = [self.path] + [self._backup(i) for i in range(1, self.backups + 1)]
        return [p for p in paths if p.exists()]

    def _backup(self, index: int) -> Path:
        return self.path.with_name(f"{self.path.name}.{index}")

    def _rotate_if_needed(self, incoming: int) -> None:
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return
        if size == 0 or size + incoming <= self.max_bytes:
            return
        for index in range(self.backups - 1, 0, -1):
            older = self._backup(index)
            if older.exists():
                os.replace(older, self._backup(index + 1))
        os.replace(self.path, self._backup(1))


def run_records(root: Run) -> Iterator[dict[str, Any]]:
    """The JSON records of ``root`` and its descendants, in ``dotted_order``."""
    runs: list[Run] = []
    stack = [root]
    while stack:
        run = stack.pop()
        runs.append(run)
        stack.extend(run.child_runs)
    totals = _token_totals(root)
    for run in sorted(runs, key=lambda r: r.dotted_order or ""):
        yield run_record(run, totals.get(run.id))


def run_record(run: Run, tokens: Tokens | None = None) -> dict[str, Any]:
    """One run as a flat JSON-ready dict (children referenced by ``parent_run_id``)."""
    return {
        "id": str(run.id),
        "trace_id": str(run.trace_id) if run.trace_id else str(run.id),
        "parent_run_id": str(run.parent_run_id) if run.parent_run_id else None,
        "dotted_order": run.dotted_order,
        "name": run.name,
        "run_type": run.run_type,
        "inputs": run.inputs,
        "outputs": run.outputs,
        "start_time": _iso(run.start_time),
        "end_time": _iso(run.end_time),
        "error": run.error,
        "tags": list(run.tags or []),
        "metadata": (run.extra or {}).get("metadata", {}),
        "tokens": tokens or llm_tokens(run),
    }


def llm_tokens(run: Run) -> Tokens | None:
    """A chat-model run's reported usage ``{"input", "output", "total"}``, or None."""
    if run.run_type not in ("llm", "chat") or not run.outputs:
        return None
    found = False
    tokens = {"input": 0, "output": 0, "total": 0}
    for batch in run.outputs.get("generations") or []:
        for generation in batch:
            message = generation.get("message") if isinstance(generation, dict) else None
            usage = _usage_of(message)
            if usage:
                found = True
                tokens["input"] += int(usage.get("input_tokens") or 0)
                tokens["output"] += int(usage.get("output_tokens") or 0)
                tokens["total"] += int(
                    usage.get("total_tokens")
                    or (usage.get("input_tokens") or 0) + (usage.get("output_tokens") or 0)
                )
    return tokens if found else None


def _usage_of(message: Any) -> dict[str, Any] | None:
    if message is None:
        return None
    if isinstance(message, dict):
        usage = message.get("usage_metadata") or (message.get("kwargs") or {}).get("usage_metadata")
    else:
        usage = getattr(message, "usage_metadata", None)
    return dict(usage) if usage else None


def _token_totals(root: Run) -> dict[UUID, Tokens]:
    totals: dict[UUID, Tokens] = {}

    def visit(run: Run) -> Tokens | None:
        own = llm_tokens(run)
        if own is not None:
            totals[run.id] = own
            return own
        summed: Tokens | None = None
        for child in run.child_runs:
            part = visit(child)
            if part is not None:
                summed = summed or {"input": 0, "output": 0, "total": 0}
                for key in summed:
                    summed[key] += part[key]
        if summed is not None:
            totals[run.id] = summed
        return summed

    visit(root)
    return totals


def _iso(moment: dt.datetime | None) -> str | None:
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return moment.isoformat()


def _jsonable(value: Any) -> Any:
    """``json.dumps`` fallback: pydantic models, dataclasses, messages, ids, times, sets."""
    if hasattr(value, "model_dump"):
        try:
            return value.model_dump(mode="json")
        except Exception:  # noqa: BLE001 - some models hold unserialisable fields
            return repr(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    if isinstance(value, (UUID, Path)):
        return str(value)
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if hasattr(value, "value") and type(value).__name__ == "Overwrite":
        return value.value
    return repr(value)
