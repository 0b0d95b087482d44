"""An extraction budget stops a run cleanly: nothing is sent once it is spent, the calls in
flight finish and are kept, and the rest stays unextracted for the next run."""

from __future__ import annotations

import asyncio
import json

import pytest
from support.fakes import CountingEmbedder, ScriptedChatModel, client, make_passages

from gear_agent.config import GearSettings
from gear_agent.errors import SettingsError
from gear_agent.extraction import ExtractionBudget, extract_triples
from gear_agent.store.embedded.store import EmbeddedStore

EMPTY = json.dumps({"entities": [], "triples": []})


@pytest.mark.parametrize("concurrency", [1, 4])
def test_a_token_budget_stops_sending_and_the_next_run_resumes(tmp_path, concurrency: int) -> None:
    store = EmbeddedStore.open(tmp_path / "ix", CountingEmbedder())
    store.passages.add(make_passages(20))
    model = ScriptedChatModel(respond=lambda _: EMPTY, usage=(90, 10), delay_s=0.01)
    budget = ExtractionBudget(max_tokens=500)  # five replies of 100 tokens
    summary = asyncio.run(extract_triples(store, client(model), concurrency=concurrency, budget=budget))
    assert summary.stopped_by_budget and 5 <= summary.passages_sent <= 5 + concurrency - 1
    assert summary.passages_left == 20 - summary.passages_sent
    assert len(store.passages.unextracted()) == summary.passages_left
    assert "were not sent and stay unextracted" in summary.warnings()[0]
    rest = asyncio.run(extract_triples(store, client(model), concurrency=concurrency))
    assert rest.passages_sent == summary.passages_left and not rest.stopped_by_budget
    assert len(model.calls) == 20 and not store.passages.unextracted()


def test_budgets_come_from_the_settings_and_a_price_is_needed_for_dollars() -> None:
    assert ExtractionBudget.of(GearSettings()) is None
    assert ExtractionBudget.of(GearSettings(extract_max_tokens=1000)).max_tokens == 1000
    priced = ExtractionBudget.of(GearSettings(llm_model="gpt-4o-mini"), max_usd=0.5)
    assert priced.spent(1_000_000, 1_000_000) and not priced.spent(10, 10)
    with pytest.raises(SettingsError, match="needs a price"):
        ExtractionBudget.of(GearSettings(llm_model="my-local-model"), max_usd=0.5)


def test_sync_callers_share_one_loop_and_get_every_outcome() -> None:
    """Two runs share one event loop (a client's pooled connections stay on it); an
    exception, ``KeyboardInterrupt`` included, comes back to the caller and the loop lives on."""
    from gear_agent.indexing import run_coroutine

    async def loop_id() -> int:
        return id(asyncio.get_running_loop())

    async def interrupted() -> None:
        raise KeyboardInterrupt

    first = run_coroutine(loop_id())
    with pytest.raises(KeyboardInterrupt):
        run_coroutine(interrupted())
    assert run_coroutine(loop_id()) == first
