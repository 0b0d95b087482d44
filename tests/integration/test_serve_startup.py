"""`gear serve` as a command (issue 36): the port opens before the model loads (``/health``
says "warming", then "ok"), no chat model is needed for search, Explore and Documents,
``--read-only`` serves no write, and a rebound ``Host`` is refused on the real server.
(Times are measured by ``benchmarks/serve_startup.py``, not here.)"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

pytest.importorskip("langserve", reason="the serve extra is not installed (pip install gear-agent[serve])")

from support.web_page import build_demo_index, free_port  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("startup") / "index"
    build_demo_index(folder, "hashing-384")
    return folder


@contextmanager
def started(index: Path, *flags: str) -> Iterator[tuple[str, list[str]]]:
    """``gear serve`` without a chat model; yields its URL and the /health statuses seen
    until it was ready."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "GEAR_"))}
    env |= {"GEAR_EMBEDDING_MODEL": "hashing-384", "PYTHONPATH": str(ROOT)}
    server = subprocess.Popen([sys.executable, "-m", "gear_agent.cli", "serve", "--index", str(index),
                               "--port", str(port), "--log-level", "warning", *flags],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url, statuses = f"http://127.0.0.1:{port}", []
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and server.poll() is None:
            try:
                statuses.append(httpx.get(url + "/health", timeout=2).json()["status"])
                if statuses[-1] == "ok":
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.02)
        assert statuses and statuses[-1] == "ok", (statuses, server.poll())
        yield url, statuses
    finally:
        server.terminate()
        output = server.communicate(timeout=30)[0]
        assert "Traceback" not in output, output


def test_serve_without_a_chat_model_warms_then_serves_the_page(index: Path) -> None:
    with started(index) as (url, statuses):
        assert set(statuses) <= {"warming", "ok"}
        assert httpx.get(url + "/health").json()["llm_model"] is None
        config = httpx.get(url + "/ui/api/config").json()
        assert "OPENAI_API_KEY" in config["no_agent"] and "gear" not in config["retrievers"]
        ranked = httpx.post(url + "/ui/api/ask/stream", timeout=30,
                            json={"question": "Who founded the Kestrel Observatory?", "retriever": "bm25"})
        assert ranked.status_code == 200 and "event: result" in ranked.text
        assert httpx.get(url + "/ui/api/documents").json()["total"] == 12
        assert httpx.get(url + "/ui/api/entities", params={"q": "kestrel"}).json()["entities"]
        refused = httpx.get(url + "/", headers={"host": "evil.example"})
        assert refused.status_code == 400


def test_serve_read_only_adds_and_deletes_nothing(index: Path) -> None:
    with started(index, "--read-only") as (url, _):
        assert httpx.get(url + "/ui/api/config").json()["read_only"] is True
        deleted = httpx.post(url + "/ui/api/documents/delete", json={"source": "examples/demo/corpus.json"})
        assert deleted.status_code == 403
        assert httpx.get(url + "/ui/api/documents").json()["total"] == 12
