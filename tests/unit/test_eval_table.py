"""`gear eval`'s tables read in full wherever they go: a rich table on a terminal, Markdown
in a file or a pipe (a rich table fitted to 80 columns there cut "R@2" to "R@…")."""

from __future__ import annotations

import io

from rich.console import Console
from typer.testing import CliRunner

from gear_agent.cli import app
from gear_agent.cli.eval_cmd import _print_rows
from gear_agent.cli.tables import Grid, markdown, print_grid
from gear_agent.config import GearSettings
from gear_agent.evaluation.runner import EvalRow, NodeCost
from gear_agent.registry import DEFAULT_RETRIEVER

SETTINGS = GearSettings(llm_model="recorded")
ROWS = [
    EvalRow("hybrid+naive_ge", {2: 0.438, 5: 0.636, 10: 0.781, 15: 0.796}, 29.2, 51),
    EvalRow("gear", {2: 0.637, 5: 0.923, 10: 0.961, 15: 0.974}, 591.5, 51, em=0.745, f1=0.82,
            tokens_per_question=0.0, iterations_per_question=1.71, calls_per_question=5.12,
            counted_tokens_per_question=5054.0,
            by_node={"read": NodeCost(1.71, 3228.0, 101.0), "answer": NodeCost(1.0, 740.0, 76.0)}),
]


def _printed(monkeypatch, terminal: bool, width: int = 80) -> str:
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=terminal, color_system=None)
    monkeypatch.setattr("gear_agent.cli.eval_cmd.SafeConsole", lambda: console)
    _print_rows(ROWS, SETTINGS)
    return buffer.getvalue()


def test_a_file_or_pipe_gets_every_column_in_full_as_markdown(monkeypatch) -> None:
    text = _printed(monkeypatch, terminal=False, width=80)
    lines = text.splitlines()
    assert ("| retriever | R@2 | R@5 | R@10 | R@15 | ms/query | EM | F1 | calls/q | tokens/q "
            "| billed/q | iter/q |") in lines
    assert "| gear | 63.7 | 92.3 | 96.1 | 97.4 | 591.5 | 74.5 | 82.0 | 5.12 | 5,054 | 0 | 1.71 |" in lines
    assert "| hybrid+naive_ge | 43.8 | 63.6 | 78.1 | 79.6 | 29.2 | - | - | - | - | - | - |" in lines
    assert "| gear | read | 1.71 | 3,228 | 101 |" in lines  # the per-node table too
    assert "…" not in text


def test_a_terminal_gets_a_rich_table(monkeypatch) -> None:
    text = _printed(monkeypatch, terminal=True, width=200)
    assert "│ gear" in text and "R@15" in text and "| retriever |" not in text


def test_markdown_cells_cannot_break_the_table() -> None:
    grid = Grid("t", ("name", "n"), [("a|b\nc\x1b[31m", "1")])
    assert markdown(grid).splitlines()[-1] == "| a\\|b c | 1 |"


def test_print_grid_writes_markdown_to_a_plain_file() -> None:
    buffer = io.StringIO()
    print_grid(Grid("title", ("a", "b"), [("x", "1")]), Console(file=buffer))
    assert buffer.getvalue() == "title\n\n| a | b |\n|---|---:|\n| x | 1 |\n\n"


def test_gear_retrievers_names_the_default_and_why() -> None:
    result = CliRunner().invoke(app, ["retrievers"])  # not a terminal: Markdown
    assert result.exit_code == 0, result.output
    assert f"| {DEFAULT_RETRIEVER} (default) |" in result.output
    assert f"default: {DEFAULT_RETRIEVER}, the best LLM-free row on both dev sets" in result.output

