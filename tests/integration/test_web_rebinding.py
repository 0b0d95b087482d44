"""Only this machine's pages can write (issue 36), in a real browser: Debian's Chromium
through Playwright, resolving ``evil.example`` and ``other.example`` to 127.0.0.1
(``--host-resolver-rules``), as DNS rebinding would.

* rebinding: a page of ``http://evil.example:PORT/`` (served by the attacker before the name
  was rebound to 127.0.0.1; Playwright hands it to the browser) posts to its own origin,
  which now reaches the server: refused, the index stays whole;
* cross-origin: a page of another site posts JSON (and a "simple" text post) to the server:
  refused, the index stays whole;
* same origin: the server's own page posts and it works.

Skipped, with the reason, where Playwright or Chromium is missing (a failure under CI).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("langserve", reason="the serve extra is not installed (pip install gear-agent[serve])")

from support.web_page import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_FLAGS,
    browser_missing,
    free_port,
    serving_demo,
)

MISSING = browser_missing()
if MISSING and os.environ.get("CI") == "true":
    raise RuntimeError(f"the browser tests cannot run in CI: {MISSING}")
pytestmark = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")

TIMEOUT_MS = 30_000
RESOLVE = "--host-resolver-rules=MAP evil.example 127.0.0.1, MAP other.example 127.0.0.1"
# Chromium's own guard (Private/Local Network Access) would stop a page it took for public
# before the request left; browsers without it (and the page the issue found, served from
# loopback) send it, so it is off here: what is tested is the server's refusal.
NO_PNA = ("--disable-features=BlockInsecurePrivateNetworkRequests,PrivateNetworkAccessSendPreflights,"
          "PrivateNetworkAccessRespectPreflightResults,LocalNetworkAccessChecks")

ATTACK = r"""<!doctype html><title>prize</title><pre id="out">running</pre><script>
(async () => {
  const results = [];
  for (const [path, init] of %s) {
    try {
      const response = await fetch(path, init);
      results.push(String(response.status));
    } catch (error) {
      results.push("blocked:" + error.message.replace(/\s+/g, "_"));
    }
  }
  document.getElementById("out").textContent = results.join(" ");
})();
</script>"""


def attack_page(target: str) -> str:
    json_post = {"method": "POST", "headers": {"Content-Type": "application/json"},
                 "body": '{"source": "demo"}'}
    simple_post = {"method": "POST", "mode": "no-cors", "headers": {"Content-Type": "text/plain"},
                   "body": '{"source": "demo"}'}
    requests = [[target + "/ui/api/documents/delete", json_post],
                [target + "/ui/api/documents/delete", simple_post],
                [target + "/ui/api/documents", {}]]
    import json

    return ATTACK % json.dumps(requests)


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serving_demo(tmp_path_factory.mktemp("rebind")) as base:
        yield base


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=str(CHROMIUM), headless=True,
            args=[*CHROMIUM_FLAGS, RESOLVE, NO_PNA], env={**os.environ, "HOME": str(tmp_path)})
        try:
            yield context
        finally:
            context.close()


def passages(url: str) -> int:
    return httpx.get(url + "/ui/api/documents", timeout=10).json()["total"]


def run_attack(browser: Any, page_url: str, target: str) -> str:
    """Open ``page_url`` as the attacker's page (served to the browser by Playwright, as the
    attacker's own server would) and return what its requests got."""
    page = browser.new_page()
    page.route(page_url, lambda route: route.fulfill(status=200, content_type="text/html",
                                                       body=attack_page(target)))
    page.goto(page_url)
    out = page.locator("#out")
    out.filter(has_not_text="running").wait_for(timeout=TIMEOUT_MS)
    return out.inner_text()


def test_a_rebound_name_reaches_nothing_and_the_index_stays_whole(browser: Any, url: str) -> None:
    port = url.rsplit(":", 1)[1]
    before = passages(url)
    assert before > 0
    direct = browser.new_page().goto(f"http://evil.example:{port}/")  # the name now points here
    assert direct is not None and direct.status == 400
    got = run_attack(browser, f"http://evil.example:{port}/", "")  # its own origin, rebound
    # every request reached the server and was refused for its Host
    assert got.split() == ["400", "400", "400"], got
    assert passages(url) == before


def test_a_cross_origin_post_fails_and_the_index_stays_whole(browser: Any, url: str) -> None:
    before = passages(url)
    got = run_attack(browser, f"http://other.example:{free_port()}/", url).split()
    assert got[0].startswith("blocked") and got[2].startswith("blocked"), got  # no CORS: the browser stops them
    assert got[1] == "0", got  # the simple post is sent (opaque) and refused by its Origin
    assert passages(url) == before


def test_the_servers_own_page_can_write(browser: Any, url: str) -> None:
    added = httpx.post(url + "/ui/api/documents/stream", timeout=30,
                       json={"title": "Harbour", "text": "A lighthouse.", "source": "notes/same-origin"})
    assert added.status_code == 200 and "event: done" in added.text
    before = passages(url)
    page = browser.new_page()
    page.goto(url + "/")
    status = page.evaluate("""async () => (await fetch('/ui/api/documents/delete', {method: 'POST',
        headers: {'Content-Type': 'application/json'}, body: '{"source": "notes/same-origin"}'})).status""")
    assert status == 200
    assert passages(url) == before - 1
