"""How the ``gear`` command reads: ``-h``, ``--version``, flags without a ``<bool>`` type,
and a bad argument answered in one line (``error: ...``), like the project's own errors.

Typer's own usage errors print a usage block and a boxed panel; a newcomer who typed
``--k 0`` needs one line that names the option, the value and where help is.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Any, NoReturn

import typer
from rich.markup import escape
from typer.core import TyperCommand, TyperGroup

try:  # typer >= 0.24 carries its own copy of click
    from typer._click.exceptions import UsageError
except ImportError:  # pragma: no cover - older typer on click
    from click.exceptions import UsageError

HELP_OPTIONS = ["-h", "--help"]
CONTEXT = {"help_option_names": HELP_OPTIONS}
"""Context settings of every command: ``-h`` as well as ``--help``."""


def package_version() -> str:
    """The installed gear-agent version ("unknown" when run from a bare checkout).

    Example:
        >>> package_version() != ""
        True
    """
    try:
        return version("gear-agent")
    except PackageNotFoundError:
        return "unknown"


def show_version(value: bool) -> None:
    """``--version``: print ``gear-agent X.Y.Z`` and stop."""
    if value:
        typer.echo(f"gear-agent {package_version()}")
        raise typer.Exit()


def _flags_untyped(params: list[Any]) -> list[Any]:
    """Flags take no value, so their help shows no type (typer would print ``<bool>``)."""
    for param in params:
        if getattr(param, "is_flag", False) and getattr(param, "metavar", "") is None:
            param.metavar = ""
    return params


def _one_line(exc: UsageError) -> NoReturn:
    """Print a usage error as one line with where help is, and exit with status 2."""
    from gear_agent.cli.common import console

    ctx = getattr(exc, "ctx", None)
    where = f" (see `{ctx.command_path} -h`)" if ctx is not None else ""
    message = " ".join(exc.format_message().split())
    console.print(f"[bold red]error:[/] {escape(message)}{escape(where)}", highlight=False,
                  soft_wrap=True)
    raise typer.Exit(2)


class GearCommand(TyperCommand):
    """A command whose flags show no type in its help."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _flags_untyped(super().get_params(ctx))


class GearGroup(TyperGroup):
    """The ``gear`` group: usage errors of any subcommand as one line (exit status 2)."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _flags_untyped(super().get_params(ctx))

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().make_context(*args, **kwargs)
        except UsageError as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":  # `gear` alone: the help, as usual
                raise
            _one_line(exc)

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except UsageError as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":
                raise
            _one_line(exc)
