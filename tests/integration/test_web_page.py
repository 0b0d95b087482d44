"""The web page at ``/`` in a real browser (Debian's Chromium through Playwright): ask and
see the cited answer arrive with a chain drawn, find an entity, add and delete a document;
keyboard only where a person might, at a phone's width, and no request to another host.

The page's Content-Security-Policy forbids evaluating strings, so the tests wait with
locators, never ``wait_for_function``. Skipped, with the reason, where Playwright or
Chromium is missing; under CI (``CI=true``)
a missing browser is a failure, so the page is always tested there.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langserve", reason="the serve extra is not installed (pip install gear-agent[serve])")

from support.demo_chat import ANSWER, QUESTION, QUOTE  # noqa: E402
from support.web_page import browser_missing, chromium, serving_demo  # noqa: E402

MISSING = browser_missing()
if MISSING and os.environ.get("CI") == "true":
    raise RuntimeError(f"the browser tests cannot run in CI: {MISSING}")
pytestmark = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")

TIMEOUT_MS = 30_000


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serving_demo(tmp_path_factory.mktemp("web")) as base:
        yield base


@pytest.fixture
def page(url: str, tmp_path: Path) -> Iterator[Any]:
    """A fresh page; at the end, every request it made went to the server."""
    with chromium(tmp_path / "profile") as context:
        page = context.new_page()
        requests: list[str] = []
        page.on("request", lambda request: requests.append(request.url))
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(url + "/")
        yield page
        assert requests and all(r.startswith(url + "/") for r in requests), requests
        assert errors == []


def test_ask_streams_the_answer_with_citations_quotes_and_a_chain(page: Any) -> None:
    page.locator("#retriever option").nth(1).wait_for(state="attached")
    page.evaluate("""() => {
        window.seen = [];
        new MutationObserver(() => {
            const a = document.querySelector('#thread .assistant .answer');
            if (a) window.seen.push(a.textContent);
        }).observe(document.getElementById('thread'), {subtree: true, childList: true, characterData: true});
    }""")
    page.locator("#question").fill(QUESTION)
    page.locator("#question").press("Control+Enter")  # the keyboard sends it
    page.locator("#thread .assistant a.cite").first.wait_for(timeout=TIMEOUT_MS)
    answer = page.locator("#thread .assistant .answer")
    assert answer.inner_text().startswith(f"{ANSWER} [1]")
    seen = page.evaluate("window.seen")
    assert "Ilse" in seen and ANSWER in seen  # the answer arrived word by word
    steps = page.locator("#steps li").all_inner_texts()
    assert steps[0].startswith("start (iteration 1)") and any("): answerable: " in s for s in steps)
    assert "Oskar Brenner" in page.locator("#memory").inner_text()  # the gist memory grew
    cited = page.locator("#passages .card.cited").first
    assert cited.locator("mark").inner_text() == QUOTE  # the cited quote, highlighted
    chain = cited.locator("svg.chain")
    assert chain.count() == 1 and chain.locator("g.edge.chain").count() >= 1  # its chain, drawn
    assert cited.locator("svg .node.passage").count() == 1
    # A follow-up goes into the same chat with the thread so far.
    page.locator("#question").fill("And where did she live?")
    page.locator("#ask-button").click()
    page.locator("#thread .assistant").nth(1).locator("a.cite").first.wait_for(timeout=TIMEOUT_MS)
    assert page.locator("#thread .msg").count() == 4


def test_a_retriever_and_a_filter_can_be_chosen(page: Any) -> None:
    page.locator("#retriever option").nth(1).wait_for(state="attached")
    page.locator("#options summary").click()
    page.locator("#retriever").select_option("hybrid+naive_ge")
    page.locator("#k").fill("2")
    page.locator("#question").fill(QUESTION)
    page.locator("#ask-button").click()
    page.locator("#passages .card").first.wait_for(timeout=TIMEOUT_MS)
    assert page.locator("#passages .card").count() == 2
    page.locator("#where").fill("year>>2")
    page.locator("#ask-button").click()
    alert = page.locator("#passages [role=alert]")
    alert.wait_for(timeout=TIMEOUT_MS)
    assert "bad filter 'year>>2'" in alert.inner_text()


def test_explore_finds_an_entity_its_neighbourhood_and_the_passages_behind(page: Any) -> None:
    tab = page.locator("#tab-ask")
    tab.focus()
    page.keyboard.press("ArrowRight")  # tabs move with the arrow keys
    assert page.locator("#explore").is_visible()
    page.locator("#entity-q").fill("kestrel")
    page.locator("#entity-q").press("Enter")
    view = page.locator("#entity-view svg.graph")
    view.wait_for(timeout=TIMEOUT_MS)
    assert view.locator(".node.focus").count() == 1
    assert "Kestrel Observatory" in page.locator("#entity-view h2").inner_text()
    page.locator("#entity-view td button[data-passage]").first.click()
    passage = page.locator("#passage-view article")
    passage.wait_for(timeout=TIMEOUT_MS)
    assert "Its triples" in passage.inner_text() and passage.locator("tr").count() >= 1
    node = page.locator("#entity-view svg .node:not(.focus)").first  # a node, by keyboard
    name = node.locator("title").text_content()
    node.focus()
    page.keyboard.press("Enter")
    heading = page.locator("#entity-view h2", has_text=re.compile("^" + re.escape(name), re.I))
    heading.wait_for(timeout=TIMEOUT_MS)


def test_documents_add_with_progress_then_delete_after_a_confirmation(page: Any) -> None:
    page.locator("#tab-documents").click()
    page.locator("#health td.ok").first.wait_for(timeout=TIMEOUT_MS)
    assert "gear check: ok" in page.locator("#health").inner_text()
    page.locator("#doc-title").fill("Harbour Lighthouse")
    page.locator("#doc-text").fill("The Harbour Lighthouse was built by Marela Voss in 1931.")
    page.locator("#doc-source").fill("notes/lighthouse")
    page.locator("#add-button").click()
    status = page.locator("#add-status")
    page.locator("#add-status", has_text=re.compile("^added")).wait_for(timeout=TIMEOUT_MS)
    assert status.inner_text().startswith("added 1 passage(s) (0 already stored)")
    page.locator("#doc-list td", has_text="notes/lighthouse").wait_for(timeout=TIMEOUT_MS)
    page.locator("#delete-source").fill("notes/lighthouse")
    page.locator("#delete-form button[type=submit]").click()
    preview = page.locator("#delete-preview .box")
    preview.wait_for(timeout=TIMEOUT_MS)
    assert "These 1 passage(s)" in preview.inner_text() and "Harbour Lighthouse" in preview.inner_text()
    assert page.evaluate("document.activeElement.id") == "confirm-delete"
    page.keyboard.press("Enter")  # the confirmation has the focus
    page.locator("#delete-preview [role=status]").wait_for(timeout=TIMEOUT_MS)
    assert page.locator("#delete-preview").inner_text().startswith("deleted 1 passage(s)")
    page.locator("#doc-list td", has_text="notes/lighthouse").wait_for(state="detached", timeout=TIMEOUT_MS)


def test_readable_at_a_phone_width(url: str, tmp_path: Path) -> None:
    """At 390 px, with each page's content loaded, nothing is wider than the screen."""
    with chromium(tmp_path / "profile", viewport={"width": 390, "height": 844}) as context:
        page = context.new_page()
        page.goto(url + "/")
        page.locator("#question").fill(QUESTION)
        page.locator("#ask-button").click()
        page.locator("#passages .card svg.chain").first.wait_for(timeout=TIMEOUT_MS)
        widths = {"ask": page.evaluate("document.documentElement.scrollWidth")}
        page.locator("#tab-explore").click()
        page.locator("#entity-q").fill("kestrel")
        page.locator("#entity-q").press("Enter")
        page.locator("#entity-view svg.graph").wait_for(timeout=TIMEOUT_MS)
        widths["explore"] = page.evaluate("document.documentElement.scrollWidth")
        page.locator("#tab-documents").click()
        page.locator("#doc-list tbody tr").first.wait_for(timeout=TIMEOUT_MS)
        page.locator("#health td.ok").first.wait_for(timeout=TIMEOUT_MS)
        widths["documents"] = page.evaluate("document.documentElement.scrollWidth")
        assert all(w <= 390 for w in widths.values()), widths
