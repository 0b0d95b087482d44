"""Chat input, cited answers, per-run chat models and the graph's JSON schemas (issue 17)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from support.fakes import client, scripted
from support.tiny_corpus import QUESTION, make_runtime, make_settings, pid

from gear_agent.agent.chat import HISTORY_MESSAGES, question_of, render_conversation
from gear_agent.agent.citations import check_citations, quote_in, read_cited_answer
from gear_agent.agent.graph import build_graph
from gear_agent.agent.models import ChatModels, chosen_model
from gear_agent.config import LLMSettings
from gear_agent.errors import GearError
from gear_agent.llm.errors import LLMConfigError
from gear_agent.parsing import ParseError
from gear_agent.parts import index_parts
from gear_agent.prompts import load_prompt

READ = json.dumps({"triples": [["Rainbow Bridge", "located in", "Folsom"],
                               ["Folsom", "located in", "Sacramento County"]]})
YES = json.dumps({"answerable": True, "answer": "Sacramento County", "reason": None})
NOT_YET = json.dumps({"answerable": False, "answer": None, "reason": "the county of Folsom"})
QUOTE = "Folsom is a city in Sacramento County"


def cited(*citations: object, answer: str = "Sacramento County") -> str:
    return json.dumps({"answer": answer, "citations": list(citations)})


def agent_over(tmp_path: Path, replies: list, **settings):
    runtime = make_runtime(tmp_path / "index", make_settings(**settings))
    model = scripted(replies)
    return build_graph(index_parts(runtime), client(model), runtime.settings), model


def shown_numbers(prompt: str) -> dict[str, int]:
    """Title -> number of each passage a QA prompt showed."""
    return {line.split("] ", 1)[1]: int(line[1:line.index("]")])
            for line in prompt.splitlines() if line.startswith("[")}


# ---- citations ---------------------------------------------------------------------------


SHOWN = [
    {"id": "p-a", "title": "Folsom, California", "text": QUOTE + ", California, east of Sacramento."},
    {"id": "p-b", "title": "Sacramento County", "text": "Sacramento County is a county."},
]


def test_citations_of_shown_passages_are_kept_in_order_with_their_quotes() -> None:
    reply = cited({"passage": 2}, {"passage": 1, "quote": f"“{QUOTE.lower()}”"})
    result = read_cited_answer(reply, SHOWN)
    assert result.answer == "Sacramento County"
    assert result.citations == [
        {"passage_id": "p-b", "title": "Sacramento County", "quote": None, "location": ""},
        {"passage_id": "p-a", "title": "Folsom, California", "quote": QUOTE.lower(), "location": ""},
    ]
    assert result.dropped == []


def test_a_citation_of_a_passage_not_shown_is_dropped_and_recorded() -> None:
    reply = cited({"passage": 1}, {"passage": 3}, {"passage": 0}, "p-zzz", {"note": "x"})
    result = read_cited_answer(reply, SHOWN)
    assert [c["passage_id"] for c in result.citations] == ["p-a"]
    errors = [d["error"] for d in result.dropped]
    assert errors[0] == "passage 3 was not shown (the prompt showed 1..2)"
    assert errors[1] == "passage 0 was not shown (the prompt showed 1..2)"
    assert "not a passage number" in errors[2] and "not a passage number" in errors[3]
    assert [d["citation"] for d in result.dropped] == [{"passage": 3}, {"passage": 0}, "p-zzz",
                                                      {"note": "x"}]


def test_a_quote_not_in_its_passage_is_removed_and_recorded() -> None:
    result = read_cited_answer(cited({"passage": 2, "quote": QUOTE}), SHOWN)
    assert result.citations == [{"passage_id": "p-b", "title": "Sacramento County", "quote": None,
                                 "location": ""}]
    assert result.dropped == [{"citation": {"passage": 2, "quote": QUOTE},
                               "error": "quote not found in passage 2"}]


def test_lenient_forms_numbers_ids_markers_and_a_plain_answer() -> None:
    assert [c["passage_id"] for c in read_cited_answer(cited(2, "[1]", "p-b"), SHOWN).citations] \
        == ["p-b", "p-a"]  # a passage cited twice is kept once
    marked = read_cited_answer(cited(answer="Sacramento County [2]"), SHOWN)
    assert marked.answer == "Sacramento County"
    assert [c["passage_id"] for c in marked.citations] == ["p-b"]
    plain = read_cited_answer("Answer: Sacramento County [1]", SHOWN)
    assert (plain.answer, [c["passage_id"] for c in plain.citations]) == ("Sacramento County", ["p-a"])
    fenced = read_cited_answer('```json\n{"answer": 1919, "citations": [{"number": "2"}]}\n```', SHOWN)
    assert (fenced.answer, fenced.citations[0]["passage_id"]) == ("1919", "p-b")


def test_a_reply_without_an_answer_is_a_parse_error() -> None:
    with pytest.raises(ParseError):
        read_cited_answer('{"answer": "", "citations": [1]}', SHOWN)
    with pytest.raises(ParseError):
        read_cited_answer("   ", SHOWN)


def test_quote_matching_ignores_case_spacing_and_punctuation_only() -> None:
    assert quote_in("folsom , is a CITY", "Folsom is a city.")
    assert not quote_in("Folsom is a town", "Folsom is a city.")
    assert not quote_in("city in Sac", "Folsom is a city in Sacramento.")  # whole words only
    assert not quote_in("...", "anything")
    assert check_citations([], SHOWN) == ([], [])


# ---- chat input ----------------------------------------------------------------------------


def test_question_of_takes_a_trailing_human_message_or_the_question() -> None:
    chat = [HumanMessage("Where is the Rainbow Bridge?"), AIMessage("Folsom [1]"), HumanMessage("Its county?")]
    assert question_of(None, chat) == (
        "Its county?", [["human", "Where is the Rainbow Bridge?"], ["ai", "Folsom [1]"]], [])
    question, history, added = question_of("Next?", chat[:2])
    assert (question, len(history)) == ("Next?", 2)
    assert [m.content for m in added] == ["Next?"]
    many = [HumanMessage(f"q{i}") for i in range(20)] + [AIMessage("a")]
    assert len(question_of("x", many)[1]) == HISTORY_MESSAGES


def test_rewriter_and_qa_prompts_are_unchanged_without_history() -> None:
    rewriter = load_prompt("rewriter").format(question="Q", memory="M", reason="R", conversation="")
    assert "word for word.\n\nQuestion: Q" in rewriter  # byte for byte the recorded prompt
    with_history = load_prompt("rewriter").format(
        question="Q", memory="M", reason="R", conversation=render_conversation([["human", "Hi"]]))
    assert "word for word.\n\nEarlier in this conversation" in with_history
    assert "User: Hi\n\nQuestion: Q" in with_history


def test_messages_input_answers_the_last_human_message_with_an_ai_message(tmp_path: Path) -> None:
    bridge = "a concrete arch bridge over the American River"
    graph, model = agent_over(tmp_path, [READ, YES, cited({"passage": 1, "quote": bridge}, 9)])
    chat = [{"role": "user", "content": "Where is the Rainbow Bridge over the American River?"},
            {"role": "assistant", "content": "In Folsom."},
            {"role": "user", "content": QUESTION}]
    result = graph.compile().invoke({"messages": chat})
    qa_prompt = model.prompts[-1]
    numbers = shown_numbers(qa_prompt.split("Passages:")[1])
    assert "User: Where is the Rainbow Bridge over the American River?\nAssistant: In Folsom." in qa_prompt
    assert f"Question: {QUESTION}" in qa_prompt
    assert result["answer"] == "Sacramento County"
    assert result["queries"] == [QUESTION]
    assert [m.type for m in result["messages"]] == ["human", "ai", "human", "ai"]
    first = next(t for t, n in numbers.items() if n == 1)
    assert first == "Rainbow Bridge (Folsom)"  # the quote's passage, shown as [1]
    by_id = {p["id"]: p for p in result["passages"]}
    assert result["citations"] == [{"passage_id": pid(first), "title": first, "quote": bridge,
                                    "location": by_id[pid(first)]["location"]}]
    assert result["messages"][-1].content.startswith("Sacramento County [1]\n\nSources:\n[1] ")
    assert {"iteration": 1, "node": "answer", "citation": 9,
            "error": "passage 9 was not shown (the prompt showed 1..2)"} in result["dropped"]


def test_question_input_keeps_its_fields_and_joins_the_chat(tmp_path: Path) -> None:
    graph, _ = agent_over(tmp_path, [READ, YES, "Sacramento County"])
    result = graph.compile().invoke({"question": QUESTION})
    assert result["answer"] == "Sacramento County"  # a plain reply: an answer, no citations
    assert result["citations"] == []
    assert [(m.type, m.content) for m in result["messages"]] == [
        ("human", QUESTION), ("ai", "Sacramento County")]
    assert {"passages", "gist_memory", "iterations", "queries", "stop_reason", "tokens",
            "dropped"} <= set(result)


def test_a_thread_is_a_conversation_the_rewriter_sees(tmp_path: Path) -> None:
    replies = [READ, YES, cited(1),  # turn 1
               READ, NOT_YET, "county of Folsom", READ, YES, cited(2)]  # turn 2, two iterations
    graph, model = agent_over(tmp_path, replies)
    agent = graph.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    agent.invoke({"messages": [{"role": "user", "content": QUESTION}]}, config)
    second = agent.invoke({"messages": [{"role": "user", "content": "And which state is it in?"}]},
                          config)
    rewriter_prompt = next(p for p in model.prompts if p.startswith("You write"))
    assert f"User: {QUESTION}\nAssistant: Sacramento County [1]" in rewriter_prompt
    assert "Question: And which state is it in?" in rewriter_prompt
    assert second["queries"][0] == "And which state is it in?"
    assert [m.type for m in second["messages"]] == ["human", "ai", "human", "ai"]
    assert len(second["citations"]) == 1 and second["iterations"] == 2


def test_no_question_and_no_human_message_is_a_clear_error(tmp_path: Path) -> None:
    agent = agent_over(tmp_path, [])[0].compile()
    with pytest.raises(GearError, match="no question: give 'question', or 'messages'"):
        agent.invoke({"messages": [{"role": "assistant", "content": "Hello"}]})
    with pytest.raises(ValueError, match="the question is empty"):  # a ValueError: servers show it
        agent.invoke({"messages": [{"role": "user", "content": "   "}]})


def test_a_failed_answer_call_keeps_the_reasoner_answer_in_the_chat(tmp_path: Path) -> None:
    graph, _ = agent_over(tmp_path, [READ, YES, RuntimeError("boom")])
    result = graph.compile().invoke({"question": QUESTION})
    assert (result["answer"], result["citations"]) == ("Sacramento County", [])
    assert result["messages"][-1].content == "Sacramento County"
    assert result["dropped"][-1]["node"] == "answer"


def test_without_the_qa_node_finalize_ends_the_turn(tmp_path: Path) -> None:
    graph, _ = agent_over(tmp_path, [READ, YES], answer=False)
    result = graph.compile().invoke({"question": QUESTION})
    assert result["messages"][-1].content == "Sacramento County"
    assert result["citations"] == []


# ---- per-run chat model --------------------------------------------------------------------


def two_models(tmp_path: Path, default_replies: list, other_replies: list, run_models=("other",)):
    runtime = make_runtime(tmp_path / "index", make_settings())
    default, other = scripted(default_replies), scripted(other_replies)
    settings = LLMSettings(llm_model="default", llm_models=",".join(run_models))
    models = ChatModels(settings, client(default), {"other": client(other)})
    return build_graph(index_parts(runtime), models, runtime.settings).compile(), default, other


async def _last_values(agent: Any, inputs: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    return [chunk async for chunk in agent.astream(inputs, stream_mode="values", **kwargs)][-1]


@pytest.mark.parametrize("how", ["context", "configurable", "async", "stream", "astream"])
def test_a_run_may_choose_another_model(tmp_path: Path, how: str) -> None:
    """Every LLM node reads the run's choice from its Runtime, however the run is made."""
    agent, default, other = two_models(tmp_path, [], [READ, YES, cited(1)])
    inputs = {"question": QUESTION}
    if how == "context":
        result = agent.invoke(inputs, context={"model": "other"})
    elif how == "configurable":
        result = agent.invoke(inputs, {"configurable": {"model": "other"}})
    elif how == "async":
        result = asyncio.run(agent.ainvoke(inputs, context={"model": " other "}))
    elif how == "stream":
        result = list(agent.stream(inputs, context={"model": "other"}, stream_mode="values"))[-1]
    else:
        result = asyncio.run(_last_values(agent, inputs, context={"model": "other"}))
    assert result["answer"] == "Sacramento County"
    assert len(other.prompts) == 3 and default.prompts == []


def test_the_default_model_serves_runs_that_name_none(tmp_path: Path) -> None:
    agent, default, other = two_models(tmp_path, [READ, YES, cited(1)], [])
    assert agent.invoke({"question": QUESTION}, context={})["answer"] == "Sacramento County"
    assert len(default.prompts) == 3 and other.prompts == []


def test_a_model_not_allowed_fails_before_any_work(tmp_path: Path) -> None:
    agent, default, other = two_models(tmp_path, [], [])
    with pytest.raises(LLMConfigError, match="'gpt-4o' may not be chosen per run.*GEAR_LLM_MODELS"):
        agent.invoke({"question": QUESTION}, context={"model": "gpt-4o"})
    assert default.prompts == [] and other.prompts == []
    assert isinstance(LLMConfigError("x"), RuntimeError)  # the LangGraph server shows its message


def test_chat_models_build_each_model_once_from_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    ChatAnthropic = pytest.importorskip("langchain_anthropic").ChatAnthropic
    ChatOllama = pytest.importorskip("langchain_ollama").ChatOllama

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-never-sent")
    models = ChatModels(LLMSettings(llm_model="ollama:llama3.1", llm_models="*", llm_max_tokens=64))
    ollama = models.default
    assert isinstance(ollama.model, ChatOllama) and ollama.model_name == "llama3.1"
    assert ollama.model.num_predict == 64 and ollama.model.temperature == 0.0
    claude = models.get("anthropic:claude-3-5-haiku-latest")
    assert isinstance(claude.model, ChatAnthropic)
    assert claude.model_name == "claude-3-5-haiku-latest"  # the replay cache key's model name
    assert models.get("anthropic:claude-3-5-haiku-latest") is claude  # built once
    assert models.get("") is ollama


def test_a_missing_integration_package_is_named() -> None:
    models = ChatModels(LLMSettings(llm_model="gpt-4o-mini", llm_models="mistralai:mistral-small"))
    with pytest.raises(LLMConfigError, match="pip install langchain-mistralai"):
        models.get("mistralai:mistral-small")


def test_chosen_model_reads_context_then_configurable() -> None:
    config = {"configurable": {"model": "b"}}
    assert chosen_model({"model": "a"}, config) == "a"
    assert chosen_model({"model": " "}, config) == chosen_model(None, config) == "b"
    assert chosen_model(None, None) is None
    with pytest.raises(LLMConfigError, match="must be a name"):
        chosen_model(None, {"configurable": {"model": 3}})


def test_settings_list_run_models() -> None:
    from gear_agent.config import GearSettings

    llm = GearSettings(llm_models=" ollama:llama3.1 ,, anthropic:claude ")
    assert llm.run_models == ("ollama:llama3.1", "anthropic:claude")


# ---- schemas (Studio, langgraph dev) -------------------------------------------------------


def test_json_schemas_show_only_the_public_fields(tmp_path: Path) -> None:
    agent = agent_over(tmp_path, [])[0].compile()
    inputs = agent.get_input_jsonschema()
    assert set(inputs["properties"]) == {"question", "messages", "max_iterations", "top_k", "where",
                                         "deadline_s"}
    assert not inputs.get("required")
    outputs = agent.get_output_jsonschema()
    assert set(outputs["properties"]) == {"answer", "citations", "messages", "passages",
                                          "gist_memory", "iterations", "queries",
                                          "stop_reason", "tokens", "dropped"}
    citation = outputs["$defs"]["Citation"]
    assert set(citation["properties"]) == {"passage_id", "title", "quote", "location"}
    assert set(agent.get_context_jsonschema()["properties"]) == {"model", "deadline_s"}


def test_every_project_error_reaches_langgraph_clients_with_its_message() -> None:
    """The LangGraph server sends the message of ValueError/RuntimeError subclasses only
    ("An internal error occurred" otherwise), so every GearError raised in a run is one."""
    import importlib
    import pkgutil

    import gear_agent

    for info in pkgutil.walk_packages(gear_agent.__path__, "gear_agent."):
        if not info.name.startswith(("gear_agent.serve", "gear_agent.cli")):
            importlib.import_module(info.name)
    pending, seen = list(GearError.__subclasses__()), []
    while pending:
        cls = pending.pop()
        seen.append(cls)
        pending.extend(cls.__subclasses__())
    cli_only = {"TraceError"}  # raised by `gear trace` only, never in a run
    hidden = [c.__name__ for c in seen
              if c.__module__.startswith("gear_agent") and c.__name__ not in cli_only
              and not issubclass(c, (ValueError, RuntimeError))]
    assert hidden == []
