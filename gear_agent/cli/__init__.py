"""The `gear` command line: index, info, delete, check, migrate, snapshot, search, ask, eval, retrievers,
serve, trace, graph, sirerag.

Importing this package loads typer and rich only: every command imports what it needs
when it runs, so `gear --help` and a failed check answer in well under a second.
"""

from __future__ import annotations

from typing import Annotated

import typer

from gear_agent.cli import (
    ask_cmd,
    check_cmd,
    eval_cmd,
    graph_cmd,
    index_cmd,
    search_cmd,
    serve_cmd,
    sirerag_cmd,
    snapshot_cmd,
    trace_cmd,
)
from gear_agent.cli.progress import quiet_third_party
from gear_agent.cli.usage import CONTEXT, GearCommand, GearGroup, show_version

__all__ = ["app", "main"]

app = typer.Typer(
    name="gear",
    help="GEAR: graph-enhanced multi-step retrieval over your corpus.\n\n"
         "Start with `gear index CORPUS --openie FILE` (or `--extract`), then "
         "`gear search \"question\"`; `gear COMMAND -h` shows a command's options.",
    cls=GearGroup,
    context_settings=CONTEXT,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def _gear(
    version: Annotated[bool, typer.Option(
        "--version", callback=show_version, is_eager=True, help="Print the version and exit.",
    )] = False,
) -> None:
    """Before any command: other libraries' progress bars off (ours are drawn by rich)."""
    quiet_third_party()


app.command("index", cls=GearCommand)(index_cmd.index)
app.command("info", cls=GearCommand)(index_cmd.info)
app.command("delete", cls=GearCommand)(index_cmd.delete)
app.command("check", cls=GearCommand)(check_cmd.check)
app.command("migrate", cls=GearCommand)(check_cmd.migrate)
app.command("snapshot", cls=GearCommand)(snapshot_cmd.snapshot)
app.command("search", cls=GearCommand)(search_cmd.search)
app.command("ask", cls=GearCommand)(ask_cmd.ask)
app.command("eval", cls=GearCommand)(eval_cmd.eval_)
app.command("retrievers", cls=GearCommand)(eval_cmd.retrievers_)
app.command("serve", cls=GearCommand)(serve_cmd.serve)
app.add_typer(trace_cmd.app, name="trace")
app.add_typer(graph_cmd.app, name="graph")
app.add_typer(sirerag_cmd.app, name="sirerag")


def main() -> None:
    """Entry point of the `gear` script."""
    import sys

    bad = undecodable_argument(sys.argv[1:])
    if bad is not None:
        sys.stderr.write(f"error: {bad}\n")
        raise SystemExit(2)
    app()


def undecodable_argument(arguments: list[str]) -> str | None:
    """A one-line message when an argument holds bytes that are not UTF-8, else None.

    Python hands such bytes over as lone surrogates, which fail later when printed or
    encoded; they are refused here, before any work.

    Example:
        >>> undecodable_argument(["search", "who\\udcff"])
        'argument 2 is not valid UTF-8 (byte 0xff): pass text in UTF-8'
    """
    for number, argument in enumerate(arguments, start=1):
        for char in argument:
            if "\udc80" <= char <= "\udcff":
                return f"argument {number} is not valid UTF-8 (byte 0x{ord(char) - 0xDC00:02x}): pass text in UTF-8"
            if "\ud800" <= char <= "\udfff":
                return f"argument {number} is not valid text: pass text in UTF-8"
    return None
