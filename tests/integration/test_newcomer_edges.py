"""The rough edges a newcomer hit (issue 27, item 3), one test each: what ``gear serve``
points at, cheap checks before any model loads, filters that cannot be read, the Python
API saying what a person needs to know, a local model that ignores JSON in the prompt,
results on standard output, help texts in one style, readable traces, and advice that
fits a refused connection. (``{"messages": [...]}`` to ``/gear/invoke``: test_serve.py;
``langgraph dev`` schemas without an LLM: test_langgraph_dev.py.)"""

from __future__ import annotations

import asyncio
import json
import socket
import warnings
from pathlib import Path

import click
import pytest
import typer.main
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from support.agent_faults import QUESTION, capable_reply, node_of
from support.fakes import FakeStore, ScriptedChatModel, client, make_passages
from support.tiny_corpus import make_runtime, make_settings
from support.web_page import build_demo_index
from typer.testing import CliRunner

from gear_agent import Gear
from gear_agent.cli import app
from gear_agent.errors import GearWarning
from gear_agent.extraction.extract import CONSTRAINED_MODES, extract_triples
from gear_agent.llm.client import LLMClient
from gear_agent.llm.errors import LLMCallError, ReplyFormatError
from gear_agent.store import StoreError


@pytest.fixture
def demo_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "GEAR_LLM_MODEL", "GEAR_INDEX_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GEAR_EMBEDDING_MODEL", "hashing-384")
    build_demo_index(tmp_path / "index", "hashing-384")
    return tmp_path / "index"


# ---- gear serve ---------------------------------------------------------------------------
def test_serve_points_at_the_page_and_the_readable_playground() -> None:
    from gear_agent.cli.serve_cmd import startup_lines

    lines = startup_lines("127.0.0.1", 8000, Path("idx"), playground=True)
    assert lines[0].startswith("GEAR on http://127.0.0.1:8000/ ")
    assert "http://127.0.0.1:8000/gear/ask/playground/" in lines[2]
    assert '{"input": {"messages": [...]}}' in lines[1]
    assert len(startup_lines("h", 1, Path("i"), playground=False)) == 2


# ---- cheap checks before any model loads ----------------------------------------------------
def _no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make loading the embedding model or the index for search a test failure."""
    def loaded(*_a, **_k):
        raise AssertionError("a model was loaded before the cheap checks answered")

    monkeypatch.setattr("gear_agent.open_index.OpenIndex.open", loaded)
    monkeypatch.setattr("gear_agent.embedding.make_embedder", loaded)


@pytest.mark.parametrize(("args", "says"), [
    (["ask", QUESTION, "--index", "NOWHERE"], "no index at"),
    (["ask", QUESTION], "No LLM is configured"),
    (["ask", QUESTION, "--where", "year>1900"], "no passage passes the filter year>1900"),
    (["search", QUESTION, "--where", "year>1900"], "no passage passes the filter year>1900"),
    (["search", QUESTION, "--where", "year>>2"], "bad filter 'year>>2'"),
    (["ask", QUESTION, "--where", "year=>2"], "bad filter 'year=>2'"),
])
def test_a_command_that_cannot_succeed_says_so_before_loading_a_model(
    demo_index: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, args: list[str], says: str
) -> None:
    if "--where" in args and args[0] == "ask":
        monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # configured, never called
    _no_model(monkeypatch)
    args = [str(tmp_path / "nowhere") if a == "NOWHERE" else a for a in args]
    if "--index" not in args:
        args += ["--index", str(demo_index)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2 and says in result.output, result.output
    assert "Traceback" not in result.output


# ---- the Python API says what a person needs to know ---------------------------------------
def test_gear_announces_a_new_index_and_refuses_a_missing_one_when_asked(tmp_path: Path) -> None:
    with pytest.warns(GearWarning, match="no index at .*typo-path: created a new, empty one"):
        gear = Gear(tmp_path / "typo-path", embedding_model="hashing-64")
    with pytest.warns(GearWarning, match="holds no passages"):
        assert gear.retrieve("anything") == []
    gear.close()
    with pytest.raises(StoreError):
        Gear(tmp_path / "other-typo", embedding_model="hashing-64", create=False)
    assert not (tmp_path / "other-typo").exists()
    with warnings.catch_warnings():
        warnings.simplefilter("error", GearWarning)
        Gear(tmp_path / "typo-path", embedding_model="hashing-64").close()  # exists now: quiet


def test_indexing_without_a_chat_model_warns_as_well_as_reporting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "GEAR_LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)
    build = make_runtime(tmp_path / "index")  # an index that exists, so only the run warns
    build.store.close()
    gear = Gear(tmp_path / "index", embedding_model="hashing-128")
    with pytest.warns(GearWarning, match="no chat model configured, so no triples were extracted"):
        report = gear.index(["Oskar Brenner founded the Kestrel Observatory."])
    assert report.passages_added == 1 and report.warnings


# ---- a local model that ignores JSON in the prompt ------------------------------------------
def echo(prompt: str) -> str:
    return prompt[:200]  # a small base model repeating its prompt


class JsonWhenConstrained(ScriptedChatModel):
    """A local model that ignores JSON in the prompt but whose server constrains replies to
    the schema when a ``response_format`` is sent (only the form named ``accepts``)."""

    accepts: str = "json_object"
    formats: list = []

    def _result_for(self, messages, kwargs):
        fmt = kwargs.get("response_format")
        self.formats.append(None if fmt is None else fmt["type"])
        if fmt is not None and fmt["type"] == self.accepts:
            self.calls.append("constrained")
            return ChatResult(generations=[ChatGeneration(message=AIMessage(
                content='{"triples": [["Oskar Brenner", "founded", "Kestrel Observatory"]]}'
            ))])
        return self._result(messages)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        return self._result_for(messages, kwargs)

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):
        return self._result_for(messages, kwargs)


def test_extraction_stops_at_once_naming_the_setting_when_replies_are_not_json() -> None:
    store = FakeStore(make_passages(12))
    model = ScriptedChatModel(respond=echo)
    with pytest.raises(ReplyFormatError, match="GEAR_LLM_RESPONSE_FORMAT") as raised:
        asyncio.run(extract_triples(store, client(model), concurrency=1))
    assert "\n" not in str(raised.value) and "json_object_schema" in str(raised.value)
    assert len(model.calls) == 1 + len(CONSTRAINED_MODES)  # the first passage only, not all 12


@pytest.mark.parametrize(("accepts", "mode"), [
    ("json_schema", "json_schema"), ("json_object", "json_object_schema"),
])
def test_extraction_switches_to_a_format_the_server_constrains_on_the_first_unreadable_reply(
    accepts: str, mode: str
) -> None:
    store = FakeStore(make_passages(6))
    model = JsonWhenConstrained(respond=echo, accepts=accepts, formats=[])
    with pytest.warns(GearWarning, match=f"GEAR_LLM_RESPONSE_FORMAT={mode}"):
        summary = asyncio.run(extract_triples(store, client(model), concurrency=1))
    assert summary.passages_failed == 0 and summary.passages_succeeded == 6
    assert model.formats[0] is None  # asked as configured first
    assert model.formats[-5:] == [accepts] * 5  # the rest of the run in the mode that read


def test_an_unreadable_reply_after_a_readable_one_is_a_slip_not_a_format() -> None:
    replies = iter(['{"triples": [["Oskar Brenner", "founded", "Kestrel Observatory"]]}',
                    "Sure! Here are the triples:"] + ['{"triples": []}'] * 4)
    store = FakeStore(make_passages(6))
    model = ScriptedChatModel(respond=lambda _: next(replies))
    summary = asyncio.run(extract_triples(store, client(model), concurrency=1))
    assert summary.passages_failed == 1 and len(model.calls) == 6  # no probe, no stop


def test_with_a_response_format_unreadable_replies_are_recorded_not_fatal() -> None:
    store = FakeStore(make_passages(4))
    llm = client(ScriptedChatModel(respond=echo))
    llm.response_format_mode = "json_object_schema"  # the server constrains replies
    summary = asyncio.run(extract_triples(store, llm, concurrency=1))
    assert summary.passages_failed == 4


# ---- results on standard output, diagnostics on standard error -----------------------------
def test_info_and_check_print_their_tables_on_standard_output(demo_index: Path) -> None:
    info = CliRunner().invoke(app, ["info", "--index", str(demo_index)])
    assert info.exit_code == 0
    assert "passages" in info.stdout and "12" in info.stdout
    assert "passages" not in info.stderr and "next: gear search" in info.stderr  # a hint
    check = CliRunner().invoke(app, ["check", "--index", str(demo_index)])
    assert check.exit_code == 0 and "integrity_check" in check.stdout and check.stdout.rstrip().endswith("ok")
    delete = CliRunner().invoke(app, ["delete", "--source", "nothing", "--index", str(demo_index)])
    assert delete.stdout.startswith("deleted 0 passages")


# ---- help texts in one style ----------------------------------------------------------------
def _commands(command: click.Command, ctx: click.Context, path: tuple[str, ...] = ()):
    sub = getattr(command, "commands", None)
    if sub is None:
        yield path, command
        return
    for name in sorted(sub):
        yield from _commands(sub[name], ctx, (*path, name))


def test_help_texts_are_in_one_style() -> None:
    root = typer.main.get_command(app)
    ctx = click.Context(root)
    seen = 0
    for path, command in _commands(root, ctx):
        first = command.help.split("\n\n")[0] if command.help else ""
        assert first[:1].isupper() and first.rstrip().endswith("."), (path, first)
        for param in command.params:
            text = getattr(param, "help", None)
            if text is None or param.name == "help":
                continue
            seen += 1
            assert text[0].isupper() and text.rstrip().endswith((".", ")")), (path, param.name, text)
            if "--index" in getattr(param, "opts", []) and path[0] != "eval":
                assert text == "Index directory (GEAR_INDEX_DIR; default: .gear/index).", (path, text)
                assert "-i" in param.opts
    assert seen > 40


# ---- readable traces ------------------------------------------------------------------------
def test_trace_show_prints_errors_and_answers_readably(tmp_path: Path) -> None:
    from gear_agent.agent.graph import build_agent
    from gear_agent.tracing.jsonl_tracer import JsonlTracer

    settings = make_settings(llm_max_retries=0)
    runtime = make_runtime(tmp_path / "index", settings)

    def reply(prompt: str):
        node = node_of(prompt)
        if node == "answer":
            return json.dumps({"answer": "Sacramento County", "citations": [
                {"passage": 1, "quote": "Folsom is a city in Sacramento County"}]})
        if node == "reason" and "FAIL" in prompt:
            return RuntimeError("the model server closed the connection")
        return capable_reply(node, prompt)

    agent = build_agent(settings, index=runtime, chat_model=ScriptedChatModel(respond=reply))
    tracer = JsonlTracer(tmp_path / "traces")
    agent.invoke({"question": QUESTION}, config={"callbacks": [tracer]})
    with pytest.raises(LLMCallError):
        agent.invoke({"question": "FAIL " + QUESTION}, config={"callbacks": [tracer]})
    file = tmp_path / "traces" / "gear-trace.jsonl"
    runs = CliRunner().invoke(app, ["trace", "list", str(file)]).stdout.split()
    good = CliRunner(env={"COLUMNS": "200"}).invoke(app, ["trace", "show", str(file), runs[0]]).stdout
    lines = good.splitlines()
    assert lines[2].startswith("├── answer: Sacramento County [1]")  # right after the question
    assert "[1] Folsom, California — “Folsom is a city in Sacramento County”" in lines[3]
    bad = CliRunner(env={"COLUMNS": "200"}).invoke(app, ["trace", "show", str(file)]).stdout
    assert "error: LLMCallError: LLM call failed (model='scripted-model', node='reason')" in bad
    assert "error: RuntimeError: the model server closed the connection" in bad
    assert "Traceback" not in bad and 'LLMCallError("' not in bad


# ---- advice that fits a refused connection ---------------------------------------------------
def test_a_refused_connection_is_told_to_start_the_server_not_to_retry_more() -> None:
    from langchain_openai import ChatOpenAI

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    model = ChatOpenAI(model="m", base_url=f"http://127.0.0.1:{port}/v1", api_key="x",
                       max_retries=0, timeout=5)
    llm = LLMClient(model, sleep=lambda _s: None)
    llm.retry = llm.retry.__class__(max_retries=1)
    with pytest.raises(LLMCallError) as caught:
        llm.invoke("hello", node="reason")
    message = str(caught.value)
    assert f"http://127.0.0.1:{port}/v1" in message
    assert "nothing answers there: start the model server" in message
    assert "GEAR_LLM_MAX_RETRIES" not in message
