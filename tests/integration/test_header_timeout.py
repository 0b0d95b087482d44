"""Slow headers: uvicorn with gear's h11 protocol closes a connection whose request head
does not arrive in time, and serves whole requests as before."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

pytest.importorskip("uvicorn", reason="the serve extra is not installed (pip install gear-agent[serve])")

import uvicorn  # noqa: E402

from gear_agent.serve.header_timeout import header_timeout_protocol  # noqa: E402

HEADER_TIMEOUT_S = 0.5


async def app(scope, receive, send) -> None:  # a minimal ASGI app: 200 "ok"
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/plain"), (b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off",
                            http=header_timeout_protocol(HEADER_TIMEOUT_S))
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    yield server.servers[0].sockets[0].getsockname()[1]
    server.should_exit = True
    thread.join(10)


def _read_all(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(4096):
        chunks.append(chunk)
    return b"".join(chunks)


def test_a_client_that_never_finishes_its_headers_is_disconnected(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(b"POST /gear/invoke HTTP/1.1\r\nHost: x\r\n")  # and never the rest
        assert _read_all(sock) == b""  # closed by the server, with no response


def test_a_slow_trickle_of_header_bytes_does_not_keep_it_open(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sent = 0
        try:
            for _ in range(200):  # one byte every 50 ms: each one alone is in time
                sock.sendall(b"X")
                sent += 1
                time.sleep(0.05)
        except OSError:  # the server closed the connection while we were still sending
            pass
        else:
            assert _read_all(sock) == b""
    assert sent < 200


def test_whole_requests_are_served_and_keep_alive_works(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        for _ in range(2):
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            reply = b""
            while not reply.endswith(b"ok"):
                reply += sock.recv(4096)
            assert reply.startswith(b"HTTP/1.1 200")
