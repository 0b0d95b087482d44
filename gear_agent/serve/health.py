"""``GET /health`` answered from bytes kept in memory, ahead of every other layer.

The answer is encoded once; a request for it goes through no limit, no routing, no
validation and no serialisation, and never onto a thread, so during a flood of other
requests it costs the event loop one lookup and two sends. It still passes the
:class:`~gear_agent.serve.site_guard.SiteGuard` (the Host check, the headers), which sits
outside it.
"""

from __future__ import annotations

import json
from typing import Any

from gear_agent.serve.site_guard import ASGIApp, Receive, Scope, Send

PATH = "/health"


class HealthFirst:
    """ASGI middleware: ``GET``/``HEAD /health`` answered with ``facts`` as JSON; every other
    request goes on to ``app``.

    Args:
        app: The app behind it.
        facts: The body (no paths of the machine).
    """

    def __init__(self, app: ASGIApp, facts: dict[str, Any]) -> None:
        self.app = app
        self.body = json.dumps(facts).encode()
        self.headers = [(b"content-type", b"application/json"),
                        (b"content-length", str(len(self.body)).encode()),
                        (b"cache-control", b"no-store")]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == PATH and scope["method"] in ("GET", "HEAD"):
            await send({"type": "http.response.start", "status": 200, "headers": self.headers})
            await send({"type": "http.response.body",
                        "body": self.body if scope["method"] == "GET" else b""})
            return
        await self.app(scope, receive, send)


__all__ = ["HealthFirst"]
