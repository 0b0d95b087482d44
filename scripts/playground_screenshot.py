"""Regenerate docs/playground.png: the reading playground answering the demo question.

    python scripts/playground_screenshot.py [--out docs/playground.png]

It builds the demo index of the README's main job (``gear index examples/demo/corpus.json
--openie examples/demo/openie.json``, real all-MiniLM-L6-v2 embeddings) in a temporary
folder, serves the agent over it on a free loopback port with ``ScriptedDemoChat`` (a
scripted chat model, no LLM: its replies are keyed by prompt kind), opens
``/gear/ask/playground/`` (the agent as text, answer first) in Debian's headless Chromium,
asks "Who was the spouse of the founder of the Kestrel Observatory?" (top k 3), waits for
the result and saves the form and the output: the steps run, the answer with its
numbered citation (quote and triple chain), and the ranked passages with their chains.

Needs Debian's Chromium and Playwright (Playwright's own browsers are not used, so never
run ``playwright install``); the emoji font only draws the playground's parrot::

    apt-get install -y chromium fonts-noto-color-emoji
    pip install -e ".[serve,docs]"

``GEAR_*`` variables are left out of the index and server environments, so the picture
depends on the repository alone.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "examples" / "demo"
QUESTION = "Who was the spouse of the founder of the Kestrel Observatory?"
ANSWER = "Ilse Brenner"
FOUNDER = ["Kestrel Observatory", "founded by", "Oskar Brenner"]
SPOUSE = ["Oskar Brenner", "spouse", "Ilse Brenner"]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
]
VIEWPORT = {"width": 1280, "height": 900}
TOP_K = 3
"""Passages asked for in the form."""
MARGIN = 32
"""Pixels kept left and right of the playground's column."""
QUOTE = "He was married to the painter Ilse Brenner"

# The playground's output pane is the box after the "Output" heading.
_PANE = """[...document.querySelectorAll('h2')]
  .find(h => h.textContent.trim() === 'Output')?.nextElementSibling"""
RESULT_SHOWN = """() => (PANE?.textContent ?? '').includes('stopped:')""".replace("PANE", _PANE)
COLUMN = """() => { const box = PANE.getBoundingClientRect();
  return {x: box.left + window.scrollX, width: box.width}; }""".replace("PANE", _PANE)


class ScriptedDemoChat(BaseChatModel):
    """Test double for the demo question, no LLM: the reply is chosen by the prompt kind.

    The first read finds the founder of the Kestrel Observatory, a read with memory finds
    his spouse, the reasoner says answerable once the spouse is in the memory, the
    rewriter asks for the spouse of Oskar Brenner and QA answers "Ilse Brenner", citing
    the Oskar Brenner passage by its number with a quote. Usage is reported as about four
    characters a token, so the token counts show.
    """

    @property
    def _llm_type(self) -> str:
        return "scripted-demo"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        prompt = "\n".join(str(m.content) for m in messages)
        text = demo_reply(prompt)
        usage = {"input_tokens": len(prompt) // 4, "output_tokens": len(text) // 4 + 1}
        usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
        message = AIMessage(content=text, usage_metadata=usage)
        return ChatResult(generations=[ChatGeneration(message=message)])


def demo_reply(prompt: str) -> str:
    """The scripted reply to one prompt (prompts/*.txt tell the kinds apart)."""
    if prompt.startswith("You read"):
        with_memory = "Earlier steps have already collected" in prompt
        return json.dumps({"triples": [SPOUSE if with_memory else FOUNDER]})
    if prompt.startswith("You decide"):
        done = ANSWER in prompt  # the reasoner sees only the question and the memory
        return json.dumps({"answerable": done, "answer": ANSWER if done else None,
                           "reason": None if done else "the spouse of Oskar Brenner"})
    if prompt.startswith("You answer"):
        match = re.search(r"^\[(\d+)\] Oskar Brenner$", prompt, re.M)
        citations = [{"passage": int(match.group(1)), "quote": QUOTE}] if match else []
        return json.dumps({"answer": ANSWER, "citations": citations})
    return "spouse of Oskar Brenner"


def gear(*args: str) -> None:
    """Run the ``gear`` CLI with this interpreter, without the caller's ``GEAR_*`` settings."""
    command = [sys.executable, "-c", "from gear_agent.cli import main; main()", *args]
    done = subprocess.run(command, env=clean_env(), cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"gear {' '.join(args)} failed:\n{done.stderr[-4000:]}")


def clean_env() -> dict[str, str]:
    """This environment without ``GEAR_*``, with the repository on the import path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GEAR_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def serve(index_dir: Path, port: int) -> None:
    """Serve the agent over ``index_dir`` with ``ScriptedDemoChat`` (blocks)."""
    import uvicorn

    from gear_agent.agent.graph import build_agent
    from gear_agent.config import GearSettings
    from gear_agent.runtime import Runtime
    from gear_agent.serve.app import create_app

    settings = GearSettings(index_dir=index_dir, max_iterations=2, llm_max_retries=0)
    runtime = Runtime.open(settings)
    agent = build_agent(settings, runtime=runtime, chat_model=ScriptedDemoChat())
    uvicorn.run(create_app(agent, settings), host="127.0.0.1", port=port, log_level="warning")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_up(url: str, server: subprocess.Popen[bytes], seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the server exited with status {server.returncode}")
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"server at {url} did not come up in {seconds:.0f} s")


def screenshot(url: str, out: Path, profile: Path) -> None:
    """Ask the demo question in the reading playground; save the form and its output,
    cut to the playground's column."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        raise SystemExit('this script needs Playwright: pip install -e ".[docs]"') from exc
    if not CHROMIUM.exists():
        raise SystemExit(f"no Chromium at {CHROMIUM}: apt-get install -y chromium")
    with sync_playwright() as p:
        browser = p.chromium.launch_persistent_context(
            str(profile), executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS,
            viewport=VIEWPORT, device_scale_factor=1,
        )
        try:
            page = browser.new_page()
            page.goto(url + "/gear/ask/playground/")
            page.locator('[id="#/properties/question-input"]').fill(QUESTION)
            page.locator('[id="#/properties/top_k-input"]').fill(str(TOP_K))
            page.get_by_role("button", name="Start", exact=True).click()
            page.wait_for_function(RESULT_SHOWN, timeout=60_000)
            column = page.evaluate(COLUMN)
            height = page.evaluate("document.documentElement.scrollHeight")
            page.set_viewport_size({"width": VIEWPORT["width"], "height": height})
            clip = {"x": max(column["x"] - MARGIN, 0), "y": 0,
                    "width": column["width"] + 2 * MARGIN, "height": height}
            page.screenshot(path=str(out), clip=clip)
        finally:
            browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "playground.png",
                        help="Where the PNG goes (overwritten).")
    parser.add_argument("--serve", nargs=2, metavar=("INDEX", "PORT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(Path(args.serve[0]), int(args.serve[1]))
        return
    start = time.monotonic()
    folder = Path(tempfile.mkdtemp(prefix="gear-playground-"))
    server_log = folder / "server.log"
    server = None
    try:
        index_dir = folder / "index"
        print(f"indexing examples/demo into {index_dir}")
        gear("index", str(DEMO / "corpus.json"), "--openie", str(DEMO / "openie.json"),
             "--index", str(index_dir))
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        print(f"serving it with ScriptedDemoChat on {url}; asking in headless Chromium")
        with server_log.open("wb") as log:
            server = subprocess.Popen(
                [sys.executable, __file__, "--serve", str(index_dir), str(port)],
                env=clean_env(), stdout=log, stderr=subprocess.STDOUT,
            )
        wait_until_up(url, server)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        screenshot(url, args.out, folder / "chromium-profile")
    except BaseException:
        if server_log.exists():
            print(f"server log:\n{server_log.read_text(errors='replace')[-4000:]}", file=sys.stderr)
        raise
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        shutil.rmtree(folder, ignore_errors=True)
    print(f"saved {args.out} ({time.monotonic() - start:.0f} s)")


if __name__ == "__main__":
    main()
