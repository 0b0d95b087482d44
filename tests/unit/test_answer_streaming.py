"""The answer streamed token by token: the JSON taken off (AnswerTextStream), the run's
events (run_events / arun_events), Gear.ask(stream=...), /gear/stream's answer_token
events, and the time to the first streamed token against the time to the whole answer."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from support.agent_faults import ANSWER, QUESTION, capable_reply, node_of
from support.fakes import ScriptedChatModel, StreamingChatModel
from support.tiny_corpus import build_store, make_settings

from gear_agent import Gear
from gear_agent.agent.graph import build_agent
from gear_agent.agent.streaming import arun_events, run_events
from gear_agent.embedding.hashing import HashingEmbedder
from gear_agent.open_index import OpenIndex
from gear_agent.parsing.answer_stream import AnswerTextStream
from gear_agent.retrieval.search import QueryEncoder

CITED = f'{{"answer": "{ANSWER}", "citations": [{{"passage": 1}}]}}'


def reply(prompt: str) -> str:
    node = node_of(prompt)
    return CITED if node == "answer" else capable_reply(node, prompt)


@pytest.mark.parametrize("pieces", [
    ['{"answer": "Sacra', 'mento County", "citations": []}'],
    ['```json\n{"ans', 'wer"', ': "Sacramento', ' County"', ', "citations": [{"passage": 1}]}\n```'],
    ['{"answer": "Sacramento\\u0020Cou', 'nty"}'],
    ["{", '"answer":"Sacramento County\\', '"x"}'],
    ["Sacramento", " County"],
])
def test_the_answer_text_comes_out_of_the_reply_as_it_arrives(pieces: list[str]) -> None:
    stream = AnswerTextStream()
    out = [stream.feed(piece) for piece in pieces]
    expected = 'Sacramento County"x' if '\\"' in "".join(pieces) else ANSWER
    assert "".join(out) == stream.text == expected
    assert sum(1 for o in out if o) >= 1


def test_a_reply_without_an_answer_streams_nothing() -> None:
    stream = AnswerTextStream()
    assert stream.feed('{"citations": [{"passage": 1}]}') == "" and stream.text == ""


@pytest.fixture
def runtime(tmp_path: Path) -> OpenIndex:
    embedder = HashingEmbedder(128)
    store = build_store(tmp_path / "index", embedder)
    return OpenIndex(make_settings(llm_max_retries=0), embedder, store, QueryEncoder(embedder))


def test_run_events_give_node_updates_then_the_answer_word_by_word(runtime: OpenIndex) -> None:
    agent = build_agent(index=runtime, chat_model=StreamingChatModel(respond=reply))
    events = list(run_events(agent, {"question": QUESTION}))
    tokens = [e.data["text"] for e in events if e.kind == "token"]
    assert tokens == ["Sacramento", " County"]  # the QA reply's words, no JSON, no other node's
    nodes = [e.node for e in events if e.kind == "update"]
    assert nodes[0] == "start" and nodes[-2:] == ["finalize", "answer"]
    final = events[-1]
    assert final.kind == "final" and final.data["answer"] == ANSWER and len(final.data["citations"]) == 1
    async_events = asyncio.run(_collect(agent))
    assert [e.kind for e in async_events] == [e.kind for e in events]


async def _collect(agent):
    return [e async for e in arun_events(agent, {"question": QUESTION})]


def test_a_model_that_does_not_stream_gives_no_tokens_and_the_same_answer(runtime: OpenIndex) -> None:
    agent = build_agent(index=runtime, chat_model=ScriptedChatModel(respond=reply))
    events = list(run_events(agent, {"question": QUESTION}))
    assert not [e for e in events if e.kind == "token"]
    assert events[-1].data["answer"] == ANSWER


def test_gear_ask_streams_to_a_callback(tmp_path: Path) -> None:
    build_store(tmp_path / "index", HashingEmbedder(128)).close()
    gear = Gear(tmp_path / "index", chat_model=StreamingChatModel(respond=reply),
                embedding_model="hashing-128", **_small())
    pieces: list[str] = []
    answer = gear.ask(QUESTION, stream=pieces.append)
    assert pieces == ["Sacramento", " County"] and "".join(pieces) == answer.answer == ANSWER
    assert answer.citations[0].number == 1
    assert gear.ask(QUESTION).answer == ANSWER  # without a callback: the same answer


def _small() -> dict:
    keys = ("base_k", "top_k", "beam_width", "beam_neighbours", "passage_link_k",
            "max_iterations", "expansion", "answer_top_k")
    settings = make_settings()
    return {k: getattr(settings, k) for k in keys}


def test_the_first_words_arrive_before_the_answer_is_finished(runtime: OpenIndex) -> None:
    """A model writing a word every 10 ms: each word is an event of its own, and all of
    them come before the answer node's update (the answer is shown as it is written)."""
    words = '{"answer": "' + " ".join(["word"] * 20) + '", "citations": []}'
    model = StreamingChatModel(respond=lambda p: words if node_of(p) == "answer" else reply(p),
                               token_delay_s=0.01)
    events = list(run_events(build_agent(index=runtime, chat_model=model), {"question": QUESTION}))
    kinds = [(e.kind, e.node) for e in events]
    tokens = [i for i, k in enumerate(kinds) if k[0] == "token"]
    assert len(tokens) == 20 and tokens[-1] < kinds.index(("update", "answer"))
