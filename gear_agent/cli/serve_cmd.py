"""`gear serve`: the agent over HTTP with LangServe (needs ``pip install gear-agent[serve]``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gear_agent.cli.common import IndexOpt, console, load_settings, reports_errors

if TYPE_CHECKING:
    from gear_agent.config import GearSettings


@reports_errors
def serve(
    host: Annotated[str, typer.Option(metavar="HOST", help="Interface to listen on; 0.0.0.0 exposes it to the network.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(metavar="N", help="TCP port.")] = 8000,
    index: IndexOpt = None,
    trace_dir: Annotated[Path | None, typer.Option(metavar="DIR", help="Write JSON Lines run trees here (GEAR_TRACE_DIR).")] = None,
    playground: Annotated[bool, typer.Option(help="Serve the LangServe playgrounds (/gear/ask/playground/, /gear/playground/).")] = True,
    allowed_hosts: Annotated[str | None, typer.Option(metavar="NAMES", help="Comma-separated host names to answer to besides the bound address and loopback (GEAR_SERVE_ALLOWED_HOSTS); other Host headers get 400.")] = None,
    read_only: Annotated[bool, typer.Option("--read-only", help="Serve the page and the agent without the routes that add or delete documents (GEAR_SERVE_READ_ONLY).")] = False,
    log_level: Annotated[str, typer.Option(metavar="LEVEL", help="Log level of uvicorn: critical, error, warning, info, debug.")] = "info",
) -> None:
    """Serve the web page at / (ask, explore the graph, manage documents) and the agent
    over HTTP: POST /gear/invoke, /gear/stream, /gear/batch; GET /health.

    The port opens at once: /health says "warming" while the embedding model and the index
    load in the background, then "ok". Without a chat model the page still searches,
    explores and manages documents."""
    import uvicorn

    from gear_agent.cli.checks import require_index
    from gear_agent.serve.header_timeout import header_timeout_protocol
    from gear_agent.serve.limits import startup_notes
    from gear_agent.serve.process import prepare_server_process
    from gear_agent.serve.site_guard import allowed_hosts as hosts_of
    from gear_agent.serve.site_guard import check_cors
    from gear_agent.serve.warmup import WarmingApp

    overrides: dict[str, Any] = {"trace_dir": trace_dir}
    if allowed_hosts is not None:
        overrides["serve_allowed_hosts"] = allowed_hosts
    if read_only:
        overrides["serve_read_only"] = True
    settings = load_settings(index, **overrides)
    require_index(settings)  # no index, or another model's: say so before the port opens
    check_cors(settings, writes=not settings.serve_read_only)
    hosts = hosts_of(settings, host)
    failed: list[str] = []
    server: uvicorn.Server | None = None

    def stop(reason: str) -> None:
        failed.append(reason)
        if server is not None:
            server.should_exit = True

    warming = WarmingApp(lambda: build_app(settings, host, playground=playground), settings, hosts,
                         facts={"backend": settings.backend,
                                "max_question_chars": settings.max_question_chars},
                         on_failure=stop)
    for line in startup_lines(host, port, settings.index_dir, playground=playground,
                              read_only=settings.serve_read_only) + startup_notes(settings):
        console.print(line, highlight=False, markup=False, soft_wrap=True)
    if host in ("0.0.0.0", "::"):
        console.print(f"Host names answered: {', '.join(sorted(hosts))} (add yours with --allowed-hosts)",
                      highlight=False, markup=False, soft_wrap=True)
    server = uvicorn.Server(uvicorn.Config(
        warming, host=host, port=port, log_level=log_level,
        http=header_timeout_protocol(settings.serve_header_timeout_s)))
    prepare_server_process()  # before the loading and reading threads start
    warming.start()
    server.run()
    if failed:
        from gear_agent.errors import GearError

        raise GearError(f"the server could not start: {failed[0]}")


def build_app(settings: GearSettings, host: str, *, playground: bool) -> Any:
    """The real app (slow: the embedding model, the index, the agent and LangServe load).
    The index is opened once and its parts assembled once (:func:`gear_agent.parts.index_parts`):
    the agent and the page's retrievers share them (one PPR graph). Without a chat model the
    agent is left out: the page searches, explores and manages documents, and says how to
    configure one."""
    from gear_agent.agent.graph import build_graph
    from gear_agent.agent.models import ChatModels
    from gear_agent.llm.client import LLMClient
    from gear_agent.llm.errors import LLMConfigError
    from gear_agent.open_index import OpenIndex
    from gear_agent.parts import index_parts
    from gear_agent.serve.app import create_app  # GearError with the pip hint if absent

    parts = index_parts(OpenIndex.open(settings))
    try:
        models = ChatModels(settings, LLMClient.from_settings(settings))
    except LLMConfigError:
        from gear_agent.serve.app import NO_CHAT_MODEL

        console.print(NO_CHAT_MODEL, highlight=False, markup=False, soft_wrap=True)
        agent = None
    else:
        agent = build_graph(parts, models, settings).compile(name="gear")
    return create_app(agent, settings, playground=playground, index=parts, host=host)


def startup_lines(host: str, port: int, index: Path, *, playground: bool, read_only: bool = False) -> list[str]:
    """What ``gear serve`` says when it starts: the page first, then the API and the
    readable playground (not the node-update one, which is several screens of JSON).

    Example:
        >>> startup_lines("127.0.0.1", 8000, Path("idx"), playground=True)[0]
        'GEAR on http://127.0.0.1:8000/  (index: idx): ask, explore the graph, manage documents'
    """
    base = f"http://{host}:{port}"
    what = "ask and explore the graph (read-only)" if read_only else "ask, explore the graph, manage documents"
    lines = [f"GEAR on {base}/  (index: {index}): {what}",
             f"API: POST {base}/gear/invoke, {base}/gear/stream ({{\"input\": {{\"question\": ...}}}} "
             "or {\"input\": {\"messages\": [...]}})"]
    if playground:
        lines.append(f"playground: {base}/gear/ask/playground/ (the answer as text; "
                     f"{base}/gear/playground/ shows the raw node updates)")
    return lines
