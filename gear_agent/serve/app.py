"""The FastAPI app: the agent under ``/gear`` through LangServe, ``GET /health``, and
exception handlers that answer in JSON words, never with a stack trace.

Routes (LangServe): ``/gear/invoke``, ``/gear/batch``, ``/gear/stream`` (one event per
node update, in node order), ``/gear/stream_log``, ``/gear/stream_events``,
``/gear/input_schema``, ``/gear/output_schema``, ``/gear/playground/``.

Status codes: 422 for a bad request body (the ``detail`` says which field and why), 400
for a question the agent refuses or a body that is not UTF-8 JSON, 502 when the chat model
fails, 504 when it times out; the limits of :mod:`gear_agent.serve.limits` answer 401, 408,
413, 415 and 503 (with ``Retry-After``) before a request reaches the agent.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

from gear_agent._deprecated import NEXT_REMOVAL, warn_deprecated
from gear_agent.errors import GearError

try:
    import uvicorn  # noqa: F401  (the serve extra: gear serve runs it)
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse
    from langchain_core.runnables import Runnable, RunnableGenerator, RunnableLambda
    from langserve import add_routes
    from pydantic import ValidationError
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise GearError(
        f"the GEAR server needs LangServe and FastAPI ({exc.name or exc} is missing): "
        "pip install gear-agent[serve]"
    ) from exc

from gear_agent.agent.streaming import RunEventMerger
from gear_agent.config import AgentSettings, GearSettings
from gear_agent.llm.client import LLMClient
from gear_agent.llm.errors import LLMCallError, LLMError
from gear_agent.open_index import OpenIndex
from gear_agent.parts import IndexParts, index_parts
from gear_agent.serve.health import HealthFirst
from gear_agent.serve.limits import RequestGuard
from gear_agent.serve.schemas import GearRequest, GearResponse, request_model
from gear_agent.serve.site_guard import SiteGuard, allowed_hosts, check_cors

if TYPE_CHECKING:
    from langchain_core.callbacks import BaseCallbackHandler

    from gear_agent.retrieval.base import Retriever

logger = logging.getLogger(__name__)

PATH = "/gear"
"""Where the agent's LangServe routes live."""

NO_CHAT_MODEL = ("No chat model is configured, so Ask only ranks passages: set OPENAI_API_KEY, "
                 "OPENAI_BASE_URL or GEAR_LLM_MODEL=provider:model and restart gear serve.")
"""What the server says (in the Ask view, and on ``/gear/...``) when it runs without a chat model."""


def gear_runnable(
    agent: Runnable, settings: AgentSettings, callbacks: list[BaseCallbackHandler] | None = None
) -> Runnable:
    """The agent behind a request check: ``GearRequest`` dict in, the agent's output out.

    The request is validated again here (so a direct Python caller gets the same checks
    as an HTTP one) and mapped to the agent's input state; overrides left unset are
    dropped, so the server's settings apply. ``stream`` yields one ``{node: update}``
    dict per finished node, in order, and ``{"answer_token": text}`` for each piece of the
    answer a streaming chat model writes; ``invoke`` returns the final output.

    Args:
        agent: The compiled GEAR graph (``build_agent``).
        settings: The agent's section; ``max_question_chars`` bounds the question.
        callbacks: Handlers attached to every run (e.g. a ``JsonlTracer``).
    """
    model = request_model(settings.max_question_chars)

    def to_state(request: dict[str, Any] | GearRequest) -> dict[str, Any]:
        data = request.model_dump() if isinstance(request, GearRequest) else request
        return model.model_validate(data).to_state()

    # Pregel.invoke always returns the final values; stream follows ``stream_mode``: node
    # updates, and the chat models' tokens (of which the answer's are passed on).
    modes = ["updates", "messages"]
    updates = agent.copy(update={"stream_mode": modes}) if hasattr(agent, "copy") else agent
    plain = RunnableGenerator(_plain_updates, _aplain_updates, name="gear_updates")
    chain = RunnableLambda(to_state, name="gear_request") | updates | plain
    chain = chain.with_types(input_type=model, output_type=GearResponse)
    config: dict[str, Any] = {"run_name": "gear"}
    if callbacks:
        config["callbacks"] = callbacks
    return chain.with_config(config)


ANSWER_TOKEN = "answer_token"
"""The key of a ``/gear/stream`` event carrying a piece of the answer's text."""


class _StreamChunks:
    """The chain's output chunks: ``{node: update}`` per finished node (``Overwrite``
    markers replaced by their values), ``{"answer_token": text}`` per piece of the answer
    a streaming model writes, or the final output itself (``invoke``)."""

    def __init__(self) -> None:
        self.merger = RunEventMerger()

    def of(self, chunk: Any) -> list[Any]:
        if isinstance(chunk, dict):  # ``invoke``: the final values
            return [chunk]
        if not (isinstance(chunk, tuple) and len(chunk) == 2):
            return []
        out: list[Any] = []
        for event in self.merger.events(*chunk):
            if event.kind == "update":
                out.append({event.node: event.data})
            elif event.kind == "token":
                out.append({ANSWER_TOKEN: event.data["text"]})
        return out


def _plain_updates(chunks: Iterator[Any]) -> Iterator[Any]:
    plain = _StreamChunks()
    for chunk in chunks:
        yield from plain.of(chunk)


async def _aplain_updates(chunks: AsyncIterator[Any]) -> AsyncIterator[Any]:
    plain = _StreamChunks()
    async for chunk in chunks:
        for item in plain.of(chunk):
            yield item


def create_app(
    agent: Runnable | None,
    settings: GearSettings,
    *,
    callbacks: list[BaseCallbackHandler] | None = None,
    playground: bool = True,
    index: IndexParts | OpenIndex | None = None,
    llm: LLMClient | None = None,
    host: str | None = None,
    read_only: bool | None = None,
    runtime: OpenIndex | None = None,
) -> FastAPI:
    """The FastAPI app serving ``agent`` under ``/gear`` and ``GET /health``, and, given
    the ``index`` the agent was built on, the web page at ``/`` (Ask, Explore, Documents;
    :mod:`gear_agent.serve.web`).

    Args:
        agent: The compiled GEAR graph (``build_agent``); None when no chat model is
            configured: the page still searches, explores and manages documents, and the
            agent's routes answer 503 with :data:`NO_CHAT_MODEL`.
        settings: The settings the agent was built with.
        callbacks: Handlers attached to every run; a ``JsonlTracer`` when
            ``settings.trace_dir`` is set and None is given.
        playground: Serve the LangServe playgrounds (``/gear/playground/``, and the
            readable ``/gear/ask/playground/``).
        index: The parts of the index the agent runs on (:func:`~gear_agent.parts.index_parts`:
            the page's retrievers share them), or the open index; the web page is served
            when given.
        llm: The chat client the page's document extraction uses; built from the
            settings on first use when None.
        host: The address the server is bound to (allowed as a ``Host`` besides loopback
            and ``serve_allowed_hosts``: :mod:`gear_agent.serve.site_guard`).
        read_only: Serve no route that writes to the index; ``settings.serve_read_only``
            when None.
        runtime: Deprecated name of ``index``.

    Raises:
        GearError: ``GEAR_SERVE_CORS_ORIGINS='*'`` beside write routes without the opt-in.

    Returns:
        The app; run it with ``uvicorn.run(app, host=..., port=...)``.

    Example:
        >>> app = create_app(build_agent(settings), settings)  # doctest: +SKIP
        >>> uvicorn.run(app, host="127.0.0.1", port=8000)  # doctest: +SKIP
    """
    if runtime is not None:
        warn_deprecated("create_app(runtime=...) is now create_app(index=...)", removed_in=NEXT_REMOVAL)
        if index is not None:
            raise TypeError("create_app() takes index= or its old name runtime=, not both")
        index = runtime
    read_only = settings.serve_read_only if read_only is None else read_only
    check_cors(settings, writes=index is not None and not read_only)
    if callbacks is None and settings.trace_dir is not None:
        from gear_agent.tracing.jsonl_tracer import JsonlTracer

        callbacks = [JsonlTracer.from_settings(settings)]
    app = FastAPI(
        title="GEAR agent",
        version="1",
        description="Graph-enhanced multi-step retrieval: ask a question, get passages, "
        "the gist memory and an answer.",
    )
    if agent is not None:
        _add_agent_routes(app, agent, settings, callbacks, playground=playground)
    else:
        @app.api_route(PATH + "/{rest:path}", methods=["GET", "POST"], include_in_schema=False)
        async def no_agent(rest: str) -> JSONResponse:
            return JSONResponse(status_code=503, content={"message": NO_CHAT_MODEL})

    if index is not None:
        from gear_agent.registry import make_retriever
        from gear_agent.serve.web import WebPage, add_web_routes

        def chat_client() -> LLMClient:
            return llm if llm is not None else LLMClient.from_settings(settings)

        parts = index if isinstance(index, IndexParts) else index_parts(index)

        def retriever_of(name: str) -> Retriever:
            return make_retriever(name, parts)

        page = WebPage(agent, parts.store, parts.settings, chat_client, retriever_of,
                       read_only=read_only, no_agent=None if agent is not None else NO_CHAT_MODEL)
        add_web_routes(app, page)

    status = {
        "status": "ok",
        "backend": settings.backend,
        "llm_model": settings.llm_model if agent is not None else None,
        "max_question_chars": settings.max_question_chars,
    }

    @app.get("/health")
    async def health() -> dict[str, Any]:
        """Liveness, from memory (never behind other work): the service is up, with the
        model it serves (no paths of this machine). Answered by :class:`HealthFirst` ahead
        of the limits and the routing; this route documents it in the schema."""
        return status

    if settings.snapshot_every:  # GEAR_SNAPSHOT_EVERY (gear_agent/store/snapshot_timer.py)
        from gear_agent.store.snapshot_timer import SnapshotTimer, with_timer

        app.state.snapshots = SnapshotTimer(settings)
        app.state.snapshots.start()  # now: `gear serve` wraps the app in WarmingApp, which runs no lifespan
        app.router.lifespan_context = with_timer(app.router.lifespan_context, app.state.snapshots)

    _add_error_handlers(app)
    app.add_middleware(RequestGuard, settings=settings)
    app.add_middleware(HealthFirst, facts=status)  # outside the limits: never behind other work
    if settings.allowed_origins:  # off unless configured: so preflights are answered
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(CORSMiddleware, allow_origins=list(settings.allowed_origins),
                           allow_methods=["GET", "POST"],
                           allow_headers=["Authorization", "Content-Type"])
    app.add_middleware(SiteGuard, settings=settings, hosts=allowed_hosts(settings, host),
                       read_only=read_only)  # outermost: Host and Origin before anything
    return app


def _add_agent_routes(app: FastAPI, agent: Runnable, settings: GearSettings,
                      callbacks: list[BaseCallbackHandler] | None, *, playground: bool) -> None:
    """The agent's LangServe routes under ``/gear`` (and the readable ``/gear/ask``)."""
    runnable = gear_runnable(agent, settings, callbacks)
    model = request_model(settings.max_question_chars)
    endpoints = ["invoke", "batch", "stream", "stream_log", "stream_events",
                 "input_schema", "output_schema", "config_schema"]
    if playground:
        endpoints.append("playground")
    add_routes(
        app,
        runnable,
        path=PATH,
        input_type=model,
        output_type=GearResponse,
        enabled_endpoints=endpoints,
    )
    if playground:  # the same agent as text, answer first: /gear/ask/playground/
        from gear_agent.serve.playground import ASK_PATH, answer_runnable

        add_routes(app, answer_runnable(agent, settings, callbacks), path=ASK_PATH,
                   input_type=model, output_type=str,
                   enabled_endpoints=["invoke", "stream", "stream_log", "input_schema",
                                      "output_schema", "config_schema", "playground"])


def _add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def bad_body(_request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        return JSONResponse(
            status_code=422,
            content={"message": _describe(errors), "detail": _plain(errors)},
        )

    @app.exception_handler(ValidationError)
    async def bad_item(request: Request, exc: ValidationError) -> JSONResponse:
        # LangServe validates each /batch input itself (a pydantic error, not FastAPI's);
        # any other model failing validation is the server's fault.
        if exc.title != GearRequest.__name__:
            return await internal(request, exc)
        errors = exc.errors()
        return JSONResponse(
            status_code=422, content={"message": _describe(errors), "detail": _plain(errors)}
        )

    @app.exception_handler(GearError)
    async def refused(_request: Request, exc: GearError) -> JSONResponse:
        return JSONResponse(status_code=400, content={"message": str(exc)})

    @app.exception_handler(LLMCallError)
    async def llm_failed(_request: Request, exc: LLMCallError) -> JSONResponse:
        status = 504 if is_timeout(exc.last_error) else 502
        logger.warning("request failed at the chat model: %s", exc)
        return JSONResponse(status_code=status, content={"message": str(exc), "node": exc.node})

    @app.exception_handler(LLMError)
    async def llm_error(_request: Request, exc: LLMError) -> JSONResponse:
        logger.warning("request failed at the chat model: %s", exc)
        return JSONResponse(status_code=502, content={"message": str(exc)})

    @app.exception_handler(Exception)
    async def internal(_request: Request, exc: Exception) -> JSONResponse:
        # Anything unexpected: logged with its traceback here, never sent to the client.
        logger.exception("request failed: %s", type(exc).__name__, exc_info=exc)
        # Starlette sends this outside every middleware and then drops the connection:
        # say so, and add the header the others get from the site guard.
        return JSONResponse(status_code=500, content={"message": "internal server error"},
                            headers={"Connection": "close", "X-Content-Type-Options": "nosniff"})

    @app.exception_handler(TimeoutError)
    async def timed_out(_request: Request, exc: TimeoutError) -> JSONResponse:
        return JSONResponse(status_code=504, content={"message": f"timed out: {exc}"})


def is_timeout(exc: BaseException | None) -> bool:
    """Whether ``exc`` is a timeout (builtin, asyncio, httpx or OpenAI kinds)."""
    if exc is None:
        return False
    return isinstance(exc, TimeoutError) or "Timeout" in type(exc).__name__


def _describe(errors: Any) -> str:
    parts = []
    for error in errors:
        if not isinstance(error, dict):  # e.g. "Invalid JSON body"
            parts.append(str(error))
            continue
        loc = [str(p) for p in error.get("loc", ()) if p not in ("body",)]
        where = ".".join(loc) or "body"
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    return "invalid request: " + "; ".join(parts) if parts else "invalid request"


def _plain(errors: Any) -> list[dict[str, Any]]:
    """Errors without the raw ``ctx`` objects (which may not be JSON-serialisable)."""
    return [
        {"loc": list(e.get("loc", ())), "msg": e.get("msg"), "type": e.get("type")}
        if isinstance(e, dict) else {"loc": [], "msg": str(e), "type": "invalid"}
        for e in errors
    ]
