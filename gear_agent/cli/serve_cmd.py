"""`gear serve`: the agent over HTTP with LangServe (needs ``pip install gear-agent[serve]``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gear_agent.cli.common import IndexOpt, console, load_settings, reports_errors


@reports_errors
def serve(
    host: Annotated[str, typer.Option(metavar="HOST", help="Interface to listen on; 0.0.0.0 exposes it to the network.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(metavar="N", help="TCP port.")] = 8000,
    index: IndexOpt = None,
    trace_dir: Annotated[Path | None, typer.Option(metavar="DIR", help="Write JSON Lines run trees here (GEAR_TRACE_DIR).")] = None,
    playground: Annotated[bool, typer.Option(help="Serve the LangServe playgrounds (/gear/ask/playground/, /gear/playground/).")] = True,
    log_level: Annotated[str, typer.Option(metavar="LEVEL", help="Log level of uvicorn: critical, error, warning, info, debug.")] = "info",
) -> None:
    """Serve the web page at / (ask, explore the graph, manage documents) and the agent
    over HTTP: POST /gear/invoke, /gear/stream, /gear/batch; GET /health."""
    from gear_agent.agent.graph import build_agent
    from gear_agent.cli.checks import require_index
    from gear_agent.open_index import OpenIndex
    from gear_agent.serve.app import create_app, run_server  # GearError with the pip hint if absent

    settings = load_settings(index, trace_dir=trace_dir)
    require_index(settings)  # no index, or another model's: say so before loading the model
    runtime = OpenIndex.open(settings)
    agent = build_agent(settings, runtime=runtime)
    app = create_app(agent, settings, playground=playground, runtime=runtime)
    for line in startup_lines(host, port, settings.index_dir, playground=playground):
        console.print(line, highlight=False, markup=False, soft_wrap=True)
    run_server(app, host=host, port=port, log_level=log_level, settings=settings)


def startup_lines(host: str, port: int, index: Path, *, playground: bool) -> list[str]:
    """What ``gear serve`` says when it starts: the page first, then the API and the
    readable playground (not the node-update one, which is several screens of JSON).

    Example:
        >>> startup_lines("127.0.0.1", 8000, Path("idx"), playground=True)[0]
        'GEAR on http://127.0.0.1:8000/  (index: idx): ask, explore the graph, manage documents'
    """
    base = f"http://{host}:{port}"
    lines = [f"GEAR on {base}/  (index: {index}): ask, explore the graph, manage documents",
             f"API: POST {base}/gear/invoke, {base}/gear/stream ({{\"input\": {{\"question\": ...}}}} "
             "or {\"input\": {\"messages\": [...]}})"]
    if playground:
        lines.append(f"playground: {base}/gear/ask/playground/ (the answer as text; "
                     f"{base}/gear/playground/ shows the raw node updates)")
    return lines
