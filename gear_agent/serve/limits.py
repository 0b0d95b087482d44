"""Limits at the server's door: one ASGI middleware that every request passes first.

In order, for each HTTP request (``/health`` and the playground's pages included):

1. **API key** (``GEAR_API_KEY``): when set, every route but ``GET /health`` needs
   ``Authorization: Bearer <key>`` (401 otherwise; compared in constant time). With
   ``GEAR_SERVE_WRITE_KEY`` set, the routes that write to the index need that key instead
   (reads stay open unless ``GEAR_API_KEY`` is set; the write key opens them too).
   A ``GET`` of the page's API or the schemas counts as a read against
   ``GEAR_SERVE_MAX_READS``: one more is shed at once with 503 and ``Retry-After``.
2. **Content type**: a ``POST`` must be ``application/json`` (415 otherwise), so a web page
   cannot start runs with a form or ``text/plain`` post (no CORS preflight for those).
3. **Body size** (``GEAR_SERVE_MAX_BODY_BYTES``): a declared ``Content-Length`` over the
   limit is refused before any byte is read, a chunked body as soon as it passes it (413).
4. **Slow clients** (``GEAR_SERVE_BODY_TIMEOUT_S``): the whole body must arrive within it (408).
5. **Well-formed JSON**: UTF-8, nested at most 200 deep, numbers Python can read (400 with
   one line, not a 500 from deep inside the framework).
6. **Batch size** (``GEAR_SERVE_MAX_BATCH``, never more than ``GEAR_SERVE_MAX_CONCURRENT``,
   since a batch's inputs run at once: :func:`max_batch`): a ``/batch`` body with more
   inputs is refused (413).
7. **Concurrent runs** (``GEAR_SERVE_MAX_CONCURRENT``): a run request (``invoke``,
   ``batch``, ``stream*``) that would take the server past the limit, counting each batch
   input, is shed at once with 503 and ``Retry-After`` instead of queueing.
8. **Request deadline** (``GEAR_SERVE_REQUEST_TIMEOUT_S``): a request whose response has
   not started by then is cancelled and answered 504.

Each refusal is a JSON ``{"message": ...}`` of one line; one sent before the body was read
whole says ``Connection: close`` (the connection cannot carry another request). CORS is off unless
``GEAR_SERVE_CORS_ORIGINS`` lists origins (see :func:`gear_agent.serve.app.create_app`).
"""

from __future__ import annotations

import asyncio
import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

from gear_agent.serve.site_guard import answer, header, is_write
from gear_agent.text.json_input import JSONInputError, load_json

if TYPE_CHECKING:
    from gear_agent.config import ServeSettings

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

RUN_ENDPOINTS = ("/invoke", "/batch", "/stream", "/stream_log", "/stream_events")
"""Path endings of requests that start agent runs (and so LLM calls)."""


READ_PREFIXES = ("/ui/api/", "/gear/")
"""``GET`` paths that do work on the index or build schemas (counted as reads); ``/``,
``/health``, the page's static files and :data:`FROM_MEMORY` are answered from memory or
one small file."""
FROM_MEMORY = ("/ui/api/config",)
"""``GET`` routes under :data:`READ_PREFIXES` that answer from memory (not counted), besides
the playgrounds' pages and files (``.../playground/...``: static files of LangServe)."""

RETRY_AFTER_S = 1
"""The ``Retry-After`` (seconds) sent with a run request shed because the server was full."""


class _Refused(Exception):
    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None,
                 *, close: bool = True) -> None:
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers or {}
        self.close = close  # refused before the body was read whole: the connection ends


def max_batch(settings: ServeSettings) -> int:
    """The most inputs one ``/batch`` may have: ``serve_max_batch``, but never more than
    ``serve_max_concurrent`` (a bigger batch could never be admitted).

    Example:
        >>> from gear_agent.config import ServeSettings
        >>> max_batch(ServeSettings(serve_max_batch=16, serve_max_concurrent=8))
        8
    """
    return min(settings.serve_max_batch, settings.serve_max_concurrent)


def startup_notes(settings: ServeSettings) -> list[str]:
    """What ``gear serve`` says at start-up about limits it had to adjust."""
    notes = []
    if settings.serve_max_batch > settings.serve_max_concurrent:
        notes.append(f"GEAR_SERVE_MAX_BATCH={settings.serve_max_batch} is more than "
                     f"GEAR_SERVE_MAX_CONCURRENT={settings.serve_max_concurrent}: a batch may "
                     f"have at most {max_batch(settings)} inputs")
    return notes


class RequestGuard:
    """The ASGI middleware applying the ``serve_*`` settings and ``api_key`` (see the module
    docstring).

    Attributes:
        in_flight: Agent runs admitted and not finished (batch inputs each count).
        shed: Run requests refused because the server was full.
    """

    def __init__(self, app: ASGIApp, settings: ServeSettings) -> None:
        self.app = app
        self.settings = settings
        self.api_key = settings.api_key.get_secret_value() if settings.api_key else None
        self.write_key = settings.serve_write_key.get_secret_value() if settings.serve_write_key else None
        self.max_batch = max_batch(settings)
        self.in_flight = 0
        self.reads = 0
        self.shed = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            self._check_key(scope)
            if scope["method"] != "POST":
                await self._read(scope, receive, send)
                return
            self._check_content_type(scope)
            body = await self._read_body(scope, receive)
            runs = self._check_json(scope, body)
        except _Refused as refusal:
            await answer(send, refusal.status, refusal.message, refusal.headers, close=refusal.close)
            return
        if runs and self.in_flight + runs > self.settings.serve_max_concurrent:
            self.shed += 1
            await answer(send, 503, f"the server is busy ({self.in_flight} runs in flight, limit "
                         f"{self.settings.serve_max_concurrent}); retry after {RETRY_AFTER_S} s",
                         {"Retry-After": str(RETRY_AFTER_S)})
            return
        self.in_flight += runs
        try:
            await self._forward(scope, body, receive, send)
        finally:
            self.in_flight -= runs

    async def _read(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A request without a body: a read of the page's API or a schema counts against
        ``serve_max_reads`` (shed with 503 beyond it); others pass as they are."""
        path = scope["path"]
        if not path.startswith(READ_PREFIXES) or path in FROM_MEMORY or "/playground/" in path:
            await self.app(scope, receive, send)
            return
        if self.reads >= self.settings.serve_max_reads:
            self.shed += 1
            await answer(send, 503, f"the server is busy ({self.reads} reads in flight, limit "
                         f"{self.settings.serve_max_reads}, GEAR_SERVE_MAX_READS); retry after "
                         f"{RETRY_AFTER_S} s", {"Retry-After": str(RETRY_AFTER_S)})
            return
        self.reads += 1
        try:
            await self._forward(scope, b"", receive, send)
        finally:
            self.reads -= 1

    # ---- the checks ------------------------------------------------------------------------
    def _check_key(self, scope: Scope) -> None:
        if scope["method"] == "GET" and scope["path"] == "/health":
            return
        given = _bearer(scope)
        if self.write_key is not None and is_write(scope["path"]):
            if not _same(given, self.write_key):
                raise _Refused(401, "this route writes to the index: send Authorization: Bearer "
                               "<GEAR_SERVE_WRITE_KEY>", {"WWW-Authenticate": "Bearer"})
            return
        key = self.api_key
        if key is None or (self.write_key is not None and _same(given, self.write_key)):
            return
        if not _same(given, key):
            raise _Refused(401, "missing or wrong API key: send Authorization: Bearer <GEAR_API_KEY>",
                           {"WWW-Authenticate": "Bearer"})

    @staticmethod
    def _check_content_type(scope: Scope) -> None:
        kind = (header(scope, b"content-type") or "").split(";")[0].strip().lower()
        if kind != "application/json":
            raise _Refused(415, f"POST bodies must be application/json, got {kind or 'none'!r}")

    async def _read_body(self, scope: Scope, receive: Receive) -> bytes:
        limit = self.settings.serve_max_body_bytes
        declared = header(scope, b"content-length")
        if declared is not None:
            if not declared.strip().isdigit():
                raise _Refused(400, "Content-Length is not a number")
            if int(declared) > limit:
                raise _Refused(413, f"the body is {int(declared):,} bytes; the limit is {limit:,} "
                               "(GEAR_SERVE_MAX_BODY_BYTES)")
        try:
            timeout = self.settings.serve_body_timeout_s
            return await asyncio.wait_for(self._collect(receive, limit), timeout)
        except (TimeoutError, asyncio.TimeoutError):  # one class from Python 3.11 on
            raise _Refused(408, f"the body did not arrive within {timeout:g} s") from None

    @staticmethod
    async def _collect(receive: Receive, limit: int) -> bytes:
        parts: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _Refused(400, "the client went away")
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise _Refused(413, f"the body passed the limit of {limit:,} bytes "
                               "(GEAR_SERVE_MAX_BODY_BYTES)")
            parts.append(chunk)
            if not message.get("more_body", False):
                return b"".join(parts)

    def _check_json(self, scope: Scope, body: bytes) -> int:
        """Parse the body; returns how many agent runs it starts (0 for other routes)."""
        try:
            data = load_json(body, "the request body") if body else None
        except JSONInputError as exc:
            raise _Refused(400, str(exc), close=False) from None
        path = scope["path"].rstrip("/")
        if not path.endswith(RUN_ENDPOINTS):
            return 0
        if path.endswith("/batch"):
            inputs = data.get("inputs") if isinstance(data, dict) else None
            count = len(inputs) if isinstance(inputs, list) else 1
            if count > self.max_batch:
                raise _Refused(413, f"the batch has {count} inputs; the limit is {self.max_batch} "
                               "(GEAR_SERVE_MAX_BATCH, at most GEAR_SERVE_MAX_CONCURRENT)", close=False)
            return max(count, 1)
        return 1

    async def _forward(self, scope: Scope, body: bytes, receive: Receive, send: Send) -> None:
        delivered = False
        started = False

        async def replay() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # the body is spent: what comes next is a disconnect

        async def watch(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        timeout = self.settings.serve_request_timeout_s
        try:
            await asyncio.wait_for(self.app(scope, replay, watch), timeout)
        except (TimeoutError, asyncio.TimeoutError):  # one class from Python 3.11 on
            if not started:
                await answer(send, 504, f"no answer within {timeout:g} s "
                              "(GEAR_SERVE_REQUEST_TIMEOUT_S)")



def _bearer(scope: Scope) -> str | None:
    scheme, _, token = (header(scope, b"authorization") or "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None


def _same(given: str | None, key: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), key.encode())
