"""``gear index DIR --extract`` on a folder: the estimate before it starts, a budget that
stops it cleanly (the rest resumes on the next run), and 429s with Retry-After survived,
against a real OpenAI-compatible HTTP endpoint (the project's fault server)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cli import run_cli
from support.fault_server import FaultServer, ok, running_fault_server, status

EMPTY = '{"entities": [], "triples": []}'


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FaultServer]:
    for name in ("OPENAI_API_KEY", "GEAR_LLM_MODEL", "GEAR_LLM_CACHE_DIR", "GEAR_INDEX_DIR",
                 "GEAR_EXTRACT_MAX_TOKENS"):
        monkeypatch.delenv(name, raising=False)
    with running_fault_server(ok(EMPTY, prompt_tokens=100, completion_tokens=10)) as running:
        monkeypatch.setenv("OPENAI_BASE_URL", running.base_url)
        yield running


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for n in range(6):
        (folder / f"note{n}.txt").write_text(f"Note {n} says that river {n} floods in spring.")
    return folder


ENV = {"GEAR_EMBEDDING_MODEL": "hashing-64", "GEAR_LLM_CONCURRENCY": "1"}


def test_a_budget_stops_cleanly_and_the_next_run_resumes(server: FaultServer, docs: Path, tmp_path: Path) -> None:
    index = str(tmp_path / "ix")
    first = run_cli("index", str(docs), "--extract", "--index", index,
                    env={**ENV, "GEAR_EXTRACT_MAX_TOKENS": "250"})
    assert first.exit_code == 0, first.output
    estimate = first.output.index("extraction: 6 passages to send, about")
    assert estimate < first.output.index("extraction: 3 passages sent"), "the estimate comes first"
    assert "budget 250 tokens" in first.output
    assert "3 passages were not sent and stay unextracted" in first.output
    assert len(server.completions) == 3
    second = run_cli("index", str(docs), "--extract", "--index", index, env=ENV)
    assert second.exit_code == 0, second.output
    assert "extraction: 3 passages to send" in second.output
    assert len(server.completions) == 6, "no passage is sent twice"
    assert re.search(r"passages not yet extracted[\s│|]+0", second.output), second.output


def test_a_429_with_retry_after_is_waited_out(server: FaultServer, docs: Path, tmp_path: Path) -> None:
    server.script(status(429, retry_after=0.4), ok(EMPTY, prompt_tokens=100, completion_tokens=10))
    result = run_cli("index", str(docs), "--extract", "--index", str(tmp_path / "ix"), env=ENV)
    assert result.exit_code == 0, result.output
    assert "6 passages sent, 6 ok, 0 failed" in result.output
    first, retry = server.completions[:2]
    assert first.behaviour == "status" and retry.received_at - first.received_at >= 0.4
    assert len(server.completions) == 7


def test_max_cost_needs_a_priced_model(server: FaultServer, docs: Path, tmp_path: Path) -> None:
    result = run_cli("index", str(docs), "--extract", "--max-cost", "0.01", "--index", str(tmp_path / "ix"),
                     env={**ENV, "GEAR_LLM_MODEL": "some-local-model"})
    assert result.exit_code == 2 and "--max-cost needs a price" in result.output
    assert not (tmp_path / "ix").exists(), "refused before anything was written"


def test_max_cost_stops_a_priced_model(server: FaultServer, docs: Path, tmp_path: Path) -> None:
    result = run_cli("index", str(docs), "--extract", "--max-cost", "0.00005", "--index", str(tmp_path / "ix"),
                     env={**ENV, "GEAR_LLM_MODEL": "gpt-4o-mini"})
    assert result.exit_code == 0, result.output
    assert "budget $5e-05" in result.output and "were not sent" in result.output
    assert 0 < len(server.completions) < 6


def test_max_cost_without_extract_is_refused(docs: Path, tmp_path: Path) -> None:
    result = run_cli("index", str(docs), "--max-cost", "1", "--index", str(tmp_path / "ix"), env=ENV)
    assert result.exit_code == 2 and "add --extract" in result.output
