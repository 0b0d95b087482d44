"""Start answering at once: the port opens before the embedding model and the index load.

``gear serve`` hands uvicorn a :class:`WarmingApp` and builds the real app (the model, the
index, the agent, LangServe's routes) on a thread. Until it is ready, ``GET /health``
answers ``{"status": "warming"}`` from memory and every other request 503 with
``Retry-After`` and one line; then every request goes to the real app. Should the build
fail, ``/health`` says ``failed`` with the one-line reason and ``on_failure`` is called (the
command stops the server and exits with that line).

This module imports neither FastAPI nor LangServe, so the port opens before they load.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

from gear_agent.config import ServeSettings
from gear_agent.errors import GearError
from gear_agent.serve.site_guard import ASGIApp, Receive, Scope, Send, SiteGuard, answer

logger = logging.getLogger(__name__)

RETRY_AFTER_S = 2
"""The ``Retry-After`` (seconds) of a request answered while the server warms up."""


class WarmingApp:
    """An ASGI app that answers while ``build()`` runs on a thread, then is that app.

    Args:
        build: Returns the real app (slow: loads the model and the index).
        settings: The door's settings (the Host check applies while warming too).
        hosts: The allowed host names.
        facts: What ``/health`` shows besides its status (no paths of the machine).
        on_failure: Called with the one-line reason when ``build`` fails.

    Attributes:
        status: ``warming``, ``ok`` or ``failed``.
        reason: Why it failed (one line), else None.
    """

    def __init__(self, build: Callable[[], ASGIApp], settings: ServeSettings, hosts: Iterable[str],
                 facts: dict[str, Any] | None = None,
                 on_failure: Callable[[str], None] | None = None) -> None:
        self._build = build
        self._on_failure = on_failure
        self.facts = dict(facts or {})
        self.status = "warming"
        self.reason: str | None = None
        self.ready = threading.Event()
        self._app: ASGIApp | None = None
        self._door = SiteGuard(self._warming, settings, hosts)
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start building the real app on a daemon thread (once)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="gear-warmup", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        try:
            app = self._build()
        except Exception as exc:  # reported on /health and by the command, in one line
            self.reason = " ".join(str(exc).split()) or type(exc).__name__
            if not isinstance(exc, GearError):
                logger.exception("the server could not start: %s", self.reason, exc_info=exc)
            self.status = "failed"
            self.ready.set()
            if self._on_failure is not None:
                self._on_failure(self.reason)
            return
        self._app = app
        self.status = "ok"
        self.ready.set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        app = self._app
        if app is not None:
            await app(scope, receive, send)
            return
        if scope["type"] == "http":
            await self._door(scope, receive, send)

    async def _warming(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["path"] == "/health" and scope["method"] in ("GET", "HEAD"):
            body = {"status": self.status, **self.facts}
            if self.reason:
                body["message"] = self.reason
            payload = json.dumps(body).encode()
            await send({"type": "http.response.start", "status": 200 if self.status != "failed" else 503,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(payload)).encode())]})
            await send({"type": "http.response.body", "body": payload})
            return
        if self.status == "failed":
            await answer(send, 503, f"the server could not start: {self.reason}", close=True)
            return
        await answer(send, 503, "the server is warming up (loading the embedding model and the "
                     f"index); retry in {RETRY_AFTER_S} s", {"Retry-After": str(RETRY_AFTER_S)},
                     close=scope["method"] not in ("GET", "HEAD"))


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
