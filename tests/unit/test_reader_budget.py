"""The reader's budget: how many base passages it reads (``GEAR_READER_PASSAGES``) and how
many of them with their text (``GEAR_READER_FULL_PASSAGES``); the defaults read every base
passage in full, so the recorded prompts are unchanged."""

from __future__ import annotations

import json

import pytest
from support.fakes import client, scripted
from support.tiny_corpus import QUESTION, build_store, make_settings, pid

from gear_agent.agent import _steps as steps
from gear_agent.agent import nodes
from gear_agent.config import PromptSettings
from gear_agent.embedding.hashing import HashingEmbedder

IDS = [pid("Rainbow Bridge (Folsom)"), pid("Folsom, California"), pid("American River")]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return build_store(tmp_path_factory.mktemp("budget") / "index", HashingEmbedder(64))


def test_the_default_reads_every_base_passage_in_full(store) -> None:
    default = steps.reader_prompt(store, PromptSettings(), QUESTION, IDS, [])
    assert "[3] American River\nThe American River runs" in default
    assert steps.reader_prompt(store, PromptSettings(reader_passages=15), QUESTION, IDS, []) == default


def test_the_reader_reads_only_the_first_passages(store) -> None:
    prompt = steps.reader_prompt(store, PromptSettings(reader_passages=2), QUESTION, IDS, [])
    assert "[2] Folsom, California\nFolsom is a city" in prompt
    assert "American River runs" not in prompt and "[3]" not in prompt


def test_past_the_first_n_the_reader_sees_titles_only(store) -> None:
    settings = PromptSettings(reader_full_passages=1)
    prompt = steps.reader_prompt(store, settings, QUESTION, IDS, [])
    assert "[1] Rainbow Bridge (Folsom)\nThe Rainbow Bridge is a concrete arch" in prompt
    assert "[2] Folsom, California\n\n[3] American River\n\nReply:" in prompt
    assert "Sacramento County, California" not in prompt  # passage 2's text


def test_grounding_follows_what_the_reader_was_shown(store) -> None:
    triples = [["Folsom", "located in", "Sacramento County"]]  # only passage 2's text says so
    kept, _ = steps.ground_triples(store, IDS, [], triples)
    assert kept == triples
    kept, dropped = steps.ground_triples(store, IDS, [], triples, full_texts=1)
    assert kept == [] and dropped == triples


def test_the_read_node_reads_and_grounds_within_the_budget(store) -> None:
    settings = make_settings(reader_passages=1)
    reply = json.dumps({"triples": [["Folsom", "located in", "Sacramento County"],
                                    ["Rainbow Bridge", "located in", "Folsom"]]})
    model = scripted([reply])
    read = nodes.make_read(store, settings, client(model))
    update = read.invoke({"question": QUESTION, "base": [{"id": i} for i in IDS]})
    assert "[2]" not in model.calls[0]
    assert update["proximal"] == [["Rainbow Bridge", "located in", "Folsom"]]
    assert [d["item"] for d in update["dropped"]] == [["Folsom", "located in", "Sacramento County"]]
