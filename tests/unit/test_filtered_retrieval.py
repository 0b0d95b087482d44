"""Filters reach every retriever: base search filters in the store before ranking,
expansions keep only passing passages, the agent filters every search of its run, and a
filter that matches nothing says so (Python API and CLI)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.fakes import ScriptedChatModel
from typer.testing import CliRunner

from gear_agent import Gear
from gear_agent.cli import app
from gear_agent.filters import FilterError
from gear_agent.registry import RETRIEVERS
from gear_agent.retrieval.filtering import NothingMatchesError

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo"
QUESTION = "Who was the spouse of the founder of the Kestrel Observatory?"
LLM_FREE = [name for name, spec in RETRIEVERS.items() if not spec.needs_llm]


def _corpus(folder: Path) -> Path:
    """The demo corpus with a ``shelf`` key: passages alternate between shelves a and b."""
    records = json.loads((DEMO / "corpus.json").read_text())
    for i, record in enumerate(records):
        record["shelf"] = "ab"[i % 2]
        record["rank"] = i
    path = folder / "corpus.json"
    path.write_text(json.dumps(records))
    return path


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("filtered")
    with Gear(folder / "index", embedding_model="hashing-128") as gear:
        gear.index(_corpus(folder), openie=DEMO / "openie.json")
    return folder / "index"


@pytest.fixture(scope="module")
def gear(index_dir: Path):
    with Gear(index_dir, embedding_model="hashing-128") as opened:
        yield opened


@pytest.mark.parametrize("name", LLM_FREE)
def test_every_llm_free_retriever_returns_only_passing_passages(gear: Gear, name: str) -> None:
    everything = gear.retrieve(QUESTION, k=12, retriever=name)
    kept = gear.retrieve(QUESTION, k=12, retriever=name, where={"shelf": "b"})
    assert {p.metadata["shelf"] for p in everything} == {"a", "b"}
    assert kept and all(p.metadata["shelf"] == "b" for p in kept)


def test_the_filter_applies_before_ranking(gear: Gear) -> None:
    """k passing passages come back even when the unfiltered top k holds none of them."""
    top = [p.id for p in gear.retrieve(QUESTION, k=3, retriever="dense")]
    last = gear.retrieve(QUESTION, k=12, retriever="dense")[-1]
    kept = gear.retrieve(QUESTION, k=1, retriever="dense", where=[f"id={last.id}"])
    assert last.id not in top and [p.id for p in kept] == [last.id]


def test_cli_and_dict_forms_agree(gear: Gear) -> None:
    by_dict = gear.retrieve(QUESTION, k=5, retriever="hybrid", where={"rank": {"$gte": 6}})
    by_cli = gear.retrieve(QUESTION, k=5, retriever="hybrid", where=["rank>=6"])
    assert [p.id for p in by_dict] == [p.id for p in by_cli]
    assert all(p.metadata["rank"] >= 6 for p in by_dict)


def test_a_filter_that_matches_nothing_says_so(gear: Gear) -> None:
    with pytest.raises(NothingMatchesError, match=r"0 of 12 passages match"):
        gear.retrieve(QUESTION, retriever="hybrid+naive_ge", where={"shelf": "z"})
    with pytest.raises(FilterError, match="bad filter"):
        gear.retrieve(QUESTION, where=["shelf"])


def _reader_only(prompt: str) -> str:
    if prompt.startswith("You read retrieved passages"):
        return json.dumps({"triples": [["Oskar Brenner", "founded", "Kestrel Observatory"]]})
    if prompt.startswith("You decide whether a question can be answered"):
        return json.dumps({"answerable": True, "answer": "Ilse Brenner", "reason": None})
    return json.dumps({"answer": "Ilse Brenner", "citations": [1]})


@pytest.mark.parametrize("name", ["syncge", "gear", "gear-fused"])
def test_llm_retrievers_filter_every_search(index_dir: Path, name: str) -> None:
    chat = ScriptedChatModel(respond=_reader_only)
    with Gear(index_dir, chat_model=chat, embedding_model="hashing-128") as gear:
        kept = gear.retrieve(QUESTION, k=10, retriever=name, where={"shelf": "a"})
        shown = [p for p in chat.calls if p.startswith("You read retrieved passages")]
    assert kept and all(p.metadata["shelf"] == "a" for p in kept)
    b_titles = [r["title"] for r in json.loads((DEMO / "corpus.json").read_text())[1::2]]
    assert shown and not any(f"Title: {t}\n" in shown[0] for t in b_titles)


def test_hipporag_ner_returns_only_passing_passages(index_dir: Path) -> None:
    chat = ScriptedChatModel.from_list(['{"named_entities": ["Kestrel Observatory"]}'] * 2)
    with Gear(index_dir, chat_model=chat, embedding_model="hashing-128") as gear:
        kept = gear.retrieve(QUESTION, k=6, retriever="hipporag+ner", where={"shelf": "a"})
    assert kept and all(p.metadata["shelf"] == "a" for p in kept)
    assert len(chat.calls) == 1 and chat.calls[0].startswith("You find the named entities")


def test_ask_takes_a_filter(index_dir: Path) -> None:
    chat = ScriptedChatModel(respond=_reader_only)
    with Gear(index_dir, chat_model=chat, embedding_model="hashing-128") as gear:
        answer = gear.ask(QUESTION, where=["shelf=a"])
        with pytest.raises(NothingMatchesError):
            gear.ask(QUESTION, where=["shelf=z"])
    assert answer.passages and all(p.metadata["shelf"] == "a" for p in answer.passages)


def _search(index_dir: Path, *args: str):
    env = {"GEAR_EMBEDDING_MODEL": "hashing-128", "COLUMNS": "200"}
    return CliRunner().invoke(app, ["search", QUESTION, "--index", str(index_dir), *args], env=env)


def test_cli_search_filters_and_prints_json_with_metadata(index_dir: Path) -> None:
    result = _search(index_dir, "--retriever", "hybrid+naive_ge", "--where", "shelf=b",
                     "--where", "rank>=3", "--k", "4", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["where"] == {"shelf": {"$eq": "b"}, "rank": {"$gte": 3}}
    assert report["passages"]
    for passage in report["passages"]:
        assert passage["metadata"]["shelf"] == "b" and passage["metadata"]["rank"] >= 3
        assert passage["source"].endswith("corpus.json")


def test_cli_search_says_when_the_filter_matches_nothing(index_dir: Path) -> None:
    result = _search(index_dir, "--where", "shelf=z")
    assert result.exit_code == 2  # like any other bad argument
    assert "no passage passes the filter" in result.output and "0 of 12" in result.output
    assert "Traceback" not in result.output
