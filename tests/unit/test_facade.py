"""The `Gear` facade: index strings, dicts, Documents and paths; retrieve; ask; delete."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from langchain_core.documents import Document
from support.fakes import ScriptedChatModel

from gear_agent import Answer, Gear, PassageRecord
from gear_agent.errors import GearError, SettingsError
from gear_agent.ingest.corpus import CorpusFormatError

FOUNDED = "Oskar Brenner founded the Kestrel Observatory in 1923."
MARRIED = "Oskar Brenner was married to Ilse Brenner, a painter."
QUESTION = "Who was the spouse of the founder of the Kestrel Observatory?"
FACTS = {
    FOUNDED: [["Oskar Brenner", "founded", "Kestrel Observatory"]],
    MARRIED: [["Oskar Brenner", "spouse", "Ilse Brenner"]],
}


def capable(prompt: str) -> str:
    """Plays a capable model on the two facts above, by the prompt's kind."""
    if prompt.startswith("You turn a passage into knowledge-graph facts"):
        triples = [t for text, facts in FACTS.items() if text in prompt for t in facts]
        entities = sorted({part for s, _, o in triples for part in (s, o)})
        return json.dumps({"entities": entities, "triples": triples})
    if prompt.startswith("You read retrieved passages"):
        return json.dumps({"triples": [t for facts in FACTS.values() for t in facts]})
    if prompt.startswith("You decide whether a question can be answered"):
        done = "Ilse Brenner" in prompt
        return json.dumps({"answerable": done, "answer": "Ilse Brenner" if done else None,
                           "reason": None if done else "the spouse"})
    if prompt.startswith("You write the next search query"):
        return "spouse of Oskar Brenner"
    return "Ilse Brenner"


@pytest.fixture
def chat() -> ScriptedChatModel:
    return ScriptedChatModel(respond=capable)


def test_five_lines_from_strings_to_an_answer(tmp_path: Path, chat) -> None:
    gear = Gear(tmp_path / "index", chat_model=chat, embedding_model="hashing-128")
    report = gear.index([FOUNDED, MARRIED])
    answer = gear.ask(QUESTION)
    assert isinstance(answer, Answer)
    assert answer.answer == "Ilse Brenner"
    assert (report.passages_added, report.triples_added) == (2, 2)
    assert report.extraction is not None and report.extraction.passages_failed == 0
    assert ("Oskar Brenner", "spouse", "Ilse Brenner") in answer.gist_memory
    assert all(isinstance(p, PassageRecord) for p in answer.passages)
    assert {p.text for p in answer.passages} == {FOUNDED, MARRIED}
    assert answer.tokens["by_node"]["answer"]["calls"] == 1
    assert answer.stop_reason == "answerable"


def test_retrieve_returns_records_with_chains(tmp_path: Path, chat) -> None:
    gear = Gear(tmp_path / "index", chat_model=chat, embedding_model="hashing-128", base_k=1)
    gear.index([FOUNDED, MARRIED])
    records = gear.retrieve("Who founded the Kestrel Observatory?", k=2)
    assert [r.text for r in records][0] == FOUNDED
    assert any(r.chain for r in records)
    chained = next(r for r in records if r.chain)
    assert all(t.subject and t.predicate and t.object for t in chained.chain)
    assert chained.to_dict()["chain"][0] == list(chained.chain[0].as_tuple())


def test_dicts_documents_and_paths(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"title": "Lake Bled", "text": "A lake in Slovenia.", "year": 2020}) + "\n")
    gear = Gear(tmp_path / "index", embedding_model="hashing-64")
    report = gear.index([
        {"title": "Bled", "text": "Bled is a town in Slovenia.", "kind": "town"},
        Document(page_content="Ljubljana is the capital.", metadata={"title": "Ljubljana", "source": "wiki"}),
        corpus,
    ], extract=False)
    assert report.passages_added == 3
    by_title = {p.title: p for p in gear.store.passages.iterate()}
    assert by_title["Bled"].metadata == {"kind": "town"}
    assert by_title["Ljubljana"].source == "wiki"
    assert by_title["Lake Bled"].metadata == {"year": 2020}
    assert by_title["Lake Bled"].source == (tmp_path / "corpus.jsonl").resolve().as_posix()


def test_without_a_chat_model_it_indexes_text_and_says_so(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    gear = Gear(tmp_path / "index", embedding_model="hashing-64")
    report = gear.index("Bled is a town in Slovenia.")
    assert report.passages_added == 1 and report.triples_added == 0
    assert any("no chat model" in w for w in report.warnings)
    with pytest.raises(GearError, match="No LLM is configured"):
        gear.ask("Where is Bled?")
    with pytest.raises(GearError, match="No LLM is configured"):
        gear.index("Lake Bled.", extract=True)


def test_long_strings_are_chunked_with_one_id_each(tmp_path: Path) -> None:
    gear = Gear(tmp_path / "index", embedding_model="hashing-64", chunk_words=20, chunk_overlap_words=0)
    text = " ".join(f"Sentence number {i} is here." for i in range(20))
    gear.index(text, extract=False)
    passages = list(gear.store.passages.iterate())
    assert len(passages) > 1 and len({p.id for p in passages}) == len(passages)


def test_bad_input_is_one_clear_error(tmp_path: Path) -> None:
    gear = Gear(tmp_path / "index", embedding_model="hashing-64")
    with pytest.raises(CorpusFormatError, match="cannot index a int"):
        gear.index([3], extract=False)
    with pytest.raises(CorpusFormatError, match="no 'text' field"):
        gear.index([{"title": "x"}], extract=False)
    with pytest.raises(SettingsError, match="k must be a positive integer"):
        gear.retrieve("Where?", k=0)
    with pytest.raises(GearError, match="unknown retriever"):
        gear.retrieve("Where?", retriever="nope")
    with pytest.raises(GearError, match="question is empty"):
        gear.retrieve("   ")
    with pytest.raises(SettingsError, match="beam_width"):
        Gear(tmp_path / "other", embedding_model="hashing-64", beam_width=0)


def test_delete_and_as_retriever(tmp_path: Path) -> None:
    gear = Gear(tmp_path / "index", embedding_model="hashing-64")
    gear.index([{"text": FOUNDED, "source": "a"}, {"text": MARRIED, "source": "b"}], extract=False)
    documents = gear.as_retriever("hybrid", k=2).invoke("Kestrel Observatory")
    assert documents[0].page_content == FOUNDED
    assert documents[0].metadata["source"] == "a"
    assert {"id", "title", "score", "chain"} <= set(documents[0].metadata)
    assert len(gear.delete(source="a")) == 1
    assert [p.text for p in gear.store.passages.iterate()] == [MARRIED]


def test_the_readme_quick_start_is_five_lines() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## Quick start.*?```python\n(.*?)```", readme, re.S)
    assert block, "README has a '## Quick start' section with a python block"
    code = [line for line in block.group(1).splitlines() if line.strip()]
    install = re.search(r"## Quick start.*?```bash\n(.*?)```", readme, re.S)
    assert install and len([x for x in install.group(1).splitlines() if x.strip()]) == 1
    assert len(code) <= 4
    assert code[0] == "from gear_agent import Gear"


def citing(prompt: str) -> str:
    """``capable``, whose QA reply cites the passage that says who the spouse is."""
    if not prompt.startswith("You answer"):
        return capable(prompt)
    number = int(re.search(rf"^\[(\d+)\][^\n]*\n{re.escape(MARRIED)}", prompt, re.M).group(1))
    return json.dumps({"answer": "Ilse Brenner", "citations": [
        {"passage": number, "quote": "married to Ilse Brenner"}, {"passage": 9}]})


def test_ask_returns_cited_passages_with_their_chains(tmp_path: Path) -> None:
    gear = Gear(tmp_path / "index", chat_model=ScriptedChatModel(respond=citing),
                embedding_model="hashing-128")
    gear.index([FOUNDED, MARRIED])
    answer = gear.ask(QUESTION)
    assert answer.answer == "Ilse Brenner"
    assert [(c.number, c.passage.text, c.quote) for c in answer.citations] == [
        (1, MARRIED, "married to Ilse Brenner")]
    assert answer.citations[0].passage in answer.passages  # with its score and chain
    assert answer.dropped[-1]["error"].startswith("passage 9 was not shown")


def test_ask_reads_the_chain_triples_once_and_joins_citations_with_their_location(tmp_path: Path,
                                                                                   monkeypatch) -> None:
    gear = Gear(tmp_path / "index", chat_model=ScriptedChatModel(respond=citing),
                embedding_model="hashing-128")
    gear.index([FOUNDED, MARRIED])
    agent, get_triples, reads = gear.agent, gear.store.triples.get, []
    monkeypatch.setattr(gear.store.triples, "get", lambda ids: reads.append("triples") or get_triples(ids))
    invoke = agent.invoke

    def invoke_and_mark(*args, **kwargs):
        result = invoke(*args, **kwargs)
        reads.append("agent done")
        return result

    monkeypatch.setattr(agent, "invoke", invoke_and_mark)
    answer = gear.ask(QUESTION)
    assert reads[-1] == "agent done", "the agent's records are read back, not their triples again"
    assert any(p.chain for p in answer.passages) and all(t.passage_id for p in answer.passages for t in p.chain)
    cited = answer.citations[0]
    assert cited.location == cited.passage.location


def test_ask_refuses_a_model_that_is_not_listed(tmp_path: Path, chat) -> None:
    from gear_agent.llm.errors import LLMConfigError

    gear = Gear(tmp_path / "index", chat_model=chat, embedding_model="hashing-128")
    gear.index([FOUNDED, MARRIED])
    with pytest.raises(LLMConfigError, match="GEAR_LLM_MODELS"):
        gear.ask(QUESTION, model="ollama:llama3.1")
