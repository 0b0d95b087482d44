"""The one retriever table: every name builds, says what it needs, and means one algorithm."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.fakes import ScriptedChatModel
from typer.testing import CliRunner

from gear_agent import Gear
from gear_agent.cli import app
from gear_agent.errors import UnknownNameError
from gear_agent.llm.errors import LLMConfigError
from gear_agent.registry import DEFAULT_RETRIEVER, RETRIEVERS, check_name, make_retriever

FOUNDED = "Oskar Brenner founded the Kestrel Observatory in 1923."
MARRIED = "Oskar Brenner was married to Ilse Brenner, a painter."
QUESTION = "Who was the spouse of the founder of the Kestrel Observatory?"


def capable(prompt: str) -> str:
    if prompt.startswith("You turn a passage into knowledge-graph facts"):
        triples = []
        if FOUNDED in prompt:
            triples.append(["Oskar Brenner", "founded", "Kestrel Observatory"])
        if MARRIED in prompt:
            triples.append(["Oskar Brenner", "spouse", "Ilse Brenner"])
        return json.dumps({"entities": [], "triples": triples})
    if prompt.startswith("You read retrieved passages"):
        return json.dumps({"triples": [["Oskar Brenner", "founded", "Kestrel Observatory"]]})
    if prompt.startswith("You decide whether"):
        return json.dumps({"answerable": True, "answer": "Ilse Brenner", "reason": None})
    if prompt.startswith("You find the named entities in a question"):
        return json.dumps({"named_entities": ["Kestrel Observatory"]})
    if prompt.startswith("You check which retrieved facts"):
        return json.dumps({"triples": [["Oskar Brenner", "spouse", "Ilse Brenner"]]})
    return "Ilse Brenner"


@pytest.fixture
def gear(tmp_path: Path) -> Gear:
    gear = Gear(tmp_path / "index", chat_model=ScriptedChatModel(respond=capable),
                embedding_model="hashing-64", base_k=2, beam_width=2)
    gear.index([FOUNDED, MARRIED])
    return gear


def test_rows_are_unique_described_and_the_default_exists() -> None:
    assert DEFAULT_RETRIEVER in RETRIEVERS
    for name, spec in RETRIEVERS.items():
        assert spec.name == name and spec.description
    assert not RETRIEVERS["hybrid"].needs_triples and RETRIEVERS["ppr"].needs_triples


def test_every_name_builds_and_ranks(gear: Gear) -> None:
    for name, spec in RETRIEVERS.items():
        ranked = make_retriever(name, gear.open_index, gear.llm if spec.needs_llm else None).retrieve(
            QUESTION, 2
        )
        assert 1 <= len(ranked) <= 2, name


def test_llm_rows_need_a_model_and_free_rows_do_not(gear: Gear, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    for name, spec in RETRIEVERS.items():
        if spec.needs_llm:
            with pytest.raises(LLMConfigError):
                make_retriever(name, gear.open_index)
        else:
            make_retriever(name, gear.open_index)


def test_hipporag_has_an_llm_row_of_its_own(gear: Gear) -> None:
    """`hipporag` stays LLM-free; `hipporag+ner` is the paper's NER step, a PPR score."""
    assert not RETRIEVERS["hipporag"].needs_llm
    spec = RETRIEVERS["hipporag+ner"]
    assert spec.needs_llm and spec.needs_triples and spec.score == "ppr"
    assert "entities" in spec.description
    [top] = gear.retrieve(QUESTION, 1, retriever="hipporag+ner")
    assert top.text == FOUNDED  # the one passage with the named entity's phrase


def test_unknown_names_list_the_known_ones() -> None:
    with pytest.raises(UnknownNameError, match="known: bm25, dense, hybrid"):
        check_name("syncge+ppr")


def test_gear_retrievers_prints_every_name() -> None:
    result = CliRunner().invoke(app, ["retrievers"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for name in RETRIEVERS:
        assert name in result.output


def test_gear_search_with_the_agent_prints_chains(gear: Gear, monkeypatch) -> None:
    """The agent's retriever keeps its chains, so `gear search --retriever gear` shows them."""
    import gear_agent.llm.factory as factory

    monkeypatch.setattr(factory, "make_chat_model", lambda *a, **k: ScriptedChatModel(respond=capable))
    monkeypatch.setenv("GEAR_EMBEDDING_MODEL", "hashing-64")
    monkeypatch.setenv("GEAR_BASE_K", "2")
    index = str(gear.settings.index_dir)
    gear.close()
    result = CliRunner().invoke(app, ["search", QUESTION, "--retriever", "gear", "--index", index],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "↳ (Oskar Brenner; founded; Kestrel Observatory)" in result.output
