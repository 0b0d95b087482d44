"""The web page at ``/``: Ask, Explore and Documents, over the index the server serves.

Hand-written HTML, CSS and plain JavaScript from ``gear_agent/serve/static/`` (no build
step, no third-party script, no request to any other host); graphs arrive as SVG drawn on
the server. The page's own JSON routes live under ``/ui/api/``:

=========================================  ==================================================
``GET  /ui/api/config``                     retrievers, defaults, limits
``POST /ui/api/ask/stream``                 server-sent events of one run (:mod:`.web_ask`)
``GET  /ui/api/entities?q=&offset=&limit=`` entities whose name contains ``q`` (a page)
``GET  /ui/api/entity?name=&hops=``         an entity's neighbourhood (SVG and triples)
``GET  /ui/api/passage/{id}``               a passage and its triples
``GET  /ui/api/documents?offset=&limit=&source=``  a page of passages with source and metadata
``POST /ui/api/documents/stream``           add a document; progress as server-sent events
``POST /ui/api/documents/preview-delete``   what a deletion would remove (removes nothing)
``POST /ui/api/documents/delete``           delete by ids and/or source
``GET  /ui/api/health``                     ``gear check`` and the index's size
=========================================  ==================================================

Every request passes the server's limits first (:mod:`gear_agent.serve.limits`): the two
``.../stream`` routes count as runs, every ``GET`` under ``/ui/api/`` as a read
(``GEAR_SERVE_MAX_READS``); bodies are JSON (an uploaded file is read in the
browser and sent as text), at most ``GEAR_SERVE_MAX_BODY_BYTES``; lists come a page at a
time (at most :data:`~gear_agent.serve._web_documents.MAX_LIST` passages or
:data:`~gear_agent.serve._web_explore.MAX_MATCHES` entities). With ``read_only`` the
two write routes are not served (:mod:`gear_agent.serve.site_guard` answers them 403).
"""

from __future__ import annotations

import asyncio
import base64
import functools
import json
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from typing import Any, Literal

from fastapi import APIRouter, FastAPI, Query
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from gear_agent.config import GearSettings
from gear_agent.errors import GearError
from gear_agent.filters import parse_where
from gear_agent.questions import check_question
from gear_agent.registry import RETRIEVERS, check_name
from gear_agent.retrieval.base import Retriever
from gear_agent.retrieval.filtering import checked_where
from gear_agent.serve import _web_explore as web_explore
from gear_agent.serve._web_ask import AGENT, ask_events, search_result
from gear_agent.serve._web_documents import MAX_LIST, DocumentError, Documents
from gear_agent.serve.memory import release_free_memory
from gear_agent.store import Store

logger = logging.getLogger(__name__)

TRIM_AFTER_S = 1.0
"""Seconds without a page read after which the heap's free pages go back to the system."""
HEALTH_REUSE_S = 5.0
"""How long the page's health report is reused while the index's generation stands still."""

STATIC = {"app.js": "text/javascript", "app.css": "text/css"}
"""The page's files besides ``index.html``, with their media types."""


class AskBody(BaseModel):
    """One question from the Ask page, with the thread so far for a follow-up."""

    model_config = ConfigDict(extra="forbid")
    question: str
    thread: list[dict[str, str]] = Field(default_factory=list, max_length=40)
    retriever: str = AGENT
    k: int = Field(5, ge=1, le=50)
    where: list[str] = Field(default_factory=list, max_length=20)


class AddBody(BaseModel):
    """A document: a file's name and text (a PDF's or DOCX's bytes as base64), or pasted
    text with a title."""

    model_config = ConfigDict(extra="forbid")
    name: str = ""
    text: str
    encoding: Literal["text", "base64"] = "text"
    title: str | None = None
    source: str | None = None
    extract: bool = False


class DeleteBody(BaseModel):
    """Passages to delete: ids and/or one source."""

    model_config = ConfigDict(extra="forbid")
    ids: list[str] = Field(default_factory=list, max_length=10_000)
    source: str | None = None


def _json_response(work: Callable[..., Any], *args: Any) -> Response:
    """``work(*args)`` as a JSON response, encoded on the calling thread."""
    body = json.dumps(work(*args), ensure_ascii=False, separators=(",", ":"), default=_plain_json)
    return Response(body.encode(), media_type="application/json")


def _plain_json(value: Any) -> Any:
    """Dates as ISO text, anything else JSON lacks as its ``str``."""
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def _sse(name: str, data: Any) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False, default=str)}\n\n".encode()


async def _guarded(events: AsyncIterator[tuple[str, Any]]) -> AsyncIterator[bytes]:
    """The events as server-sent events; a failure becomes a last ``error`` event whose
    message is the project's own one-line error, never a traceback."""
    try:
        async for name, data in events:
            yield _sse(name, data)
    except GearError as exc:
        yield _sse("error", {"message": " ".join(str(exc).split())})
    except Exception as exc:  # logged with its traceback; the page gets one line
        logger.exception("page request failed: %s", type(exc).__name__, exc_info=exc)
        yield _sse("error", {"message": "internal server error (see the server log)"})


def _stream(events: AsyncIterator[tuple[str, Any]]) -> StreamingResponse:
    return StreamingResponse(_guarded(events), media_type="text/event-stream",
                             headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})


class WebPage:
    """The page's routes over one index and agent; keeps the retrievers it builds.

    Args:
        agent: The compiled GEAR graph the server runs.
        store: Its index's store.
        settings: The server's settings (the page's defaults and limits; the documents'
            reading, extraction and health).
        llm: Returns the chat client (for extraction), or raises ``LLMConfigError``.
        retriever_of: Builds the retriever of a name of the table over the same index.
    """

    def __init__(self, agent: Any, store: Store, settings: GearSettings, llm: Callable[[], Any],
                 retriever_of: Callable[[str], Retriever], *, read_only: bool = False,
                 no_agent: str | None = None) -> None:
        self.agent, self.store, self.settings = agent, store, settings
        store.serving()  # read for weeks from several threads: the smaller footprint (Store.serving)
        self.read_only, self.no_agent = read_only, no_agent
        self.documents = Documents(store, settings, llm)
        self.entities = web_explore.EntityGraph(store)
        self._retriever_of = retriever_of
        self._retrievers: dict[str, Retriever] = {}
        self._lock = threading.Lock()
        self._health_lock = threading.Lock()
        self._health: tuple[float, int, dict[str, Any]] | None = None
        # The page's reads run on a few threads of their own (as many as may run at once,
        # GEAR_SERVE_MAX_READS), so the store's per-thread connections and caches stay few.
        self._reads = ThreadPoolExecutor(max_workers=settings.serve_max_reads, thread_name_prefix="gear-read")
        self._reading = 0
        self._trim: asyncio.TimerHandle | None = None

    async def read(self, work: Callable[..., Any], *args: Any) -> Response:
        """``work(*args)`` on the page's read threads, its answer encoded as JSON there too
        (the event loop only sends the bytes); once no read has run for
        :data:`TRIM_AFTER_S`, the heap's free pages go back to the system."""
        loop = asyncio.get_running_loop()
        self._reading += 1
        try:
            return await loop.run_in_executor(self._reads, functools.partial(_json_response, work, *args))
        finally:
            self._reading -= 1
            if self._reading == 0 and self._trim is None:
                self._trim = loop.call_later(TRIM_AFTER_S, self._trim_when_idle)

    def _trim_when_idle(self) -> None:
        self._trim = None
        if self._reading == 0:  # else the last read to end schedules it again
            self._reads.submit(release_free_memory)

    def retriever(self, name: str) -> Retriever:
        spec = check_name(name)
        if spec.needs_llm:
            raise GearError(f"the page ranks with LLM-free retrievers or the agent ({AGENT}); "
                            f"{spec.name} needs an LLM of its own")
        with self._lock:
            if spec.name not in self._retrievers:
                self._retrievers[spec.name] = self._retriever_of(spec.name)
            return self._retrievers[spec.name]

    def config(self) -> dict[str, Any]:
        s = self.settings
        agent = [] if self.agent is None else [AGENT]
        return {
            "retrievers": agent + [n for n, spec in RETRIEVERS.items() if not spec.needs_llm],
            "default_k": s.top_k, "max_question_chars": s.max_question_chars,
            "backend": s.backend, "llm_model": s.llm_model if self.agent is not None else None,
            "read_only": self.read_only, "no_agent": self.no_agent,
        }

    def health(self) -> dict[str, Any]:
        """``gear check``'s items and the index's size: one check at a time, its answer
        shared by the requests that arrive while it runs and reused while the index has
        not changed, for :data:`HEALTH_REUSE_S` seconds."""
        with self._health_lock:
            now, generation = time.monotonic(), self.store.generation()
            kept = self._health
            if kept is None or kept[1] != generation or now - kept[0] > HEALTH_REUSE_S:
                kept = self._health = (now, generation, self.documents.health())
            return kept[2]

    # ---- ask --------------------------------------------------------------------------
    def ask(self, body: AskBody) -> StreamingResponse:
        question = check_question(body.question, self.settings.max_question_chars)
        where = parse_where(body.where or None)  # a bad filter is a 400 here, before the stream
        checked_where(self.store, where)  # and so is one that no passage passes
        if body.retriever != AGENT:
            retriever = self.retriever(body.retriever)

            async def ranked() -> AsyncIterator[tuple[str, Any]]:
                yield "step", {"node": "retrieve", "iteration": 1, "text": f"ranking with {body.retriever}"}
                result = await run_in_threadpool(
                    search_result, self.store, retriever, body.retriever, question, body.k, where)
                yield "result", result

            return _stream(ranked())
        if self.agent is None:
            raise GearError(self.no_agent or "no chat model is configured")
        messages = [{"role": "assistant" if m.get("role") == "assistant" else "user",
                     "content": str(m.get("content", ""))} for m in body.thread]
        inputs: dict[str, Any] = {"messages": [*messages, {"role": "user", "content": question}],
                                  "top_k": body.k}
        if where is not None:
            inputs["where"] = where.to_dict()
        return _stream(ask_events(self.agent, inputs))

    # ---- documents ------------------------------------------------------------------------
    def add(self, body: AddBody) -> StreamingResponse:
        content: str | bytes = body.text
        if body.encoding == "base64":
            try:
                content = base64.b64decode(body.text, validate=True)
            except ValueError:
                raise DocumentError(f"{body.name or 'the file'}: the upload is not valid base64") from None
        passages = self.documents.read(body.name, content, title=body.title, source=body.source)
        if body.extract:
            self.documents.chat_client()  # no chat model: a 400 now, before anything is written

        async def events() -> AsyncIterator[tuple[str, Any]]:
            loop = asyncio.get_running_loop()
            queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

            def progress(stage: str, done: int, total: int) -> None:
                loop.call_soon_threadsafe(queue.put_nowait,
                                          ("progress", {"stage": stage, "done": done, "total": total}))

            def work() -> None:
                try:
                    report = self.documents.add(passages, extract=body.extract, progress=progress)
                    loop.call_soon_threadsafe(queue.put_nowait, ("done", report))
                except BaseException as exc:  # handed to the event stream below
                    loop.call_soon_threadsafe(queue.put_nowait, ("failed", exc))

            yield "progress", {"stage": "read", "done": len(passages), "total": len(passages)}
            task = loop.run_in_executor(None, work)
            while True:
                name, data = await queue.get()
                if name == "failed":
                    raise data
                yield name, data
                if name == "done":
                    break
            await task

        return _stream(events())


def add_web_routes(app: FastAPI, page: WebPage) -> None:
    """Mount the page at ``/`` and its routes under ``/ui/``."""
    router = APIRouter()
    files = resources.files("gear_agent.serve") / "static"

    @router.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index() -> HTMLResponse:
        return HTMLResponse((files / "index.html").read_text(encoding="utf-8"),
                            headers={"Content-Security-Policy": _CSP})

    @router.get("/ui/static/{name}", include_in_schema=False)
    def static(name: str) -> Response:
        if name not in STATIC:
            return Response(status_code=404)
        return Response((files / name).read_bytes(), media_type=STATIC[name],
                        headers={"Cache-Control": "no-cache"})

    router.add_api_route("/ui/api/config", page.config, methods=["GET"])
    router.add_api_route("/ui/api/ask/stream", page.ask, methods=["POST"])
    if not page.read_only:
        router.add_api_route("/ui/api/documents/stream", page.add, methods=["POST"])

    @router.get("/ui/api/entities")
    async def entities(q: str = Query("", max_length=200), offset: int = Query(0, ge=0, le=1_000_000),
                       limit: int = Query(web_explore.MAX_MATCHES, ge=1, le=web_explore.MAX_MATCHES)) -> Response:
        return await page.read(page.entities.find, q, offset, limit)

    @router.get("/ui/api/entity")
    async def entity(name: str = Query(..., max_length=500), hops: int = 1) -> Response:
        return await page.read(page.entities.neighbourhood, name, hops)

    @router.get("/ui/api/passage/{passage_id}")
    async def passage(passage_id: str) -> Response:
        return await page.read(web_explore.passage_triples, page.store, passage_id)

    @router.get("/ui/api/documents")
    async def documents(offset: int = Query(0, ge=0, le=100_000_000),
                        limit: int = Query(MAX_LIST, ge=1, le=MAX_LIST),
                        source: str | None = Query(None, max_length=2_000)) -> Response:
        return await page.read(page.documents.listing, offset, limit, source)

    @router.post("/ui/api/documents/preview-delete")
    def preview(body: DeleteBody) -> dict[str, Any]:
        return page.documents.preview_delete(body.ids, body.source)

    if not page.read_only:
        @router.post("/ui/api/documents/delete")
        def delete(body: DeleteBody) -> dict[str, Any]:
            return page.documents.delete(body.ids, body.source)

    @router.get("/ui/api/health")
    async def health() -> Response:
        return await page.read(page.health)

    app.include_router(router)


_CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")
"""The page may load and call nothing but this server."""

__all__ = ["AddBody", "AskBody", "DeleteBody", "WebPage", "add_web_routes"]
