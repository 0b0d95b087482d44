"""Prompt templates and their loader."""

from __future__ import annotations

import pytest

from gear_agent import prompts
from gear_agent.parsing import parse_triples
from gear_agent.prompts import (
    PROMPT_NAMES,
    PromptError,
    available_prompts,
    load_prompt,
    render_passages,
    render_triples,
)
from gear_agent.types import Passage, Triple

EXPECTED = {
    "extraction": {"title", "passage"},
    "reader": {"question", "passages"},
    "reader_with_memory": {"question", "passages", "memory"},
    "reasoner": {"question", "memory"},
    "rewriter": {"question", "memory", "reason", "conversation"},
    "qa": {"question", "passages", "conversation"},
    "ppr_filter": {"query", "triples"},
    "hipporag_ner": {"query"},
    "sirerag_propositions": {"title", "passage"},
    "sirerag_summary": {"texts", "max_words"},
}


@pytest.mark.parametrize("name", PROMPT_NAMES)
def test_builtin_prompts_load_and_fill(name):
    prompt = load_prompt(name)
    assert set(prompt.placeholders) == EXPECTED[name]
    values = {p: f"<{p.upper()}>" for p in prompt.placeholders}
    text = prompt.format(**values, unused="ignored")
    for value in values.values():
        assert value in text
    assert not any("{" + p + "}" in text for p in prompt.placeholders)
    assert "{{" not in text  # escaped braces come out single
    assert not text.endswith("\n")


def test_literal_braces_come_out_single():
    text = load_prompt("reasoner").format(question="q", memory="m")
    assert '{"answerable": true, "answer": "short answer", "reason": null}' in text
    assert "{{" not in text


def test_missing_placeholder_is_a_clear_error():
    with pytest.raises(PromptError, match="needs a value for passages"):
        load_prompt("qa").format(question="Who?", conversation="")


def test_unknown_name_lists_the_available_ones():
    with pytest.raises(PromptError) as caught:
        load_prompt("summariser")
    for name in PROMPT_NAMES:
        assert name in str(caught.value)


def test_names_with_paths_are_refused():
    with pytest.raises(PromptError, match="invalid prompt name"):
        load_prompt("../pyproject")


def test_user_folder_comes_first(tmp_path):
    (tmp_path / "qa.txt").write_text("Q: {question}\nContext: {passages}\nA:\n")
    prompt = load_prompt("qa.txt", tmp_path)
    assert prompt.path == tmp_path / "qa.txt"
    assert prompt.format(question="Who?", passages="...") == "Q: Who?\nContext: ...\nA:"
    assert load_prompt("reader", tmp_path).path.name == "reader.txt"  # falls back to built-in


def test_user_prompt_may_use_fewer_placeholders_but_not_unknown_ones(tmp_path):
    (tmp_path / "qa.txt").write_text("Just answer: {question}")
    assert load_prompt("qa", tmp_path).placeholders == ("question",)
    (tmp_path / "reasoner.txt").write_text("{question} {memory} {context}")
    with pytest.raises(PromptError, match=r"\{context\}.*available: \{question\}, \{memory\}"):
        load_prompt("reasoner", tmp_path)


def test_extra_user_prompts_are_available(tmp_path):
    (tmp_path / "my_step.txt").write_text("Do {thing}.")
    assert "my_step" in available_prompts(tmp_path)
    assert load_prompt("my_step", tmp_path).format(thing="it") == "Do it."


def test_bad_template_says_how_to_escape_braces(tmp_path):
    (tmp_path / "qa.txt").write_text('Reply {"answer": ...} to {question}')
    with pytest.raises(PromptError, match=r"\{\{ and \}\}"):
        load_prompt("qa", tmp_path)
    (tmp_path / "reader.txt").write_text("unclosed { brace {question}")
    with pytest.raises(PromptError, match="escape|braces"):
        load_prompt("reader", tmp_path)


def test_missing_user_folder_is_an_error(tmp_path):
    with pytest.raises(PromptError, match="GEAR_PROMPTS_DIR"):
        load_prompt("qa", tmp_path / "nope")


def test_installed_copy_is_used_when_present(tmp_path, monkeypatch):
    installed = tmp_path / "_prompts"
    installed.mkdir()
    (installed / "qa.txt").write_text("installed {question} {passages}")
    monkeypatch.setattr(prompts, "_PACKAGE_DIR", installed)
    assert prompts.builtin_prompts_dir() == installed
    assert load_prompt("qa").format(question="q", passages="p") == "installed q p"
    assert load_prompt("reader").path.parent == prompts._REPO_DIR  # the rest from the checkout


def test_render_passages():
    text = render_passages([Passage("p-1", "Bled", "A town.\n"), Passage("p-2", "", "Untitled.")])
    assert text == "[1] Bled\nA town.\n\n[2]\nUntitled."
    assert render_passages([]) == "(no passages)"


def test_rendered_triples_parse_back():
    triples = [
        Triple("t-1", "Lake Bled", "located in", "Slovenia", "p-1"),
        ("Church of the Assumption", "built in", "17th century"),
        ('Say "hi", then', "leave", "O'Neil"),
    ]
    text = render_triples(triples)
    assert parse_triples(text).triples == [
        ("Lake Bled", "located in", "Slovenia"),
        ("Church of the Assumption", "built in", "17th century"),
        ('Say "hi", then', "leave", "O'Neil"),
    ]
    assert render_triples([]) == "(none yet)"
