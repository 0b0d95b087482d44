"""``/health`` is answered from bytes ahead of every other layer (issue 36, item 2), and the
server's memory helpers do what they say on glibc and nothing elsewhere."""

from __future__ import annotations

import asyncio
import json

from gear_agent.serve.health import HealthFirst
from gear_agent.serve.memory import limit_malloc_arenas, release_free_memory


def call(app, method: str, path: str) -> tuple[list[dict], list[str]]:  # noqa: ANN001
    sent: list[dict] = []
    reached: list[str] = []

    async def send(message: dict) -> None:
        sent.append(message)

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def inner(scope, _receive, _send) -> None:  # noqa: ANN001
        reached.append(scope["path"])

    asyncio.run(HealthFirst(inner, app)({"type": "http", "method": method, "path": path, "headers": []},
                                        receive, send))
    return sent, reached


def test_health_is_answered_without_reaching_the_app() -> None:
    facts = {"status": "ok", "backend": "embedded"}
    sent, reached = call(facts, "GET", "/health")
    assert reached == []
    assert sent[0]["status"] == 200 and (b"content-type", b"application/json") in sent[0]["headers"]
    assert json.loads(sent[1]["body"]) == facts


def test_head_gets_no_body_and_other_routes_pass_through() -> None:
    sent, reached = call({"status": "ok"}, "HEAD", "/health")
    assert reached == [] and sent[1]["body"] == b""
    for method, path in (("POST", "/health"), ("GET", "/health/x"), ("GET", "/ui/api/health")):
        sent, reached = call({"status": "ok"}, method, path)
        assert reached == [path] and sent == []


def test_the_memory_helpers_answer_a_bool_and_never_raise(monkeypatch) -> None:  # noqa: ANN001
    assert isinstance(release_free_memory(), bool)
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert limit_malloc_arenas() is False  # the environment's setting wins


def test_the_server_process_hands_the_gil_over_within_a_millisecond() -> None:
    import sys

    from gear_agent.serve.process import SWITCH_INTERVAL_S, prepare_server_process

    before = sys.getswitchinterval()
    try:
        prepare_server_process()
        assert sys.getswitchinterval() <= SWITCH_INTERVAL_S
    finally:
        sys.setswitchinterval(before)
