"""Limits at the server's door: one ASGI middleware that every request passes first.

In order, for each HTTP request (``/health`` and the playground's pages included):

1. **API key** (``GEAR_API_KEY``): when set, every route but ``GET /health`` needs
   ``Authorization: Bearer <key>`` (401 otherwise; compared in constant time).
2. **Content type**: a ``POST`` must be ``application/json`` (415 otherwise), so a web page
   cannot start runs with a form or ``text/plain`` post (no CORS preflight for those).
3. **Body size** (``GEAR_SERVE_MAX_BODY_BYTES``): a declared ``Content-Length`` over the
   limit is refused before any byte is read, a chunked body as soon as it passes it (413).
4. **Slow clients** (``GEAR_SERVE_BODY_TIMEOUT_S``): the whole body must arrive within it (408).
5. **Well-formed JSON**: UTF-8, nested at most 200 deep, numbers Python can read (400 with
   one line, not a 500 from deep inside the framework).
6. **Batch size** (``GEAR_SERVE_MAX_BATCH``): a ``/batch`` body with more inputs is refused (413).
7. **Concurrent runs** (``GEAR_SERVE_MAX_CONCURRENT``): a run request (``invoke``,
   ``batch``, ``stream*``) that would take the server past the limit, counting each batch
   input, is shed at once with 503 and ``Retry-After`` instead of queueing.
8. **Request deadline** (``GEAR_SERVE_REQUEST_TIMEOUT_S``): a request whose response has
   not started by then is cancelled and answered 504.

Each refusal is a JSON ``{"message": ...}`` of one line. CORS is off unless
``GEAR_SERVE_CORS_ORIGINS`` lists origins (see :func:`gear_agent.serve.app.create_app`).
"""

from __future__ import annotations

import asyncio
import hmac
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

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


RETRY_AFTER_S = 1
"""The ``Retry-After`` (seconds) sent with a run request shed because the server was full."""


class _Refused(Exception):
    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers or {}


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
        self.in_flight = 0
        self.shed = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            self._check_key(scope)
            if scope["method"] != "POST":
                await self.app(scope, receive, send)
                return
            self._check_content_type(scope)
            body = await self._read_body(scope, receive)
            runs = self._check_json(scope, body)
        except _Refused as refusal:
            await _answer(send, refusal.status, refusal.message, refusal.headers)
            return
        if runs and self.in_flight + runs > self.settings.serve_max_concurrent:
            self.shed += 1
            await _answer(send, 503, f"the server is busy ({self.in_flight} runs in flight, limit "
                          f"{self.settings.serve_max_concurrent}); retry after {RETRY_AFTER_S} s",
                          {"Retry-After": str(RETRY_AFTER_S)})
            return
        self.in_flight += runs
        try:
            await self._forward(scope, body, receive, send)
        finally:
            self.in_flight -= runs

    # ---- the checks ------------------------------------------------------------------------
    def _check_key(self, scope: Scope) -> None:
        key = self.api_key
        if key is None or (scope["method"] == "GET" and scope["path"] == "/health"):
            return
        given = _header(scope, b"authorization") or ""
        scheme, _, token = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), key.encode()):
            raise _Refused(401, "missing or wrong API key: send Authorization: Bearer <GEAR_API_KEY>",
                           {"WWW-Authenticate": "Bearer"})

    @staticmethod
    def _check_content_type(scope: Scope) -> None:
        kind = (_header(scope, b"content-type") or "").split(";")[0].strip().lower()
        if kind != "application/json":
            raise _Refused(415, f"POST bodies must be application/json, got {kind or 'none'!r}")

    async def _read_body(self, scope: Scope, receive: Receive) -> bytes:
        limit = self.settings.serve_max_body_bytes
        declared = _header(scope, b"content-length")
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
            raise _Refused(400, str(exc)) from None
        path = scope["path"].rstrip("/")
        if not path.endswith(RUN_ENDPOINTS):
            return 0
        if path.endswith("/batch"):
            inputs = data.get("inputs") if isinstance(data, dict) else None
            count = len(inputs) if isinstance(inputs, list) else 1
            if count > self.settings.serve_max_batch:
                raise _Refused(413, f"the batch has {count} inputs; the limit is "
                               f"{self.settings.serve_max_batch} (GEAR_SERVE_MAX_BATCH)")
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
                await _answer(send, 504, f"no answer within {timeout:g} s "
                              "(GEAR_SERVE_REQUEST_TIMEOUT_S)")


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers") or []:
        if key.lower() == name:
            return value.decode("latin-1")
    return None


async def _answer(send: Send, status: int, message: str, headers: dict[str, str] | None = None) -> None:
    body = json.dumps({"message": message}).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})
