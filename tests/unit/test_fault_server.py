"""The fault-injecting endpoint does what each behaviour says, seen by the plain openai client.

Each fault is also checked below the client where the client's view could hide it (bytes
received against Content-Length, a TCP reset against a clean close), so tests that use
the fault server can trust it. The client-side outcomes asserted here are what
openai-python does today; they are worth knowing when classifying errors:
an empty 200 body raises a bare ``json.JSONDecodeError``, not an ``openai`` error, and a
stream cut before ``[DONE]`` just ends.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import openai
import pytest
from support.fault_server import (
    Behaviour,
    FaultServer,
    RecordedRequest,
    connection_reset,
    empty_body,
    empty_choices,
    null_content,
    ok,
    running_fault_server,
    status,
    timeout,
    truncated_body,
)

MESSAGES = [{"role": "user", "content": "What is the capital of France?"}]
CLIENT_TIMEOUT_S = 0.5

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def server():
    with running_fault_server() as running:
        yield running


@pytest.fixture
def client(server):
    with openai.OpenAI(
        base_url=server.base_url, api_key="test-key", max_retries=0, timeout=CLIENT_TIMEOUT_S
    ) as made:
        yield made


def chat(client: openai.OpenAI, **kwargs):
    return client.chat.completions.create(model="test-model", messages=MESSAGES, **kwargs)


@contextlib.contextmanager
def raw_post(server: FaultServer, body: bytes) -> Iterator[http.client.HTTPResponse]:
    """POST ``body`` to /v1/chat/completions with http.client, below any OpenAI client."""
    address = urlsplit(server.base_url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=5)
    try:
        connection.request(
            "POST", "/v1/chat/completions", body=body, headers={"Content-Type": "application/json"}
        )
        yield connection.getresponse()
    finally:
        connection.close()


REQUEST_BODY = json.dumps({"model": "test-model", "messages": MESSAGES}).encode()


# -- well-formed replies --------------------------------------------------------------------


def test_ok_returns_text_usage_and_the_requested_model(server, client):
    server.script(ok("Paris", prompt_tokens=12, completion_tokens=3))

    completion = chat(client)

    assert completion.choices[0].message.content == "Paris"
    assert completion.choices[0].finish_reason == "stop"
    assert completion.model == "test-model"
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (12, 3)
    assert completion.usage.total_tokens == 15


def test_requests_are_recorded_with_body_headers_and_time(server, client):
    before = time.monotonic()
    chat(client, temperature=0.25, max_tokens=7)

    [request] = server.requests
    assert isinstance(request, RecordedRequest)
    assert (request.method, request.path, request.behaviour) == (
        "POST",
        "/v1/chat/completions",
        "ok",
    )
    assert request.body["temperature"] == 0.25
    assert request.body["max_tokens"] == 7
    assert request.messages == MESSAGES
    assert request.headers["authorization"] == "Bearer test-key"
    assert json.loads(request.raw_body) == request.body
    assert before <= request.received_at <= time.monotonic()


def test_script_is_served_in_order_then_the_default(server, client):
    server.script(ok("first"), ok("second"))
    assert server.pending == 2

    replies = [chat(client).choices[0].message.content for _ in range(3)]

    assert replies == ["first", "second", "ok"]
    assert server.pending == 0
    times = [r.received_at for r in server.requests]
    assert times == sorted(times)


def test_default_may_be_a_function_of_the_request():
    def echo(request: RecordedRequest) -> Behaviour:
        return ok("echo: " + request.messages[-1]["content"], completion_tokens=2)

    with running_fault_server(echo) as server:
        with openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0) as client:
            completion = chat(client)
        server.set_default(ok("fixed"))
        with openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0) as client:
            fixed = chat(client)

    assert completion.choices[0].message.content == "echo: What is the capital of France?"
    assert completion.usage.completion_tokens == 2
    assert fixed.choices[0].message.content == "fixed"


def test_models_endpoint_lists_the_model_and_is_not_a_completion(server, client):
    models = client.models.list()

    assert [m.id for m in models.data] == ["fault-model"]
    assert [r.behaviour for r in server.requests] == ["models"]
    assert server.completions == []


def test_streaming_ok_sends_chunks_and_usage(server, client):
    server.script(ok("streamed", prompt_tokens=2, completion_tokens=3))

    chunks = list(chat(client, stream=True, stream_options={"include_usage": True}))

    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "streamed"
    assert chunks[-1].usage.total_tokens == 5


# -- faults ---------------------------------------------------------------------------------


def test_timeout_outlasts_the_client_timeout(server, client):
    server.script(timeout(3))

    started = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        chat(client)
    waited = time.monotonic() - started

    assert CLIENT_TIMEOUT_S * 0.9 <= waited < 3
    assert [r.behaviour for r in server.requests] == ["timeout"]


def test_timeout_answers_late_when_the_client_waits(server):
    server.script(timeout(0.3, text="finally"))

    with openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0, timeout=5) as client:
        started = time.monotonic()
        completion = chat(client)

    assert completion.choices[0].message.content == "finally"
    assert time.monotonic() - started >= 0.3


def test_status_429_carries_retry_after(server, client):
    server.script(status(429, retry_after=1), status(429, retry_after=0.5))

    with pytest.raises(openai.RateLimitError) as first:
        chat(client)
    with pytest.raises(openai.RateLimitError) as second:
        chat(client)

    assert first.value.status_code == 429
    assert first.value.response.headers["retry-after"] == "1"
    assert second.value.response.headers["retry-after"] == "0.5"
    assert "Too Many Requests" in first.value.message


@pytest.mark.parametrize("code", [500, 503])
def test_server_errors(server, client, code):
    server.script(status(code))

    with pytest.raises(openai.InternalServerError) as raised:
        chat(client)

    assert raised.value.status_code == code
    assert "retry-after" not in raised.value.response.headers


def test_client_retries_through_the_script(server):
    server.script(status(503), connection_reset(), ok("third time"))

    with openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=2, timeout=5) as client:
        completion = chat(client)

    assert completion.choices[0].message.content == "third time"
    assert [r.behaviour for r in server.requests] == ["status", "connection_reset", "ok"]


def test_truncated_body_is_a_connection_error(server, client):
    server.script(truncated_body())

    with pytest.raises(openai.APIConnectionError) as raised:
        chat(client)

    assert not isinstance(raised.value, openai.APITimeoutError)
    # httpx's (or httpx2's) RemoteProtocolError: the body ended before Content-Length.
    cause = raised.value.__cause__
    assert type(cause).__name__ == "RemoteProtocolError"
    assert "complete message body" in str(cause)


def test_truncated_body_sends_half_of_the_declared_length(server):
    server.script(truncated_body())

    with raw_post(server, REQUEST_BODY) as response:
        declared = int(response.getheader("Content-Length"))
        with pytest.raises(http.client.IncompleteRead) as raised:
            response.read()

    assert response.status == 200
    assert len(raised.value.partial) == declared // 2
    with pytest.raises(json.JSONDecodeError):
        json.loads(raised.value.partial)


def test_truncated_stream_ends_without_done(server, client):
    server.script(truncated_body())

    chunks = list(chat(client, stream=True))

    # One role chunk, then the connection closes; the client reports no error.
    assert len(chunks) == 1
    assert chunks[0].choices[0].delta.role == "assistant"
    assert not chunks[0].choices[0].finish_reason


def test_empty_body_is_a_200_with_nothing_in_it(server, client):
    server.script(empty_body(), empty_body())

    with raw_post(server, REQUEST_BODY) as response:
        received = (response.status, response.getheader("Content-Type"), response.read())
    assert received == (200, "application/json", b"")
    # What openai-python makes of it: a JSON error, not an openai.APIError.
    with pytest.raises(json.JSONDecodeError):
        chat(client)


def test_connection_reset_is_a_connection_error(server, client):
    server.script(connection_reset())

    with pytest.raises(openai.APIConnectionError) as raised:
        chat(client)

    assert not isinstance(raised.value, openai.APITimeoutError)
    assert "reset" in str(raised.value.__cause__).lower()


def test_connection_reset_is_a_tcp_reset_not_a_close(server):
    server.script(connection_reset())
    address = urlsplit(server.base_url)
    request = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(REQUEST_BODY)}\r\n\r\n".encode()
        + REQUEST_BODY
    )

    with socket.create_connection((address.hostname, address.port), timeout=5) as sock:
        sock.sendall(request)
        with pytest.raises(ConnectionResetError):
            sock.recv(1024)


def test_empty_choices(server, client):
    server.script(empty_choices())

    completion = chat(client)

    assert completion.choices == []
    assert completion.usage.prompt_tokens == 5


def test_null_content(server, client):
    server.script(null_content())

    completion = chat(client)

    assert len(completion.choices) == 1
    assert completion.choices[0].message.content is None
    assert completion.choices[0].finish_reason == "stop"


# -- requests the server refuses, and its limits -------------------------------------------


def test_unknown_route_is_404(server, client):
    with pytest.raises(openai.NotFoundError):
        client.embeddings.create(model="m", input="x")

    assert [r.behaviour for r in server.requests] == ["not_found"]


def test_a_body_that_is_not_json_is_400_and_keeps_the_script(server):
    server.script(status(503))

    with raw_post(server, b"{not json") as response:
        received = (response.status, json.loads(response.read()))

    assert received[0] == 400
    assert received[1]["error"]["code"] == 400
    assert server.pending == 1
    assert server.requests[0].behaviour == "bad_request"
    assert server.requests[0].body is None


@pytest.mark.parametrize(
    "make",
    [
        lambda: status(200),
        lambda: status(600),
        lambda: status(429, retry_after=-1),
        lambda: timeout(0),
        lambda: timeout(61),
        lambda: ok("x", prompt_tokens=-1),
        lambda: ok("x", completion_tokens=1.5),
    ],
)
def test_bad_behaviours_are_refused(make):
    with pytest.raises(ValueError):
        make()


def test_script_takes_only_behaviours_and_is_bounded(server):
    with pytest.raises(TypeError, match="Behaviour"):
        server.script("ok")
    with pytest.raises(ValueError, match="1000"):
        server.script(*[ok()] * 1001)
    assert server.pending == 0


# -- lifecycle --------------------------------------------------------------------------------


def test_base_url_before_start_is_an_error():
    with pytest.raises(RuntimeError, match="not running"):
        _ = FaultServer().base_url


def test_stop_wakes_a_delayed_reply_and_closes_the_port():
    server = FaultServer().start()
    base_url = server.base_url
    server.script(timeout(30))
    errors: list[BaseException] = []

    def waiting_client() -> None:
        with openai.OpenAI(base_url=base_url, api_key="k", max_retries=0, timeout=20) as client:
            try:
                chat(client)
            except openai.APIError as exc:
                errors.append(exc)

    thread = threading.Thread(target=waiting_client)
    thread.start()
    deadline = time.monotonic() + 5
    while not server.requests and time.monotonic() < deadline:
        time.sleep(0.02)

    started = time.monotonic()
    server.stop()
    thread.join(timeout=10)

    assert time.monotonic() - started < 5
    assert not thread.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], openai.APIConnectionError)
    with openai.OpenAI(base_url=base_url, api_key="k", max_retries=0, timeout=2) as client:
        with pytest.raises(openai.APIConnectionError):
            chat(client)
    server.stop()  # a second stop is harmless
