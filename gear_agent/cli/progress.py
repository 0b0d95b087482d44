"""Progress bars at the CLI edge: one rich bar per stage, with count, rate and ETA.

The library reports progress through plain callbacks and never prints:
``progress(stage, done, total)`` from indexing (:data:`gear_agent.indexing.Progress`),
extraction and eval, and ``progress(done, total)`` per encoder batch from the embedder
(:func:`gear_agent.embedding.base.embedding_progress`). :class:`ProgressBoard` draws them;
embedding batches move the bar of the stage whose items are being embedded (passages,
triples), so a stage of 256-passage commits still moves every 64 passages. Bars of other
libraries (transformers' "Loading weights", tqdm) are switched off by
:func:`quiet_third_party`.

Example:
    >>> from rich.console import Console
    >>> with ProgressBoard(Console(file=open("/dev/null", "w"))) as board:
    ...     board.stage("passages", 0, 2)
    ...     board.stage("passages", 2, 2)
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
)
from rich.text import Text


@dataclass(frozen=True)
class StageLabel:
    """How one stage reads on its bar: a description and the unit its rate counts."""

    description: str
    unit: str
    embeds: bool = False
    """Its items are embedded one for one, so embedding batches move its bar."""


STAGES: dict[str, StageLabel] = {
    "passages": StageLabel("ingest passages", "passages", embeds=True),
    "triples": StageLabel("ingest triples", "triples", embeds=True),
    "extraction": StageLabel("extract triples", "passages"),
    "passage ANN": StageLabel("build passage ANN", "rows"),
    "triple ANN": StageLabel("build triple ANN", "rows"),
}
"""Labels of the stages the library reports; any other stage is shown by its own name."""

EMBED_BAR_MIN = 256
"""An embedding call outside a stage gets its own bar from this many texts (a PPR graph's
phrases, say); a query's one text does not."""


class RateColumn(ProgressColumn):
    """Items per second with the stage's unit (``312.4 passages/s``)."""

    def render(self, task: Task) -> Text:
        unit = task.fields.get("unit", "items")
        speed = task.finished_speed or task.speed
        if speed is None and task.finished and task.elapsed:
            speed = task.completed / task.elapsed
        shown = "-" if speed is None else f"{speed:,.1f}"
        return Text(f"{shown} {unit}/s", style="progress.data.speed")


class TimesColumn(ProgressColumn):
    """Elapsed time and time left (``0:01:05 • ETA 0:00:40``)."""

    max_refresh = 0.5

    def render(self, task: Task) -> Text:
        elapsed = _clock(task.finished_time if task.finished else task.elapsed)
        left = "0:00:00" if task.finished else _clock(task.time_remaining)
        return Text(f"{elapsed} • ETA {left}", style="progress.elapsed")


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "-:--:--"
    whole = int(seconds)
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


class ProgressBoard:
    """Rich progress bars for the callbacks of one command; use it as a context manager.

    Args:
        console: Where the bars go (the CLI's stderr console by default).
        stages: Labels by stage name.

    Example:
        >>> board = ProgressBoard(Console(file=open("/dev/null", "w")))
        >>> with board, board.embedding():
        ...     board.stage("triples", 0, 10)
        ...     board.embedded(5, 10)  # half of the first batch's vectors are done
        ...     board.stage("triples", 10, 10)
        >>> board.completed("triples")
        10
    """

    def __init__(self, console: Console | None = None, stages: dict[str, StageLabel] | None = None) -> None:
        if console is None:
            from gear_agent.cli.common import console as cli_console

            console = cli_console
        self.stages = STAGES if stages is None else stages
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(bar_width=20),
            MofNCompleteColumn(),
            RateColumn(),
            TimesColumn(),
            console=console,
            speed_estimate_period=10.0,
        )
        self._tasks: dict[str, TaskID] = {}
        self._done: dict[str, int] = {}
        self._totals: dict[str, int] = {}
        self._active: str | None = None
        self._embed_calls = 0

    def __enter__(self) -> ProgressBoard:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    # ---- callbacks ------------------------------------------------------------------
    def stage(self, stage: str, done: int, total: int) -> None:
        """The library's ``progress(stage, done, total)``: ``done`` of ``total`` items of
        ``stage`` are finished (committed, extracted, evaluated)."""
        label = self.stages.get(stage, StageLabel(stage, "items"))
        task = self._task(stage, label, total)
        self._done[stage], self._totals[stage] = done, total
        self._progress.update(task, completed=min(done, total), total=max(total, 1))
        self._active = stage if done < total else None

    def embedded(self, done: int, total: int) -> None:
        """The embedder's ``progress(done, total)`` for one ``embed`` call."""
        active = self._active
        if active is not None and self.stages.get(active, StageLabel("", "")).embeds:
            stage_total = self._totals[active]
            self._progress.update(
                self._tasks[active], completed=min(stage_total, self._done[active] + done)
            )
            return
        if active is not None or total < EMBED_BAR_MIN:
            return  # a stage that is not about embedding (extraction), or a query
        if done == 0:
            self._embed_calls += 1
        key = f"embedding#{self._embed_calls}"
        task = self._task(key, StageLabel(f"embed {total:,} texts", "texts"), total)
        self._progress.update(task, completed=min(done, total), total=max(total, 1))

    def graph_stages(self, prefix: str = "PPR graph") -> Callable[[str, int, int], None]:
        """A ``progress(stage, done, total)`` callback for a graph builder: each of its stages
        gets a bar named ``"{prefix}: {stage}"``; its ``embed`` stage moves per encoder batch."""

        def report(stage: str, done: int, total: int) -> None:
            key = f"{prefix}: {stage}"
            if key not in self.stages:
                embeds = stage == "embed"
                self.stages = {**self.stages, key: StageLabel(key, "phrases" if embeds else "items", embeds)}
            self.stage(key, done, total)

        return report

    def counter(self, stage: str, unit: str = "items") -> Callable[[int, int], None]:
        """A ``progress(done, total)`` callback for one stage (eval rows: ``unit="questions"``)."""
        self.stages = {**self.stages, stage: self.stages.get(stage, StageLabel(stage, unit))}
        return lambda done, total: self.stage(stage, done, total)

    @contextmanager
    def embedding(self) -> Iterator[None]:
        """Within the block, the embedder's batches move these bars."""
        from gear_agent.embedding.base import embedding_progress

        with embedding_progress(self.embedded):
            yield

    def completed(self, stage: str) -> int:
        """How far the bar of ``stage`` is (for tests)."""
        return int(self._progress.tasks[self._tasks[stage]].completed)

    def _task(self, key: str, label: StageLabel, total: int) -> TaskID:
        task = self._tasks.get(key)
        if task is None:
            task = self._tasks[key] = self._progress.add_task(
                label.description, total=max(total, 1), unit=label.unit
            )
        return task


def report_graph_build(retriever: Any, board: ProgressBoard) -> bool:
    """Point the PPR graph builder's ``(stage, done, total)`` reports at ``board``, where the
    installed expansion makes them (a ``progress`` attribute on the index's PPR retriever,
    ``IndexParts.ppr()``: cheap, the graph itself is built on first use);
    True if it does. Without it, the graph's phrase embedding still shows as an
    ``embed N texts`` bar through the embedder's callback."""
    if not hasattr(retriever, "progress"):
        return False
    retriever.progress = board.graph_stages()
    return True


def quiet_third_party() -> None:
    """Switch off other libraries' progress bars and chatter for this process (before they
    are imported): transformers' and huggingface_hub's bars and info logs, and tqdm.

    Each variable is set only when the user has not set it, so ``TQDM_DISABLE=0`` or
    ``TRANSFORMERS_VERBOSITY=info`` still win.
    """
    for name, value in (
        ("HF_HUB_DISABLE_PROGRESS_BARS", "1"),
        ("TRANSFORMERS_VERBOSITY", "error"),
        ("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1"),
        ("TQDM_DISABLE", "1"),
    ):
        os.environ.setdefault(name, value)
