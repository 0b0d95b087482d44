"""LLM triple extraction: storage, resumability, failures, warnings, concurrency, cost."""

from __future__ import annotations

import asyncio
import json
import random

import httpx
import openai
import pytest
from support.fakes import FakeStore, ScriptedChatModel, make_passages

from gear_agent.config import GearSettings
from gear_agent.extraction import ExtractionSummary, estimate_cost, extract_triples
from gear_agent.ids import triple_id
from gear_agent.llm import tokens
from gear_agent.llm.cache import ResponseCache
from gear_agent.llm.client import LLMClient
from gear_agent.llm.errors import LLMCallError
from gear_agent.llm.pricing import cost_usd
from gear_agent.llm.retry import RetryPolicy
from gear_agent.prompts import load_prompt


@pytest.fixture(autouse=True)
def offline_tokenizer(monkeypatch):
    """No tokenizer rank files: every count is the offline estimate (tests that want the
    real encodings restore ``tokens._encoding`` themselves)."""
    monkeypatch.setattr(tokens, "_encoding", lambda name: None)


def title_of(prompt: str) -> str:
    """The passage title in a filled extraction prompt (the last 'Title:' line)."""
    return [line for line in prompt.splitlines() if line.startswith("Title: ")][-1][7:]


def good_reply(prompt: str) -> str:
    name = title_of(prompt)
    number = name.split()[-1]
    return json.dumps(
        {
            "entities": [name, f"City {number}"],
            "triples": [
                [name, "founded in", str(1900 + int(number))],
                [name, "located in", f"City {number}"],
            ],
        }
    )


def client(model, **kwargs) -> LLMClient:
    async def no_wait(_: float) -> None:
        return None

    return LLMClient(
        model, retry=RetryPolicy(max_retries=1), async_sleep=no_wait, rng=random.Random(0), **kwargs
    )


def run(store, llm, **kwargs) -> ExtractionSummary:
    return asyncio.run(extract_triples(store, llm, **kwargs))


def test_extracts_stores_and_marks_every_passage():
    passages = make_passages(5)
    store = FakeStore(passages)
    model = ScriptedChatModel(respond=good_reply)
    summary = run(store, client(model), concurrency=2, commit_every=2)

    assert store.extracted == {p.id for p in passages}
    assert len(store.triple_records) == 10
    first = passages[0]
    expected_id = triple_id(first.id, "Entity 0", "founded in", "1900")
    assert store.triple_records[expected_id].passage_id == first.id
    assert summary.passages_sent == summary.passages_succeeded == 5
    assert (summary.passages_failed, summary.triples_kept, summary.malformed_dropped) == (0, 10, 0)
    assert summary.input_tokens > 0 and summary.output_tokens > 0
    assert summary.warnings() == []
    assert model.async_calls == 5
    assert "Title: Entity 0" in "\n".join(model.calls)


def test_writes_in_batches_triples_before_marks():
    store = FakeStore(make_passages(5))
    run(store, client(ScriptedChatModel(respond=good_reply)), concurrency=1, commit_every=2)
    assert store.writes == [
        ("triples", 4),
        ("marks", 2),
        ("triples", 4),
        ("marks", 2),
        ("triples", 2),
        ("marks", 1),
    ]


def test_writes_when_commit_seconds_pass_before_commit_every_is_reached():
    store = FakeStore(make_passages(3))
    model = ScriptedChatModel(respond=good_reply)
    run(store, client(model), concurrency=1, commit_every=1000, commit_seconds=0)
    assert store.writes == [("triples", 2), ("marks", 1)] * 3  # no wait: every passage at once
    store = FakeStore(make_passages(3))
    run(store, client(model), concurrency=1, commit_every=1000, commit_seconds=3600)
    assert store.writes == [("triples", 6), ("marks", 3)]  # one write when the run ends


def test_interrupted_run_keeps_finished_work_and_resume_sends_only_the_rest():
    passages = make_passages(10)
    store = FakeStore(passages)
    first_model = ScriptedChatModel(respond=good_reply)

    def interrupt_after_four(done: int, total: int) -> None:
        assert total == 10
        if done == 4:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(
            store,
            client(first_model),
            concurrency=1,
            commit_every=100,
            progress=interrupt_after_four,
        )
    assert len(store.extracted) == 4  # flushed although commit_every was not reached
    assert len(store.triple_records) == 8
    done_first = {title_of(c) for c in first_model.calls}

    second_model = ScriptedChatModel(respond=good_reply)
    summary = run(store, client(second_model), concurrency=3)
    sent_second = [title_of(c) for c in second_model.calls]
    assert len(sent_second) == 6
    assert not set(sent_second) & {title_of(c) for c in first_model.calls[:4]}
    assert summary.passages_skipped == 4 and summary.passages_sent == 6
    assert store.extracted == {p.id for p in passages}
    assert len(store.triple_records) == 20
    assert len(done_first | set(sent_second)) == 10


def test_cancelled_run_keeps_finished_work():
    store = FakeStore(make_passages(12))
    model = ScriptedChatModel(respond=good_reply, delay_s=0.01)

    async def main() -> None:
        task = asyncio.create_task(
            extract_triples(store, client(model), concurrency=2, commit_every=100)
        )
        while len(model.calls) < 5:
            await asyncio.sleep(0.005)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    kept = len(store.extracted)
    assert 1 <= kept < 12
    resumed = ScriptedChatModel(respond=good_reply)
    run(store, client(resumed))
    assert len(resumed.calls) == 12 - kept
    assert len(store.extracted) == 12


def test_a_failed_passage_is_recorded_and_left_for_the_next_run():
    store = FakeStore(make_passages(4))

    def flaky(prompt: str):
        if title_of(prompt) == "Entity 2":
            return openai.InternalServerError(
                "boom",
                response=httpx.Response(500, request=httpx.Request("POST", "http://x")),
                body=None,
            )
        return good_reply(prompt)

    model = ScriptedChatModel(respond=flaky)
    summary = run(store, client(model), concurrency=2)
    assert (summary.passages_succeeded, summary.passages_failed) == (3, 1)
    assert summary.failures[0].passage_id == make_passages(4)[2].id
    assert "InternalServerError" in summary.failures[0].error
    assert len(model.calls) == 5  # the failing passage was tried twice (1 retry)
    warning = summary.warnings()[0]
    assert "1 of 4 passages failed" in warning and "retried by the next run" in warning
    assert [p.title for p in store.passages.unextracted()] == ["Entity 2"]


def test_unreadable_reply_is_a_failure_not_an_empty_extraction():
    store = FakeStore(make_passages(2))
    model = ScriptedChatModel(
        respond=lambda p: "Sorry, I can't." if "Entity 1" in title_of(p) else good_reply(p)
    )
    summary = run(store, client(model))
    assert summary.passages_failed == 1
    assert "unreadable reply" in summary.failures[0].error
    assert len(store.passages.unextracted()) == 1


def test_fatal_error_stops_the_run_after_writing_finished_work():
    store = FakeStore(make_passages(6))
    calls = {"n": 0}

    def auth_fails_later(prompt: str):
        calls["n"] += 1
        if calls["n"] >= 3:
            return openai.AuthenticationError(
                "bad key",
                response=httpx.Response(401, request=httpx.Request("POST", "http://x")),
                body=None,
            )
        return good_reply(prompt)

    with pytest.raises(LLMCallError, match="AuthenticationError"):
        run(
            store,
            client(ScriptedChatModel(respond=auth_fails_later)),
            concurrency=1,
            commit_every=100,
        )
    assert len(store.extracted) == 2


def test_no_triples_anywhere_gives_a_loud_warning():
    store = FakeStore(make_passages(40))
    model = ScriptedChatModel(respond=lambda _: '{"entities": [], "triples": []}')
    summary = run(store, client(model), concurrency=4)
    assert summary.passages_without_triples == 40
    assert len(store.extracted) == 40  # extraction ran; it found nothing
    (warning,) = summary.warnings()
    assert warning.startswith("all 40 passages yielded no triples: check the model/prompt")
    assert '{"entities": [], "triples": []}' in warning


def test_mostly_malformed_triples_give_a_warning():
    store = FakeStore(make_passages(3))
    model = ScriptedChatModel(
        respond=lambda p: json.dumps({"triples": [[title_of(p), "is", title_of(p)], ["a", "b"], ["c"]]})
    )
    summary = run(store, client(model))
    assert (summary.triples_kept, summary.malformed_dropped) == (3, 6)
    assert any("malformed" in w for w in summary.warnings())


def test_concurrency_is_bounded():
    store = FakeStore(make_passages(12))
    model = ScriptedChatModel(respond=good_reply, delay_s=0.01)
    run(store, client(model), concurrency=3)
    assert 1 < model.max_in_flight <= 3


def test_progress_is_reported_per_passage():
    store = FakeStore(make_passages(3))
    seen: list[tuple[int, int]] = []
    run(
        store,
        client(ScriptedChatModel(respond=good_reply)),
        progress=lambda d, t: seen.append((d, t)),
    )
    assert seen == [(1, 3), (2, 3), (3, 3)]


def test_nothing_to_do():
    store = FakeStore(make_passages(2))
    store.passages.mark_extracted([p.id for p in store.passage_records.values()])
    model = ScriptedChatModel(respond=good_reply)
    summary = run(store, client(model))
    assert model.calls == [] and summary.passages_skipped == 2 and summary.warnings() == []


def test_cached_replies_are_counted_and_free(tmp_path):
    cache = ResponseCache(tmp_path)
    run(FakeStore(make_passages(3)), client(ScriptedChatModel(respond=good_reply), cache=cache))
    never = ScriptedChatModel(respond=lambda _: AssertionError("cache should answer"))
    summary = run(FakeStore(make_passages(3)), client(never, cache=cache))
    assert summary.cached_replies == 3 and summary.input_tokens == 0 and never.calls == []
    assert summary.triples_kept == 6


def test_custom_prompt_is_used(tmp_path):
    (tmp_path / "extraction.txt").write_text("EXTRACT\nTitle: {title}\n{passage}")
    model = ScriptedChatModel(respond=good_reply)
    run(FakeStore(make_passages(1)), client(model), prompt=load_prompt("extraction", tmp_path))
    assert model.calls[0].startswith("EXTRACT")


@pytest.mark.parametrize("kwargs", [{"concurrency": 0}, {"commit_every": 0}, {"commit_seconds": -1}])
def test_invalid_arguments(kwargs):
    with pytest.raises(ValueError, match="at least 1|not be negative"):
        run(FakeStore(), client(ScriptedChatModel(respond=good_reply)), **kwargs)


# ---- cost estimate ----------------------------------------------------------------------------


def test_estimate_cost_for_a_known_model():
    passages = make_passages(10)
    settings = GearSettings(llm_model="gpt-4o-mini")
    estimate = estimate_cost(passages, settings)
    assert estimate.passages == 10 and estimate.model == "gpt-4o-mini"
    template = load_prompt("extraction").format(title="", passage="")
    assert estimate.prompt_tokens > 10 * tokens.estimate_tokens(template)
    assert estimate.expected_output_tokens > 0
    assert estimate.usd == pytest.approx(
        cost_usd("gpt-4o-mini", estimate.prompt_tokens, estimate.expected_output_tokens)
    )


def test_estimate_cost_unknown_model_has_no_price_and_output_is_capped():
    passages = make_passages(3)
    estimate = estimate_cost(passages, GearSettings(llm_model="llama3.1:8b", llm_max_tokens=5))
    assert estimate.usd is None
    assert estimate.expected_output_tokens == 15


def test_estimate_cost_of_nothing():
    estimate = estimate_cost([], GearSettings())
    assert (estimate.prompt_tokens, estimate.expected_output_tokens, estimate.usd) == (0, 0, 0.0)


def test_triples_not_found_in_their_passage_are_dropped_and_counted():
    """An obedient model that stores an injected triple about other entities: the triple
    is not in the passage, so it is dropped, counted and shown in the warning."""
    store = FakeStore(make_passages(4))

    def injected(prompt: str) -> str:
        good = json.loads(good_reply(prompt))["triples"]
        return json.dumps({"triples": [*good, ["Barack Obama", "born in", "Atlantis"]]})

    summary = run(store, client(ScriptedChatModel(respond=injected)))
    assert summary.ungrounded_dropped == 4
    assert summary.triples_kept == 8  # the passages' own triples all stay
    assert all("Obama" not in t.subject for t in store.triple_records.values())
    assert "Barack Obama" in summary.ungrounded_examples[0]
    assert any("not found in their passage" in w for w in summary.warnings())
    kept = run(FakeStore(make_passages(4)), client(ScriptedChatModel(respond=injected)), ground=False)
    assert (kept.ungrounded_dropped, kept.triples_kept) == (0, 12)
