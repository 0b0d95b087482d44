"""Which sites may reach the server: the ``Host`` allow-list, the origin of writes, and the
headers every response carries. One ASGI middleware, outside the limits of
:mod:`gear_agent.serve.limits`.

1. **Host** (DNS rebinding): a request whose ``Host`` names no allowed host is answered 400.
   Allowed: the bound address, ``localhost``, ``127.0.0.1``, ``[::1]`` and the names of
   ``GEAR_SERVE_ALLOWED_HOSTS`` / ``gear serve --allowed-hosts`` (``*`` allows any).
2. **Origin of a post**: a ``POST`` (every state-changing route is one) that a browser sends
   from another site is answered 403: its ``Origin`` must be this server's own
   (``scheme://Host``) or one of ``GEAR_SERVE_CORS_ORIGINS``; without an ``Origin``, a
   ``Sec-Fetch-Site`` other than ``same-origin``/``none`` is refused too. Clients that are
   not browsers send neither and pass.
3. **Read-only** (``gear serve --read-only``): the write routes answer 403 with one line.
4. **Headers**: ``X-Content-Type-Options: nosniff`` on every response; an HTML page that
   sets no ``Content-Security-Policy`` of its own (the LangServe playgrounds) gets
   ``frame-ancestors 'none'``, and every HTML page ``X-Frame-Options: DENY``.

:func:`check_cors` refuses a wildcard CORS setting beside the write routes at start-up.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

from gear_agent.config import ServeSettings, split_names
from gear_agent.errors import GearError

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK = ("localhost", "127.0.0.1", "::1")
"""Host names always allowed (``[::1]`` is compared without its brackets)."""

WRITE_PATHS = ("/ui/api/documents/stream", "/ui/api/documents/delete")
"""Routes that change the index (refused by ``--read-only``, guarded by a write key)."""

FRAME_CSP = "frame-ancestors 'none'"
"""The policy given to HTML pages that bring none of their own."""


def allowed_hosts(settings: ServeSettings, bound: str | None = None) -> frozenset[str]:
    """The host names the server answers to: loopback, the bound address and the setting's.

    Example:
        >>> sorted(allowed_hosts(ServeSettings(serve_allowed_hosts="gear.lan"), "10.0.0.5"))
        ['10.0.0.5', '127.0.0.1', '::1', 'gear.lan', 'localhost']
    """
    names = {*LOOPBACK, *(_bare(n) for n in split_names(settings.serve_allowed_hosts))}
    if bound and bound not in ("0.0.0.0", "::"):  # a wildcard bind names no host
        names.add(_bare(bound))
    return frozenset(names)


def is_write(path: str) -> bool:
    """Whether ``path`` is a route that changes the index."""
    return path.rstrip("/") in WRITE_PATHS


def check_cors(settings: ServeSettings, *, writes: bool) -> None:
    """Refuse ``GEAR_SERVE_CORS_ORIGINS='*'`` while write routes are served, unless
    ``GEAR_SERVE_CORS_ANY_ORIGIN_WRITES`` says so.

    Raises:
        GearError: The wildcard with write routes and no opt-in (one line, with the fixes).
    """
    if writes and "*" in settings.allowed_origins and not settings.serve_cors_any_origin_writes:
        raise GearError(
            "GEAR_SERVE_CORS_ORIGINS='*' would let every web site add and delete documents: "
            "list the origins, serve with --read-only, or set GEAR_SERVE_CORS_ANY_ORIGIN_WRITES=true")


class SiteGuard:
    """The ASGI middleware of the module docstring.

    Args:
        app: The app behind it.
        settings: ``serve_allowed_hosts``, ``serve_cors_origins``.
        hosts: The allowed host names (:func:`allowed_hosts`).
        read_only: Refuse the write routes.
    """

    def __init__(self, app: ASGIApp, settings: ServeSettings, hosts: Iterable[str],
                 *, read_only: bool = False) -> None:
        self.app = app
        self.hosts = frozenset(_bare(h) for h in hosts)
        self.any_host = "*" in self.hosts
        self.origins = frozenset(o.rstrip("/").lower() for o in settings.allowed_origins)
        self.read_only = read_only

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self.refusal(scope)
        if refusal is not None:
            status, message = refusal
            await answer(with_headers(send), status, message, close=True)
            return
        await self.app(scope, receive, with_headers(send))

    def refusal(self, scope: Scope) -> tuple[int, str] | None:
        """``(status, message)`` when the request may not pass, else None."""
        host = header(scope, b"host")
        if host is not None and not self.any_host and _hostname(host) not in self.hosts:
            shown = host if len(host) <= 80 else host[:80] + "…"
            return 400, (f"this server does not answer to Host {shown!r}; allowed: "
                         f"{', '.join(sorted(self.hosts))} (add names with --allowed-hosts "
                         "or GEAR_SERVE_ALLOWED_HOSTS)")
        if scope["method"] in ("GET", "HEAD", "OPTIONS"):
            return None
        if self.read_only and is_write(scope["path"]):
            return 403, "this server is read-only (gear serve --read-only): it adds and deletes nothing"
        origin = header(scope, b"origin")
        if origin is not None:
            if not self._origin_allowed(origin, host):
                return 403, (f"a page from {origin[:80]!r} may not post here: only this server's "
                             "own pages and GEAR_SERVE_CORS_ORIGINS may")
            return None
        site = (header(scope, b"sec-fetch-site") or "none").strip().lower()
        if site not in ("same-origin", "none"):
            return 403, f"a {site} page may not post here: only this server's own pages may"
        return None

    def _origin_allowed(self, origin: str, host: str | None) -> bool:
        origin = origin.strip().rstrip("/").lower()
        if "*" in self.origins or origin in self.origins:
            return True
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.netloc or host is None:
            return False  # "null" (a sandboxed frame, a file) or no Host to compare with
        same = parts.netloc == host.strip().lower()
        return same and (self.any_host or _hostname(parts.netloc) in self.hosts)


def with_headers(send: Send) -> Send:
    """``send`` adding ``X-Content-Type-Options: nosniff`` to every response, and to an
    HTML page ``X-Frame-Options: DENY`` and, when it has none, a CSP forbidding frames."""

    async def send_with_headers(message: Message) -> None:
        if message["type"] == "http.response.start":
            raw = list(message.get("headers") or [])
            names = {k.lower() for k, _ in raw}
            raw.append((b"x-content-type-options", b"nosniff"))
            kind = next((v for k, v in raw if k.lower() == b"content-type"), b"")
            if kind.startswith(b"text/html"):
                raw.append((b"x-frame-options", b"DENY"))
                if b"content-security-policy" not in names:
                    raw.append((b"content-security-policy", FRAME_CSP.encode()))
            message = {**message, "headers": raw}
        await send(message)

    return send_with_headers


def header(scope: Scope, name: bytes) -> str | None:
    """The first value of header ``name`` (lower-case bytes), or None."""
    for key, value in scope.get("headers") or []:
        if key.lower() == name:
            return value.decode("latin-1")
    return None


async def answer(send: Send, status: int, message: str, headers: dict[str, str] | None = None,
                 *, close: bool = False) -> None:
    """A one-line JSON refusal ``{"message": ...}``; ``close`` tells the client that the
    connection ends with it (``Connection: close``)."""
    body = json.dumps({"message": message}).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if close:
        raw.append((b"connection", b"close"))
    raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def _hostname(host: str) -> str:
    """``host[:port]`` without the port, brackets or case: ``[::1]:8000`` is ``::1``."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _bare(name: str) -> str:
    return _hostname(name) if name.strip() != "*" else "*"

