"""Running the ``gear`` command line in-process, and what a one-line error looks like."""

from __future__ import annotations

from typer.testing import CliRunner

from gear_agent.cli import app

WIDE = {"COLUMNS": "200"}


def run_cli(*args: str, env: dict[str, str] | None = None):  # noqa: ANN201 - click's Result
    """``gear ARGS...`` with a wide terminal and ``env`` on top of the environment."""
    return CliRunner().invoke(app, list(args), env={**WIDE, **(env or {})})


def one_line_error(result) -> str:  # noqa: ANN001 - click's Result
    """Exit status 2, no traceback, exactly one line starting 'error:'; returns it."""
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.output
    return lines[0]
