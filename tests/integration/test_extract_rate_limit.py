"""``gear index DIR --extract`` with concurrent workers against a real OpenAI-compatible
endpoint (the project's fault server) that answers one call 429 with ``Retry-After``: every
worker honours that one pause (the calls sent after the 429 arrive once it has ended), not
only the worker that got it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cli import run_cli
from support.fault_server import FaultServer, ok, running_fault_server, status, timeout

EMPTY = '{"entities": [], "triples": []}'
PAUSE_S = 1.5
SLOW_S = 0.5
"""The three calls in flight beside the 429 are answered this late: well before the pause
ends, so without a shared pause their workers' next calls would arrive inside it."""


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FaultServer]:
    for name in ("OPENAI_API_KEY", "GEAR_LLM_MODEL", "GEAR_LLM_CACHE_DIR", "GEAR_INDEX_DIR",
                 "GEAR_EXTRACT_MAX_TOKENS"):
        monkeypatch.delenv(name, raising=False)
    with running_fault_server(ok(EMPTY, prompt_tokens=100, completion_tokens=10)) as running:
        monkeypatch.setenv("OPENAI_BASE_URL", running.base_url)
        yield running


def test_one_retry_after_pauses_every_worker(server: FaultServer, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for n in range(8):
        (docs / f"note{n}.txt").write_text(f"Note {n} says that river {n} floods in spring.")
    server.script(status(429, retry_after=PAUSE_S), *[timeout(SLOW_S, text=EMPTY)] * 3)
    result = run_cli("index", str(docs), "--extract", "--index", str(tmp_path / "ix"),
                     env={"GEAR_EMBEDDING_MODEL": "hashing-64", "GEAR_LLM_CONCURRENCY": "4"})
    assert result.exit_code == 0, result.output
    assert "8 passages sent, 8 ok, 0 failed" in result.output
    calls = server.completions
    assert len(calls) == 9, "8 passages and one retry"
    first_four, later = calls[:4], calls[4:]
    limited = [c for c in first_four if c.behaviour == "status"]
    assert len(limited) == 1 and sorted(c.behaviour for c in first_four).count("timeout") == 3
    pause_end = limited[0].received_at + PAUSE_S
    early = [round(c.received_at - limited[0].received_at, 2) for c in later if c.received_at < pause_end]
    assert not early, f"calls sent inside the pause, seconds after the 429: {early}"
