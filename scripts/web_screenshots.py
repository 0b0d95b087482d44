"""Regenerate the web page's screenshots in docs/: Ask, Explore, Documents, Ask at a
phone's width, and an Ask answered through PPR at 1280 and 390 px.

    python scripts/web_screenshots.py [--out docs] [--embedding-model hashing-384]

It indexes the demo corpus (``examples/demo/``, real all-MiniLM-L6-v2 embeddings by
default) in a temporary folder, serves the page over it on a free loopback port with a
scripted chat model that streams its replies (no LLM; tests/support/web_page.py), and
drives Debian's Chromium through Playwright: asks the demo question, explores the Kestrel
Observatory, opens the Documents page with a deletion waiting for its confirmation; then
serves the same index with the agent expanding through PPR (``GEAR_EXPANSION=ppr``) and
asks again at 1280 and 390 px, so each ranked passage shows the chain that reached it or
the seed triples whose PPR mass reached it, drawn top to bottom (``web-ask-ppr.png``,
``web-ask-ppr-phone.png``).

Needs ``apt-get install -y chromium`` and ``pip install -e ".[serve,browser]"``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.demo_chat import QUESTION  # noqa: E402
from support.web_page import browser_missing, build_demo_index, chromium, serving  # noqa: E402

WAIT_MS = 60_000


def ask(page, url: str, path: Path) -> None:
    page.goto(url + "/")
    page.locator("#retriever option").nth(1).wait_for(state="attached")
    page.locator("#question").fill(QUESTION)
    page.locator("#ask-button").click()
    page.locator("#thread .assistant a.cite").first.wait_for(timeout=WAIT_MS)
    page.locator("#question").blur()
    page.screenshot(path=str(path), full_page=True)


def ask_ppr(page, url: str, path: Path) -> None:
    """The demo question answered by the agent expanding through PPR, once a ranked
    passage's chain is drawn (the whole page)."""
    ask(page, url, path)
    page.locator("#passages .card svg.chain").first.wait_for(timeout=WAIT_MS)
    page.screenshot(path=str(path), full_page=True)


def explore(page, url: str, path: Path) -> None:
    page.goto(url + "/#explore")
    page.locator("#entity-q").fill("kestrel")
    page.locator("#entity-q").press("Enter")
    page.locator("#entity-view svg.graph").wait_for(timeout=WAIT_MS)
    page.locator("#entity-view td button[data-passage]").first.click()
    page.locator("#passage-view article").wait_for(timeout=WAIT_MS)
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(path), full_page=True)


def documents(page, url: str, path: Path) -> None:
    page.goto(url + "/#documents")
    page.locator("#health td.ok").first.wait_for(timeout=WAIT_MS)
    page.locator("#doc-list tbody tr").first.wait_for(timeout=WAIT_MS)
    page.locator("#delete-source").fill("corpus.json")
    page.locator("#delete-form button[type=submit]").click()
    page.locator("#delete-preview .box").wait_for(timeout=WAIT_MS)
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(path), full_page=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs", help="Folder of the PNGs.")
    parser.add_argument("--embedding-model", default="sentence-transformers/all-MiniLM-L6-v2")
    args = parser.parse_args()
    missing = browser_missing()
    if missing:
        raise SystemExit(missing)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="gear-web-") as folder:
        index = Path(folder) / "index"
        build_demo_index(index, args.embedding_model)
        with serving(index, args.embedding_model) as url:
            with chromium(Path(folder) / "wide", {"width": 1280, "height": 800}) as context:
                page = context.new_page()
                ask(page, url, args.out / "web-ask.png")
                explore(page, url, args.out / "web-explore.png")
                documents(page, url, args.out / "web-documents.png")
            with chromium(Path(folder) / "phone", {"width": 390, "height": 844}) as context:
                ask(context.new_page(), url, args.out / "web-phone.png")
        os.environ["GEAR_EXPANSION"] = "ppr"  # the agent's expansion, read by the server's settings
        try:
            with serving(index, args.embedding_model) as url:
                for name, viewport in (("web-ask-ppr", {"width": 1280, "height": 800}),
                                       ("web-ask-ppr-phone", {"width": 390, "height": 844})):
                    with chromium(Path(folder) / name, viewport) as context:
                        ask_ppr(context.new_page(), url, args.out / f"{name}.png")
        finally:
            os.environ.pop("GEAR_EXPANSION", None)
    for name in ("web-ask", "web-explore", "web-documents", "web-phone", "web-ask-ppr", "web-ask-ppr-phone"):
        print(f"saved {args.out / name}.png")


if __name__ == "__main__":
    main()
