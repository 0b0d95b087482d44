"""Which sites reach the server (gear_agent.serve.site_guard.SiteGuard) and the write key,
read limit and batch clamp of gear_agent.serve.limits, around a stand-in app."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from gear_agent.config import ServeSettings
from gear_agent.errors import GearError
from gear_agent.serve.limits import RequestGuard, max_batch, startup_notes
from gear_agent.serve.site_guard import SiteGuard, allowed_hosts, check_cors


class Echo:
    """Answers 200 with the path; an HTML page at ``/page``; ``/ui/api/slow`` waits."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.seen: list[str] = []

    async def __call__(self, scope, receive, send) -> None:
        while (await receive()).get("more_body"):
            pass
        self.seen.append(scope["path"])
        if scope["path"] == "/ui/api/slow":
            await self.release.wait()
        html = scope["path"] == "/page"
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"text/html; charset=utf-8" if html else b"application/json")]})
        await send({"type": "http.response.body", "body": json.dumps({"path": scope["path"]}).encode()})


def door(settings: ServeSettings, *, bound: str = "127.0.0.1", read_only: bool = False,
         base: str = "http://127.0.0.1:8000") -> tuple[httpx.AsyncClient, Echo, RequestGuard]:
    app = Echo()
    guard = RequestGuard(app, settings)
    site = SiteGuard(guard, settings, allowed_hosts(settings, bound), read_only=read_only)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=site), base_url=base), app, guard


DELETE = "/ui/api/documents/delete"


def test_a_host_not_allowed_is_a_400_with_the_names_allowed() -> None:
    async def go():
        http, app, _ = door(ServeSettings(serve_allowed_hosts="gear.lan"))
        async with http:
            bad = await http.get("/health", headers={"host": "evil.example:8000"})
            good = [await http.get("/health", headers={"host": h}) for h in
                    ("127.0.0.1:8000", "localhost:8000", "[::1]:8000", "GEAR.lan", "localhost")]
        return bad, good, app
    bad, good, app = asyncio.run(go())
    assert bad.status_code == 400 and "evil.example" in bad.json()["message"]
    assert "--allowed-hosts" in bad.json()["message"] and bad.headers["connection"] == "close"
    assert [r.status_code for r in good] == [200] * 5 and app.seen == ["/health"] * 5


def test_the_bound_address_is_allowed_and_a_star_allows_any() -> None:
    assert "10.1.2.3" in allowed_hosts(ServeSettings(), "10.1.2.3")
    assert "0.0.0.0" not in allowed_hosts(ServeSettings(), "0.0.0.0")

    async def go():
        http, _, _ = door(ServeSettings(serve_allowed_hosts="*"))
        async with http:
            return await http.get("/x", headers={"host": "anything.example"})
    assert asyncio.run(go()).status_code == 200


@pytest.mark.parametrize(("headers", "status"), [
    ({"origin": "http://evil.example:8000"}, 403),           # another site
    ({"origin": "http://localhost:3000"}, 403),              # another port is another origin
    ({"origin": "null"}, 403),                               # a sandboxed frame or a file
    ({"sec-fetch-site": "cross-site"}, 403),
    ({"sec-fetch-site": "same-site"}, 403),
    ({"origin": "http://127.0.0.1:8000"}, 200),              # the page itself
    ({"sec-fetch-site": "same-origin"}, 200),
    ({}, 200),                                               # not a browser: curl, Python
])
def test_a_post_from_another_site_is_a_403(headers: dict[str, str], status: int) -> None:
    async def go():
        http, app, _ = door(ServeSettings())
        async with http:
            return await http.post(DELETE, json={"source": "s"}, headers=headers), app
    response, app = asyncio.run(go())
    assert response.status_code == status
    assert app.seen == ([DELETE] if status == 200 else [])
    if status == 403:
        assert "may not post here" in response.json()["message"]


def test_listed_cors_origins_may_post() -> None:
    async def go():
        http, _, _ = door(ServeSettings(serve_cors_origins="https://app.example"))
        async with http:
            return [(await http.post("/gear/invoke", json={}, headers={"origin": o})).status_code
                    for o in ("https://app.example", "https://other.example")]
    assert asyncio.run(go()) == [200, 403]


def test_a_wildcard_cors_setting_beside_write_routes_is_refused_at_start_up() -> None:
    wildcard = ServeSettings(serve_cors_origins="*")
    with pytest.raises(GearError, match="--read-only, or set GEAR_SERVE_CORS_ANY_ORIGIN_WRITES"):
        check_cors(wildcard, writes=True)
    check_cors(wildcard, writes=False)  # read-only: no write route to open
    check_cors(ServeSettings(serve_cors_origins="*", serve_cors_any_origin_writes=True), writes=True)


def test_read_only_refuses_the_write_routes_only() -> None:
    async def go():
        http, app, _ = door(ServeSettings(), read_only=True)
        async with http:
            write = await http.post(DELETE, json={"ids": ["p"]})
            add = await http.post("/ui/api/documents/stream", json={"text": "t"})
            preview = await http.post("/ui/api/documents/preview-delete", json={"ids": ["p"]})
        return write, add, preview, app
    write, add, preview, app = asyncio.run(go())
    assert write.status_code == add.status_code == 403 and "read-only" in write.json()["message"]
    assert preview.status_code == 200 and app.seen == ["/ui/api/documents/preview-delete"]


def test_a_write_key_guards_writes_while_reads_stay_open() -> None:
    async def go():
        http, _, _ = door(ServeSettings(serve_write_key="w"))
        async with http:
            return [
                (await http.get("/ui/api/documents")).status_code,
                (await http.post(DELETE, json={})).status_code,
                (await http.post(DELETE, json={}, headers={"authorization": "Bearer nope"})).status_code,
                (await http.post(DELETE, json={}, headers={"authorization": "Bearer w"})).status_code,
            ]
    assert asyncio.run(go()) == [200, 401, 401, 200]


def test_with_both_keys_reads_take_either_and_writes_the_write_key() -> None:
    async def go():
        http, _, _ = door(ServeSettings(api_key="r", serve_write_key="w"))
        async with http:
            def auth(key):
                return {"authorization": f"Bearer {key}"}
            return [
                (await http.get("/ui/api/documents")).status_code,
                (await http.get("/ui/api/documents", headers=auth("r"))).status_code,
                (await http.get("/ui/api/documents", headers=auth("w"))).status_code,
                (await http.post(DELETE, json={}, headers=auth("r"))).status_code,
                (await http.post(DELETE, json={}, headers=auth("w"))).status_code,
            ]
    assert asyncio.run(go()) == [401, 200, 200, 401, 200]


def test_every_response_says_nosniff_and_html_pages_cannot_be_framed() -> None:
    async def go():
        http, _, _ = door(ServeSettings())
        async with http:
            return (await http.get("/page"), await http.get("/x"),
                    await http.get("/x", headers={"host": "evil.example"}))
    page, data, refused = asyncio.run(go())
    assert all(r.headers["x-content-type-options"] == "nosniff" for r in (page, data, refused))
    assert page.headers["content-security-policy"] == "frame-ancestors 'none'"
    assert page.headers["x-frame-options"] == "DENY"
    assert "content-security-policy" not in data.headers


def test_reads_past_the_limit_are_shed_and_health_never_waits() -> None:
    async def go():
        http, app, guard = door(ServeSettings(serve_max_reads=2))
        async with http:
            slow = [asyncio.create_task(http.get("/ui/api/slow")) for _ in range(2)]
            while guard.reads < 2:
                await asyncio.sleep(0.01)
            shed = await http.get("/ui/api/documents")
            health = await http.get("/health")
            page = await http.get("/page")
            app.release.set()
            done = await asyncio.gather(*slow)
        return shed, health, page, done, guard
    shed, health, page, done, guard = asyncio.run(go())
    assert shed.status_code == 503 and shed.headers["retry-after"] == "1"
    assert "GEAR_SERVE_MAX_READS" in shed.json()["message"]
    assert health.status_code == page.status_code == 200
    assert [r.status_code for r in done] == [200, 200] and guard.reads == 0


def test_the_batch_limit_never_exceeds_what_can_run() -> None:
    settings = ServeSettings(serve_max_batch=16, serve_max_concurrent=8)
    assert max_batch(settings) == 8
    assert startup_notes(settings) == ["GEAR_SERVE_MAX_BATCH=16 is more than "
                                       "GEAR_SERVE_MAX_CONCURRENT=8: a batch may have at most 8 inputs"]
    assert startup_notes(ServeSettings(serve_max_batch=4, serve_max_concurrent=8)) == []

    async def go():
        http, _, _ = door(settings)
        async with http:
            return (await http.post("/gear/batch", json={"inputs": [{}] * 9}),
                    await http.post("/gear/batch", json={"inputs": [{}] * 8}))
    big, fits = asyncio.run(go())
    assert big.status_code == 413 and "limit is 8" in big.json()["message"]
    assert "connection" not in big.headers  # the body was read: the connection goes on
    assert fits.status_code == 200


def test_a_refusal_before_the_body_is_read_closes_the_connection() -> None:
    async def go():
        http, _, _ = door(ServeSettings(serve_max_body_bytes=1_000))
        async with http:
            return (await http.post("/gear/invoke", content=b"{}" * 1_000,
                                    headers={"content-type": "application/json"}),
                    await http.post("/gear/invoke", content=b"x", headers={"content-type": "text/plain"}),
                    await http.post("/gear/invoke", content=b"{bad", headers={"content-type": "application/json"}))
    big, form, bad = asyncio.run(go())
    assert big.status_code == 413 and big.headers["connection"] == "close"
    assert form.status_code == 415 and form.headers["connection"] == "close"
    assert bad.status_code == 400 and "connection" not in bad.headers
