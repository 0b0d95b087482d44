"""A result table that reads well wherever it goes: a rich table on a terminal, Markdown
(full width, one line a row) in a file or a pipe.

Example:
    >>> print(markdown(Grid("rows", ("retriever", "R@5"), [("ppr", "74.7")])))
    rows
    <BLANKLINE>
    | retriever | R@5 |
    |---|---:|
    | ppr | 74.7 |
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.console import Console
from rich.table import Table

from gear_agent.text.terminal import printable


@dataclass(frozen=True)
class Grid:
    """A titled table of text cells; the first ``left`` columns are labels (left-aligned),
    the others figures (right-aligned)."""

    title: str
    columns: tuple[str, ...]
    rows: list[Sequence[str]] = field(default_factory=list)
    left: int = 1


def _cell(text: str) -> str:
    return printable(text).replace("\n", " ").replace("|", "\\|")


def markdown(grid: Grid) -> str:
    """The grid as a Markdown table under its title: no column is ever cut."""
    rule = "|" + "|".join("---" if i < grid.left else "---:" for i in range(len(grid.columns))) + "|"
    lines = [_cell(grid.title), "", "| " + " | ".join(_cell(c) for c in grid.columns) + " |", rule]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in grid.rows]
    return "\n".join(lines)


def print_grid(grid: Grid, out: Console) -> None:
    """A rich table when ``out`` is a terminal; else Markdown, so a file or a pipe gets every
    column at full width (a rich table is fitted to 80 columns there and cuts headers)."""
    if not out.is_terminal:
        out.file.write(markdown(grid) + "\n\n")
        out.file.flush()
        return
    table = Table(title=grid.title)
    for i, column in enumerate(grid.columns):
        table.add_column(column, justify="left" if i < grid.left else "right")
    for row in grid.rows:
        table.add_row(*row)
    out.print(table)
