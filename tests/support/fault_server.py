"""A real OpenAI-compatible HTTP endpoint that misbehaves on cue.

Each ``POST /v1/chat/completions`` takes the next :class:`Behaviour` from a script
(a FIFO queue); when the script is empty the server's default answers. ``GET /v1/models``
always answers. Every request is recorded with its parsed body and arrival time, so tests
can check what a client sent and how long it waited between retries.

The faults happen on the wire, not in a mock: a client sees a real 429 with
``Retry-After``, a real read timeout, a body cut short, a TCP reset.

Example:
    >>> import openai
    >>> from support.fault_server import ok, running_fault_server, status
    >>> with running_fault_server() as server:
    ...     server.script(status(503), ok("fine"))
    ...     client = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=1)
    ...     reply = client.chat.completions.create(
    ...         model="m", messages=[{"role": "user", "content": "hi"}])
    ...     (reply.choices[0].message.content, len(server.requests))
    ('fine', 2)
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

__all__ = [
    "Behaviour",
    "BehaviourKind",
    "FaultServer",
    "RecordedRequest",
    "connection_reset",
    "empty_body",
    "empty_choices",
    "null_content",
    "ok",
    "running_fault_server",
    "status",
    "timeout",
    "trickle",
    "truncated_body",
]

BehaviourKind = Literal[
    "ok",
    "timeout",
    "status",
    "truncated_body",
    "empty_body",
    "connection_reset",
    "empty_choices",
    "null_content",
    "trickle",
]

MAX_DELAY_S = 60.0
"""Longest :func:`timeout` delay; a test never needs to wait longer."""

MAX_SCRIPT = 1_000
"""Most behaviours waiting in the script at once."""

MAX_RECORDED = 10_000
"""Most requests kept; older ones are dropped first."""

MAX_BODY_BYTES = 8 * 1024 * 1024
"""Largest request body read; a larger one is answered 413."""

_IDLE_CONNECTION_S = 5.0
_STOP_JOIN_S = 5.0


@dataclass(frozen=True)
class Behaviour:
    """What the server does with one chat-completion request. Build one with the functions below.

    Attributes:
        kind: Which behaviour.
        text: Reply text (``ok``; the late reply of ``timeout``).
        prompt_tokens: Reported ``usage.prompt_tokens``.
        completion_tokens: Reported ``usage.completion_tokens``.
        seconds: Delay before answering (``timeout``).
        status_code: HTTP status (``status``).
        retry_after: ``Retry-After`` header in seconds (``status``), or None for none.
        finish_reason: Reported ``finish_reason`` (``ok``, ``null_content``).
        chunk_bytes: Bytes sent per step (``trickle``).
    """

    kind: BehaviourKind
    text: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    status_code: int = 200
    retry_after: float | None = None
    finish_reason: str = "stop"
    chunk_bytes: int = 0


def _check_tokens(prompt_tokens: int, completion_tokens: int) -> None:
    for name, value in (("prompt_tokens", prompt_tokens), ("completion_tokens", completion_tokens)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"{name} must be an int >= 0, got {value!r}")


def ok(
    text: str = "ok",
    prompt_tokens: int = 5,
    completion_tokens: int = 1,
    *,
    finish_reason: str = "stop",
) -> Behaviour:
    """A well-formed chat completion with ``text`` and the given usage.

    Example:
        >>> ok("Paris", prompt_tokens=12, completion_tokens=1).text
        'Paris'
    """
    _check_tokens(prompt_tokens, completion_tokens)
    return Behaviour(
        "ok",
        text=text,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        finish_reason=finish_reason,
    )


def timeout(seconds: float, *, text: str = "late reply") -> Behaviour:
    """Answer only after ``seconds`` (set it past the client's timeout), then a normal reply.

    The wait ends early when the server stops. If the client has gone, the late reply is
    dropped.

    Raises:
        ValueError: ``seconds`` is not in (0, 60].
    """
    if not 0 < seconds <= MAX_DELAY_S:
        raise ValueError(f"timeout seconds must be in (0, {MAX_DELAY_S:g}], got {seconds!r}")
    return Behaviour(
        "timeout", text=text, seconds=float(seconds), prompt_tokens=5, completion_tokens=1
    )


def status(code: int, *, retry_after: float | None = None) -> Behaviour:
    """An HTTP error with an OpenAI-style JSON error body, e.g. ``status(429, retry_after=1)``.

    Raises:
        ValueError: ``code`` is not a 4xx/5xx status, or ``retry_after`` is negative.
    """
    if not isinstance(code, int) or not 400 <= code <= 599:
        raise ValueError(f"status code must be an int in 400..599, got {code!r}")
    if retry_after is not None and retry_after < 0:
        raise ValueError(f"retry_after must be >= 0 seconds, got {retry_after!r}")
    return Behaviour("status", status_code=code, retry_after=retry_after)


def trickle(every_s: float, chunk_bytes: int = 8, *, text: str = "slow reply") -> Behaviour:
    """A whole, well-formed reply sent ``chunk_bytes`` at a time, one step every ``every_s``
    seconds: each read finishes within a per-read timeout longer than ``every_s``, so only
    a bound on the whole call stops it (a ~300-byte reply at 8 bytes / 0.8 s takes ~30 s).

    Raises:
        ValueError: ``every_s`` is not in (0, 60] or ``chunk_bytes`` < 1.
    """
    if not 0 < every_s <= MAX_DELAY_S:
        raise ValueError(f"every_s must be in (0, {MAX_DELAY_S:g}], got {every_s!r}")
    if chunk_bytes < 1:
        raise ValueError(f"chunk_bytes must be >= 1, got {chunk_bytes!r}")
    return Behaviour("trickle", text=text, seconds=float(every_s), chunk_bytes=chunk_bytes,
                     prompt_tokens=5, completion_tokens=1)


def truncated_body() -> Behaviour:
    """200 declaring the full ``Content-Length``, but only half the JSON is sent before closing.

    A streaming request gets its first event, then the connection closes without ``[DONE]``.
    """
    return Behaviour(
        "truncated_body", text="this reply is cut short", prompt_tokens=5, completion_tokens=5
    )


def empty_body() -> Behaviour:
    """200 with ``Content-Type: application/json`` and an empty body."""
    return Behaviour("empty_body")


def connection_reset() -> Behaviour:
    """Read the request, then reset the TCP connection (``SO_LINGER`` 0) without answering."""
    return Behaviour("connection_reset")


def empty_choices() -> Behaviour:
    """200 with a well-formed completion whose ``choices`` is ``[]``."""
    return Behaviour("empty_choices", prompt_tokens=5)


def null_content() -> Behaviour:
    """200 with one choice whose ``message.content`` is ``null``."""
    return Behaviour("null_content", prompt_tokens=5)


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it.

    Attributes:
        method: ``GET`` or ``POST``.
        path: The request path, e.g. ``/v1/chat/completions``.
        headers: Request headers, names lower-cased.
        body: The parsed JSON body; None when there was none or it was not JSON.
        raw_body: The body's bytes.
        received_at: ``time.monotonic()`` when the request had been read.
        behaviour: The behaviour kind it got; ``"models"``, ``"not_found"`` or
            ``"bad_request"`` (body not a JSON object) for the other requests, which do not
            use up the script.
    """

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw_body: bytes
    received_at: float
    behaviour: str

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The chat messages sent, or ``[]``."""
        if isinstance(self.body, dict) and isinstance(self.body.get("messages"), list):
            return list(self.body["messages"])
        return []


Default = Behaviour | Callable[[RecordedRequest], Behaviour]


@dataclass
class _State:
    default: Default
    model: str
    script: deque[Behaviour] = field(default_factory=deque)
    recorded: deque[RecordedRequest] = field(default_factory=lambda: deque(maxlen=MAX_RECORDED))
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopping: threading.Event = field(default_factory=threading.Event)
    counter: int = 0


def _completion(
    state: _State, request: RecordedRequest, behaviour: Behaviour, choices: list[dict[str, Any]]
) -> dict[str, Any]:
    with state.lock:
        state.counter += 1
        number = state.counter
    model = request.body.get("model") if isinstance(request.body, dict) else None
    return {
        "id": f"chatcmpl-fault-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model if isinstance(model, str) and model else state.model,
        "choices": choices,
        "usage": {
            "prompt_tokens": behaviour.prompt_tokens,
            "completion_tokens": behaviour.completion_tokens,
            "total_tokens": behaviour.prompt_tokens + behaviour.completion_tokens,
        },
    }


def _choice(content: str | None, finish_reason: str) -> dict[str, Any]:
    return {
        "index": 0,
        "message": {"role": "assistant", "content": content},
        "finish_reason": finish_reason,
        "logprobs": None,
    }


def _stream_events(completion: dict[str, Any], include_usage: bool) -> list[bytes]:
    """The completion as server-sent ``chat.completion.chunk`` events, ending with ``[DONE]``."""
    base = {k: completion[k] for k in ("id", "created", "model")} | {
        "object": "chat.completion.chunk"
    }
    chunks: list[dict[str, Any]] = []
    for choice in completion["choices"]:
        content = choice["message"]["content"]
        chunks.append(
            base | {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}
        )
        chunks.append(base | {"choices": [{"index": 0, "delta": {"content": content}}]})
        chunks.append(
            base
            | {"choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]}
        )
    if not completion["choices"]:
        chunks.append(base | {"choices": []})
    if include_usage:
        chunks.append(base | {"choices": [], "usage": completion["usage"]})
    events = [b"data: " + json.dumps(chunk).encode() + b"\n\n" for chunk in chunks]
    return [*events, b"data: [DONE]\n\n"]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = _IDLE_CONNECTION_S  # an idle keep-alive connection is closed after this
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: requests are recorded, not logged."""

    # -- reading ---------------------------------------------------------------------------

    def _parse(self, raw: bytes) -> RecordedRequest:
        try:
            body = json.loads(raw) if raw else None
        except (UnicodeDecodeError, json.JSONDecodeError):
            body = None
        return RecordedRequest(
            method=self.command,
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            raw_body=raw,
            received_at=time.monotonic(),
            behaviour="",
        )

    def _record(self, request: RecordedRequest, behaviour: str) -> RecordedRequest:
        request = replace(request, behaviour=behaviour)
        with self.server.state.lock:
            self.server.state.recorded.append(request)
        return request

    def _read_body(self) -> bytes | None:
        """The request body, or None after answering 411/413 for a body we will not read."""
        length_header = self.headers.get("Content-Length")
        if length_header is None:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                self._send_error(
                    HTTPStatus.LENGTH_REQUIRED, "chunked request bodies are not supported"
                )
                self.close_connection = True
                return None
            return b""
        try:
            length = int(length_header)
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_BODY_BYTES:
            self._send_error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"body length {length_header!r}")
            self.close_connection = True
            return None
        return self.rfile.read(length)

    # -- writing ---------------------------------------------------------------------------

    def _send_json(self, code: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_error(self, code: int, message: str, headers: dict[str, str] | None = None) -> None:
        phrase = HTTPStatus(code).phrase if code in HTTPStatus._value2member_map_ else "Error"
        error = {
            "message": f"fault server: {message or phrase}",
            "type": "fault_server",
            "code": code,
        }
        self._send_json(code, {"error": error}, headers)

    def _send_stream(self, events: list[bytes], *, cut_after: int | None = None) -> None:
        """Server-sent events with a close-delimited body; ``cut_after`` events, then close."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for event in events if cut_after is None else events[:cut_after]:
            self.wfile.write(event)
            self.wfile.flush()

    def _reset(self) -> None:
        """Close the socket with SO_LINGER 0: the peer gets a TCP RST, no response."""
        self.close_connection = True
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()

    # -- routes ----------------------------------------------------------------------------

    def do_GET(self) -> None:
        request = self._parse(b"")
        if self.path.rstrip("/") == "/v1/models":
            self._record(request, "models")
            state = self.server.state
            model = {"id": state.model, "object": "model", "created": 0, "owned_by": "fault-server"}
            self._send_json(200, {"object": "list", "data": [model]})
            return
        self._record(request, "not_found")
        self._send_error(404, f"no route GET {self.path}")

    def do_POST(self) -> None:
        raw = self._read_body()
        if raw is None:
            return
        request = self._parse(raw)
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._record(request, "not_found")
            self._send_error(404, f"no route POST {self.path}")
            return
        if not isinstance(request.body, dict):
            # Not a chat completion: answered without using up a scripted behaviour.
            self._record(request, "bad_request")
            self._send_error(400, "the request body is not a JSON object")
            return
        behaviour = self._next_behaviour(request)
        request = self._record(request, behaviour.kind)
        try:
            self._serve(request, behaviour)
        except (BrokenPipeError, ConnectionResetError):
            # The client gave up (its timeout) before we answered: nothing left to do.
            self.close_connection = True

    def _next_behaviour(self, request: RecordedRequest) -> Behaviour:
        state = self.server.state
        with state.lock:
            if state.script:
                return state.script.popleft()
            default = state.default
        behaviour = default(request) if callable(default) else default
        if not isinstance(behaviour, Behaviour):
            raise TypeError(
                f"the default behaviour function returned {behaviour!r}, not a Behaviour"
            )
        return behaviour

    def _serve(self, request: RecordedRequest, behaviour: Behaviour) -> None:
        state = self.server.state
        body = request.body
        stream = bool(body.get("stream"))
        stream_options = body.get("stream_options")
        include_usage = isinstance(stream_options, dict) and bool(
            stream_options.get("include_usage")
        )
        kind = behaviour.kind

        if kind == "timeout":
            if state.stopping.wait(behaviour.seconds):
                self.close_connection = True
                return
            kind = "ok"
        if kind == "status":
            headers = {}
            if behaviour.retry_after is not None:
                seconds = behaviour.retry_after
                headers["Retry-After"] = (
                    str(int(seconds)) if float(seconds).is_integer() else str(seconds)
                )
            self._send_error(behaviour.status_code, "", headers)
            return
        if kind == "connection_reset":
            self._reset()
            return
        if kind == "empty_body":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream" if stream else "application/json")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return

        if kind == "empty_choices":
            choices: list[dict[str, Any]] = []
        elif kind == "null_content":
            choices = [_choice(None, behaviour.finish_reason)]
        else:  # ok, truncated_body
            choices = [_choice(behaviour.text, behaviour.finish_reason)]
        completion = _completion(state, request, behaviour, choices)

        if stream:
            events = _stream_events(completion, include_usage)
            self._send_stream(events, cut_after=1 if kind == "truncated_body" else None)
            return
        if kind == "trickle":
            data = json.dumps(completion).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.flush()
            for start in range(0, len(data), behaviour.chunk_bytes):
                if state.stopping.wait(behaviour.seconds):
                    self.close_connection = True
                    return
                self.wfile.write(data[start : start + behaviour.chunk_bytes])
                self.wfile.flush()
            return
        if kind == "truncated_body":
            data = json.dumps(completion).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self._send_json(200, completion)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True

    def __init__(self, state: _State) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = state


class FaultServer:
    """An OpenAI-compatible endpoint on a free loopback port; use :func:`running_fault_server`.

    Args:
        default: What a chat completion gets when the script is empty: a
            :class:`Behaviour`, or a function from the :class:`RecordedRequest` to one
            (e.g. an ``ok`` echoing the last message).
        model: The model listed by ``/v1/models`` and reported when a request names none.
    """

    def __init__(self, default: Default | None = None, *, model: str = "fault-model") -> None:
        self._state = _State(default=ok("ok") if default is None else default, model=model)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``, for ``openai.OpenAI(base_url=...)`` or ``ChatOpenAI``."""
        if self._server is None:
            raise RuntimeError("the fault server is not running: use running_fault_server()")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> FaultServer:
        """Bind a free port and serve in a daemon thread."""
        if self._server is not None:
            raise RuntimeError("the fault server is already running")
        self._state.stopping.clear()
        self._server = _Server(self._state)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fault-server",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, wake any delayed reply, close the socket. Safe to call twice."""
        server, thread = self._server, self._thread
        self._server, self._thread = None, None
        if server is None:
            return
        self._state.stopping.set()
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join(timeout=_STOP_JOIN_S)

    def __enter__(self) -> FaultServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def script(self, *behaviours: Behaviour) -> None:
        """Queue behaviours for the next chat-completion requests, in order.

        Raises:
            TypeError: Something other than a :class:`Behaviour` was given.
            ValueError: The script would hold more than 1,000 behaviours.
        """
        for behaviour in behaviours:
            if not isinstance(behaviour, Behaviour):
                raise TypeError(
                    f"script() takes Behaviour values (ok(), status(429), ...), got {behaviour!r}"
                )
        with self._state.lock:
            if len(self._state.script) + len(behaviours) > MAX_SCRIPT:
                raise ValueError(f"the script would hold more than {MAX_SCRIPT} behaviours")
            self._state.script.extend(behaviours)

    def set_default(self, default: Default) -> None:
        """Replace what a chat completion gets when the script is empty."""
        with self._state.lock:
            self._state.default = default

    @property
    def pending(self) -> int:
        """How many scripted behaviours have not been served yet."""
        with self._state.lock:
            return len(self._state.script)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request so far (chat completions, model lists, unknown routes), oldest first."""
        with self._state.lock:
            return list(self._state.recorded)

    @property
    def completions(self) -> list[RecordedRequest]:
        """The ``POST /v1/chat/completions`` requests so far, oldest first."""
        return [
            r
            for r in self.requests
            if r.method == "POST" and r.path.rstrip("/") == "/v1/chat/completions"
        ]


@contextlib.contextmanager
def running_fault_server(
    default: Default | None = None, *, model: str = "fault-model"
) -> Iterator[FaultServer]:
    """A started :class:`FaultServer`, stopped when the block exits.

    Example:
        >>> with running_fault_server(ok("hello")) as server:
        ...     server.base_url.startswith("http://127.0.0.1:")
        True
    """
    server = FaultServer(default, model=model)
    server.start()
    try:
        yield server
    finally:
        server.stop()
