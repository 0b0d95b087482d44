"""The server's door (gear_agent.serve.limits.RequestGuard) around a stand-in app: every
limit answers its status with one JSON line before the app sees the request."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from gear_agent.config import GearSettings, ServeSettings
from gear_agent.serve.limits import RequestGuard


class StandIn:
    """An ASGI app that echoes the body's size; ``/gear/invoke`` waits for ``release``."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.seen = 0

    async def __call__(self, scope, receive, send) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.seen += 1
        if scope["path"].endswith("/invoke") and b"wait" in body:
            await self.release.wait()
        payload = json.dumps({"bytes": len(body)}).encode()
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": payload})


def client(limits: ServeSettings, app: StandIn | None = None) -> tuple[httpx.AsyncClient, RequestGuard, StandIn]:
    app = app or StandIn()
    guard = RequestGuard(app, limits)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=guard), base_url="http://t"), guard, app


def run(coroutine):
    return asyncio.run(coroutine)


def test_a_body_over_the_limit_is_refused_before_it_is_read() -> None:
    async def go():
        http, _, app = client(ServeSettings(serve_max_body_bytes=1_000))
        async with http:
            declared = await http.post("/gear/invoke", json={"input": {"question": "x" * 2_000}})

            async def chunks():
                for _ in range(100):
                    yield b" " * 100
            chunked = await http.post("/gear/invoke", content=chunks(),
                                      headers={"content-type": "application/json"})
            ok = await http.post("/gear/invoke", json={"input": {"question": "q"}})
        return declared, chunked, ok, app.seen

    declared, chunked, ok, seen = run(go())
    assert declared.status_code == 413 and "GEAR_SERVE_MAX_BODY_BYTES" in declared.json()["message"]
    assert chunked.status_code == 413
    assert ok.status_code == 200 and seen == 1  # the app saw only the good one


def test_only_json_posts_are_accepted() -> None:
    async def go():
        http, _, _ = client(ServeSettings())
        async with http:
            return [await http.post("/gear/invoke", content=b"question=q", headers={"content-type": kind})
                    for kind in ("text/plain", "application/x-www-form-urlencoded", "")]

    assert [r.status_code for r in run(go())] == [415, 415, 415]


@pytest.mark.parametrize(
    ("body", "says"),
    [(b"\xff\xfe", "not UTF-8"), (b"[" * 3000, "nested deeper"), (b"1" * 5000, "4,300 digits"),
     (b"{", "not valid JSON")],
)
def test_bad_json_is_a_400(body: bytes, says: str) -> None:
    async def go():
        http, _, _ = client(ServeSettings())
        async with http:
            return await http.post("/gear/invoke", content=body, headers={"content-type": "application/json"})

    response = run(go())
    assert response.status_code == 400 and says in response.json()["message"]


def test_a_batch_over_the_limit_is_refused() -> None:
    async def go():
        http, _, _ = client(ServeSettings(serve_max_batch=3))
        async with http:
            big = await http.post("/gear/batch", json={"inputs": [{"question": "q"}] * 4})
            small = await http.post("/gear/batch", json={"inputs": [{"question": "q"}] * 3})
        return big, small

    big, small = run(go())
    assert big.status_code == 413 and "GEAR_SERVE_MAX_BATCH" in big.json()["message"]
    assert small.status_code == 200


def test_runs_past_the_limit_are_shed_with_retry_after() -> None:
    async def go():
        http, guard, app = client(ServeSettings(serve_max_concurrent=2, serve_max_batch=5))
        async with http:
            held = [asyncio.create_task(http.post("/gear/invoke", json={"input": "wait"}))
                    for _ in range(2)]
            while guard.in_flight < 2:
                await asyncio.sleep(0.001)
            shed = await http.post("/gear/invoke", json={"input": "now"})
            batch = await http.post("/gear/batch", json={"inputs": ["a"]})  # one more run: shed too
            health = await http.get("/health")  # not a run: never shed
            app.release.set()
            done = await asyncio.gather(*held)
            after = await http.post("/gear/invoke", json={"input": "now"})
        return shed, batch, health, done, after, guard

    shed, batch, health, done, after, guard = run(go())
    assert shed.status_code == 503 and shed.headers["retry-after"] == "1"
    assert batch.status_code == 503
    assert health.status_code == 200
    assert [r.status_code for r in done] == [200, 200] and after.status_code == 200
    assert guard.in_flight == 0 and guard.shed == 2


def test_the_api_key_guards_everything_but_health() -> None:
    async def go():
        http, _, _ = client(ServeSettings(api_key="s3cret"))
        async with http:
            return (await http.post("/gear/invoke", json={}),
                    await http.post("/gear/invoke", json={}, headers={"authorization": "Bearer nope"}),
                    await http.post("/gear/invoke", json={}, headers={"authorization": "Bearer s3cret"}),
                    await http.get("/gear/playground/"),
                    await http.get("/health"))

    missing, wrong, right, page, health = run(go())
    assert (missing.status_code, wrong.status_code, right.status_code) == (401, 401, 200)
    assert page.status_code == 401 and health.status_code == 200


def test_a_request_past_its_deadline_is_a_504() -> None:
    async def go():
        http, _, _ = client(ServeSettings(serve_request_timeout_s=0.05))
        async with http:
            return await http.post("/gear/invoke", json={"input": "wait"})

    response = run(go())
    assert response.status_code == 504 and "GEAR_SERVE_REQUEST_TIMEOUT_S" in response.json()["message"]


def test_limits_come_from_the_settings() -> None:
    settings = GearSettings(serve_max_batch=2, serve_cors_origins="https://a.example, ",
                            api_key="k")
    guard = RequestGuard(StandIn(), settings)
    assert (guard.settings.serve_max_batch, guard.api_key) == (2, "k")
    assert settings.allowed_origins == ("https://a.example",)
    assert GearSettings().allowed_origins == ()  # CORS off by default
