"""The web page served for a browser: the demo index, a scripted streaming chat model, a
uvicorn server on a free loopback port, and Debian's Chromium driven by Playwright.

Used by ``tests/integration/test_web_page.py`` and ``scripts/web_screenshots.py``. The
chat model answers the demo question by prompt kind (:func:`support.demo_chat.demo_reply`)
and streams each reply word by word, so the page shows the answer arriving. Playwright's
own browser download cannot reach its host here, so the system Chromium is launched with
a fresh profile and every background request it would make switched off.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from gear_agent.agent.graph import build_agent
from gear_agent.config import GearSettings
from gear_agent.open_index import OpenIndex
from gear_agent.serve.app import create_app
from support.demo_chat import demo_reply
from support.fakes import StreamingChatModel

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "demo"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def build_demo_index(index_dir: Path, embedding_model: str) -> None:
    """``gear index examples/demo/corpus.json --openie examples/demo/openie.json``."""
    from typer.testing import CliRunner

    from gear_agent.cli import app

    env = {"GEAR_EMBEDDING_MODEL": embedding_model}
    result = CliRunner().invoke(app, ["index", str(DEMO / "corpus.json"), "--openie",
                                      str(DEMO / "openie.json"), "--index", str(index_dir)], env=env)
    if result.exit_code != 0:
        raise RuntimeError(f"gear index failed: {result.output[-2000:]}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def serving(index_dir: Path, embedding_model: str, token_delay_s: float = 0.03,
            model: Any | None = None) -> Iterator[str]:
    """The app over ``index_dir`` (page included) on a free loopback port; yields its URL.
    The chat model is ``model``, or the demo replies streamed ``token_delay_s`` apart."""
    settings = GearSettings(index_dir=index_dir, embedding_model=embedding_model,
                            max_iterations=2, llm_max_retries=0, top_k=5)
    runtime = OpenIndex.open(settings)
    if model is None:
        model = StreamingChatModel(respond=demo_reply, token_delay_s=token_delay_s, usage=(300, 12))
    agent = build_agent(settings, index=runtime, chat_model=model)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(agent, settings, index=runtime),
                                           host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name="gear-web-test", daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError(f"the server at {url} did not come up")
        time.sleep(0.1)
    try:
        yield url
    finally:
        server.should_exit = True
        thread.join(15)
        runtime.store.close()


@contextmanager
def serving_demo(folder: Path) -> Iterator[str]:
    """The demo corpus indexed under ``folder`` (stand-in embedder ``hashing-384``) and
    served as :func:`serving` serves it; yields its URL."""
    build_demo_index(folder / "index", "hashing-384")
    with serving(folder / "index", "hashing-384") as url:
        yield url


def browser_missing() -> str | None:
    """Why the browser cannot run here, or None when it can."""
    try:
        import playwright  # noqa: F401
    except ImportError:
        return 'Playwright is not installed (pip install -e ".[browser]")'
    if not CHROMIUM.exists():
        return f"no Chromium at {CHROMIUM} (apt-get install -y chromium)"
    return None


@contextmanager
def chromium(profile: Path, viewport: dict[str, int] | None = None) -> Iterator[Any]:
    """A Playwright browser context on Debian's Chromium with a fresh profile."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(profile), executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS,
            viewport=viewport or {"width": 1200, "height": 900}, device_scale_factor=1,
            env={**os.environ, "HOME": str(profile)},
        )
        try:
            yield context
        finally:
            context.close()
