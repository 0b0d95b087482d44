"""`gear serve`: the agent over HTTP with LangServe (needs ``pip install gear-agent[serve]``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gear_agent.cli.common import console, load_settings, reports_errors


@reports_errors
def serve(
    host: Annotated[str, typer.Option(help="Interface to listen on; 0.0.0.0 exposes it.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8000,
    index: Annotated[Path | None, typer.Option("--index", help="Index folder (GEAR_INDEX_DIR).")] = None,
    trace_dir: Annotated[Path | None, typer.Option(help="Write JSON Lines run trees here (GEAR_TRACE_DIR).")] = None,
    playground: Annotated[bool, typer.Option(help="Serve the playground at /gear/playground/.")] = True,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
) -> None:
    """Serve the agent: POST /gear/invoke, /gear/batch, /gear/stream; GET /health."""
    from gear_agent.agent.graph import build_agent
    from gear_agent.cli.checks import require_index
    from gear_agent.runtime import Runtime
    from gear_agent.serve.app import create_app, run_server  # GearError with the pip hint if absent

    settings = load_settings(index, trace_dir=trace_dir)
    require_index(settings)  # no index, or another model's: say so before loading the model
    runtime = Runtime.open(settings)
    agent = build_agent(settings, runtime=runtime)
    app = create_app(agent, settings, playground=playground, runtime=runtime)
    console.print(f"GEAR agent on http://{host}:{port}/gear  (index: {settings.index_dir})")
    if playground:
        console.print(f"playground: http://{host}:{port}/gear/playground/")
    run_server(app, host=host, port=port, log_level=log_level,
               header_timeout_s=settings.serve_header_timeout_s)
