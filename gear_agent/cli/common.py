"""What every CLI command shares: settings with overrides, opening the index, error reporting."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console

from gear_agent.errors import GearError
from gear_agent.text.terminal import printable

if TYPE_CHECKING:
    from gear_agent.config import GearSettings

IndexOpt = Annotated[Path | None, typer.Option(
    "--index", "-i", metavar="DIR", help="Index directory (GEAR_INDEX_DIR; default: .gear/index).")]
"""The ``--index`` option every command that reads an index takes, worded once."""



class SafeConsole(Console):
    """A rich ``Console`` that removes terminal escape sequences and control characters
    from every string it renders (print arguments, tree labels, table cells), so a passage,
    a model reply or a trace file cannot drive the terminal. Our own styling is markup,
    which rich turns into escapes after this step."""

    def render_str(self, text: str, **kwargs: Any) -> Any:  # type: ignore[override]
        return super().render_str(printable(text), **kwargs)


console = SafeConsole(stderr=True)
"""Progress, warnings, hints and errors: standard error."""
results = SafeConsole()
"""What a command was asked for (tables, counts, answers): standard output, so
``gear info | grep passages`` finds it."""
F = TypeVar("F", bound=Callable[..., Any])


def load_settings(index: Path | None = None, **overrides: Any) -> GearSettings:
    """Settings from the environment, with the command line's non-None values on top."""
    from gear_agent.config import settings_from  # pydantic-settings: not on `gear --help`'s path

    values = {k: v for k, v in overrides.items() if v is not None}
    if index is not None:
        values["index_dir"] = index
    return settings_from(**values)


def reports_errors(command: F) -> F:
    """Turn the project's own errors into one red line and exit status 2, not a traceback."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except GearError as exc:
            console.print(f"[bold red]error:[/] {_one_line(exc)}", highlight=False, soft_wrap=True)
            raise typer.Exit(2) from None
        except KeyboardInterrupt:
            console.print("[yellow]interrupted: committed work is kept; run again to resume[/]")
            raise typer.Exit(130) from None
        except OSError as exc:
            console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
            raise typer.Exit(2) from None

    return wrapper  # type: ignore[return-value]


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return " ".join(text.split()) if "\n" in text and len(text) < 400 else text
