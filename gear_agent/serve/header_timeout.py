"""Slow headers: close a connection whose request line and headers do not arrive in time.

uvicorn bounds the idle time between requests (``timeout_keep_alive``) but not the time a
client takes to send its headers, so a client that trickles a header byte now and then holds
a connection (and a file descriptor) for ever; the ASGI app cannot help, since it is called
only once the headers are complete. :func:`header_timeout_protocol` gives uvicorn's h11
protocol a timer that starts when a connection opens (and again when a response completes
and the connection waits for its next request) and closes the connection unless a whole
request head has arrived before it fires. The body is the app's business
(``GEAR_SERVE_BODY_TIMEOUT_S``, :mod:`gear_agent.serve.limits`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol


class _HeaderTimeoutH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline on each request head."""

    header_timeout_s: float = 10.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def handle_events(self) -> None:
        cycle = self.cycle
        super().handle_events()
        if self.cycle is not cycle:  # a whole request head arrived
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()  # the next request on this connection gets the same time

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._head_timer = self.loop.call_later(self.header_timeout_s, self._too_slow)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _too_slow(self) -> None:
        self._head_timer = None
        if not self.transport.is_closing():
            self.transport.close()


def header_timeout_protocol(seconds: float) -> type[H11Protocol]:
    """uvicorn's h11 protocol closing connections whose request head takes over ``seconds``.

    Example:
        >>> protocol = header_timeout_protocol(10.0)
        >>> uvicorn.run(app, host="127.0.0.1", port=8000, http=protocol)  # doctest: +SKIP
    """
    if seconds <= 0:
        raise ValueError(f"the header timeout must be positive, got {seconds}")
    return type("HeaderTimeoutH11Protocol", (_HeaderTimeoutH11Protocol,), {"header_timeout_s": seconds})
