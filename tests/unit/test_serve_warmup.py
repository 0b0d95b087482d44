"""The port opens before the model loads (gear_agent.serve.warmup.WarmingApp): /health says
"warming" from memory, other routes 503 with Retry-After, then the real app answers; a
failed build is said in one line."""

from __future__ import annotations

import asyncio
import threading

import httpx

from gear_agent.config import ServeSettings
from gear_agent.errors import GearError
from gear_agent.serve.warmup import WarmingApp


async def real_app(scope, receive, send) -> None:
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": b'{"real": true}'})


def client(app: WarmingApp) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1")


def test_warming_then_ready() -> None:
    go_on = threading.Event()

    def build():
        go_on.wait(10)
        return real_app

    app = WarmingApp(build, ServeSettings(), ["127.0.0.1"], facts={"backend": "embedded"})
    app.start()

    async def before():
        async with client(app) as http:
            return (await http.get("/health"), await http.get("/ui/api/config"),
                    await http.get("/health", headers={"host": "evil.example"}))
    health, other, evil = asyncio.run(before())
    assert health.status_code == 200 and health.json() == {"status": "warming", "backend": "embedded"}
    assert other.status_code == 503 and other.headers["retry-after"] == "2"
    assert "warming up" in other.json()["message"]
    assert evil.status_code == 400  # the Host check holds while warming too
    go_on.set()
    assert app.ready.wait(10) and app.status == "ok"

    async def after():
        async with client(app) as http:
            return await http.get("/ui/api/config")
    assert asyncio.run(after()).json() == {"real": True}


def test_a_failed_build_is_said_in_one_line() -> None:
    said: list[str] = []

    def build():
        raise GearError("no index at\n  /x")

    app = WarmingApp(build, ServeSettings(), ["127.0.0.1"], on_failure=said.append)
    app.start()
    assert app.ready.wait(10) and app.status == "failed"

    async def go():
        async with client(app) as http:
            return await http.get("/health"), await http.get("/")
    health, page = asyncio.run(go())
    assert said == ["no index at /x"]
    assert health.status_code == 503 and health.json()["message"] == "no index at /x"
    assert page.status_code == 503 and "could not start: no index at /x" in page.json()["message"]
