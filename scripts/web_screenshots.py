"""Regenerate the web page's screenshots in docs/: an Ask answered through PPR and a PPR
ranking's seeds at 1280 and 390 px, Explore and Documents at 1280 px.

    python scripts/web_screenshots.py [--out docs] [--embedding-model hashing-384]

It indexes the demo corpus (``examples/demo/``, real all-MiniLM-L6-v2 embeddings by
default) in a temporary folder, serves the page over it on a free loopback port with a
scripted chat model that streams its replies (no LLM; tests/support/web_page.py), and
drives Debian's Chromium through Playwright, the agent expanding through PPR
(``GEAR_EXPANSION=ppr``): asks the demo question (``web-ask.png``, ``web-phone.png``: each
ranked passage with the chain that reached it or the seed triples whose PPR mass reached
it, drawn top to bottom), ranks the museum question with the ``ppr`` retriever
(``web-ppr-seeds.png``, ``web-ppr-seeds-phone.png``: seeds per passage, or no chain),
explores the Kestrel Observatory, opens the Documents page with a deletion waiting for its
confirmation.

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


MUSEUM = "Which museum holds the best-known work of the wife of the man who founded the Kestrel Observatory?"


def ppr_ranking(page, url: str, path: Path) -> None:
    """The museum question ranked by the LLM-free ``ppr`` retriever (k 8): each passage
    shows the seed triples whose PPR mass reached it, or no chain."""
    page.goto(url + "/")
    page.locator("#retriever option").nth(1).wait_for(state="attached")
    page.locator("#options summary").click()
    page.locator("#retriever").select_option("ppr")
    page.locator("#k").fill("8")
    page.locator("#question").fill(MUSEUM)
    page.locator("#ask-button").click()
    page.locator("#passages h2", has_text="Ranked by ppr").wait_for(timeout=WAIT_MS)
    page.locator("#question").blur()
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
    source = page.locator("#doc-list tbody tr").first.locator("td").nth(1).inner_text()
    page.locator("#delete-source").fill(source.strip())  # the stored source: the file's real path
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
        os.environ["GEAR_EXPANSION"] = "ppr"  # the agent expands through PPR (read by the server's settings)
        try:
            with serving(index, args.embedding_model) as url:
                with chromium(Path(folder) / "wide", {"width": 1280, "height": 800}) as context:
                    page = context.new_page()
                    ask(page, url, args.out / "web-ask.png")
                    ppr_ranking(page, url, args.out / "web-ppr-seeds.png")
                    explore(page, url, args.out / "web-explore.png")
                    documents(page, url, args.out / "web-documents.png")
                with chromium(Path(folder) / "phone", {"width": 390, "height": 844}) as context:
                    page = context.new_page()
                    ask(page, url, args.out / "web-phone.png")
                    ppr_ranking(page, url, args.out / "web-ppr-seeds-phone.png")
        finally:
            os.environ.pop("GEAR_EXPANSION", None)
    for name in ("web-ask", "web-ppr-seeds", "web-explore", "web-documents", "web-phone", "web-ppr-seeds-phone"):
        print(f"saved {args.out / name}.png")


if __name__ == "__main__":
    main()
