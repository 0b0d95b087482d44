"""The `gear` command line: index, info, delete, search, eval, serve, trace."""

from __future__ import annotations

import typer

from gear_agent.cli import eval_cmd, index_cmd, serve_cmd, trace_cmd

app = typer.Typer(
    name="gear",
    help="GEAR: graph-enhanced multi-step retrieval over your corpus.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.command("index")(index_cmd.index)
app.command("info")(index_cmd.info)
app.command("delete")(index_cmd.delete)
app.command("search")(eval_cmd.search)
app.command("eval")(eval_cmd.eval_)
app.command("serve")(serve_cmd.serve)
app.add_typer(trace_cmd.app, name="trace")


def main() -> None:
    """Entry point of the `gear` script."""
    app()
