"""One clear line, never a traceback: hostile files, arguments and text at every door.

Corpus (JSON, JSONL), OpenIE and trace files with JSON nested thousands deep, 5,000-digit
numbers, bytes that are not UTF-8, lone surrogates; trace records that are arrays, lack an
id or form a parent cycle; empty corpora; ``k <= 0``; undecodable command-line arguments;
terminal escape codes in printed text; the permissions of trace files. The property tests
feed the readers arbitrary bytes and arbitrary JSON and accept only a result or the
reader's own error.
"""

from __future__ import annotations

import io
import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from gear_agent.cli import trace_cmd, undecodable_argument
from gear_agent.cli.common import SafeConsole
from gear_agent.errors import GearError
from gear_agent.ingest.corpus import CorpusFormatError, read_corpus
from gear_agent.ingest.openie import read_openie
from gear_agent.questions import QuestionError, RunOptionError
from gear_agent.retrieval.base import check_request
from gear_agent.text.terminal import printable
from gear_agent.tracing.reader import TraceError, build_tree, read_runs

DEEP = b"[" * 5000 + b"]" * 5000
HUGE = b"9" * 5000
HOSTILE = {
    "deep": (DEEP, "nested deeper"),
    "deep-in-record": (b'[{"title": "t", "text": "x", "meta": ' + DEEP + b"}]", "nested deeper"),
    "huge-number": (b'[{"title": "t", "text": "x", "n": ' + HUGE + b"}]", "4,300 digits"),
    "invalid-utf8": (b'[{"title": "t", "text": "caf\xe9"}]', "not UTF-8"),
    "lone-surrogate": (b'[{"title": "t", "text": "\\ud800"}]', "lone surrogate"),
    "empty-list": (b"[]", "holds no passages"),
    "whitespace-texts": (b'[{"title": "t", "text": "   "}]', "holds no passages"),
}


@pytest.mark.parametrize("case", HOSTILE, ids=list(HOSTILE))
def test_hostile_json_corpora_are_one_line_errors(tmp_path: Path, case: str) -> None:
    data, says = HOSTILE[case]
    path = tmp_path / "corpus.json"
    path.write_bytes(data)
    with pytest.raises(CorpusFormatError, match=says) as caught:
        read_corpus(path)
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 300


@pytest.mark.parametrize(
    ("line", "says"),
    [(DEEP, "corpus.jsonl:2: JSON nested deeper"), (b'{"text": ' + HUGE + b"}", "corpus.jsonl:2"),
     (b'{"text": "\xff"}', "not UTF-8")],
    ids=["deep", "huge-number", "invalid-utf8"],
)
def test_hostile_jsonl_lines_name_their_line(tmp_path: Path, line: bytes, says: str) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_bytes(b'{"title": "a", "text": "fine"}\n' + line + b"\n")
    with pytest.raises(CorpusFormatError, match=says):
        read_corpus(path)


def test_whitespace_only_corpora_are_refused(tmp_path: Path) -> None:
    (tmp_path / "corpus.jsonl").write_text("\n   \n\t\n")
    with pytest.raises(CorpusFormatError, match="holds no passages"):
        read_corpus(tmp_path / "corpus.jsonl")
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "a.txt").write_text("   \n")
    with pytest.raises(CorpusFormatError, match="holds no passages"):
        read_corpus(tmp_path / "folder")


@pytest.mark.parametrize(
    ("data", "says"),
    [(b'{"docs": ' + DEEP + b"}", "nested deeper"), (b'{"docs": [], "n": ' + HUGE + b"}", "4,300"),
     (b'{"docs": [{"title": "\xff"}]}', "not UTF-8")],
    ids=["deep", "huge-number", "invalid-utf8"],
)
def test_hostile_openie_files_are_one_line_errors(tmp_path: Path, data: bytes, says: str) -> None:
    path = tmp_path / "openie.json"
    path.write_bytes(data)
    with pytest.raises(CorpusFormatError, match=says):
        read_openie(path)


@pytest.mark.parametrize(
    ("lines", "says"),
    [([b'{"id": "a"}', b"\xff\xfe"], "t.jsonl:2 is not UTF-8"),
     ([b'{"id": "a"}', b"[1, 2]"], "t.jsonl:2: a run must be a JSON object"),
     ([b'{"name": "x"}'], "t.jsonl:1: the run has no string 'id'"),
     ([DEEP], "nested deeper"),
     ([b'{"id": "a", "parent_run_id": 5}'], "parent_run_id"),
     ([b'{"id": "a", "inputs": [1], "outputs": {"answer": "x"}}'], "'inputs' must be an object"),
     ([b'{"id": "a", "tokens": [3]}'], "'tokens' must be an object")],
    ids=["invalid-utf8", "array-line", "missing-id", "deep", "bad-parent", "inputs-list", "tokens-list"],
)
def test_hostile_trace_files_are_one_line_errors(tmp_path: Path, lines: list[bytes], says: str) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(TraceError, match=says):
        read_runs(path)
    result = CliRunner().invoke(trace_cmd.app, ["show", str(path)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.output.startswith("error:") and result.output.count("\n") == 1


def test_a_parent_cycle_is_shown_once_not_recursed_forever(tmp_path: Path) -> None:
    runs = [{"id": "root", "parent_run_id": None, "name": "gear"},
            {"id": "a", "parent_run_id": "b", "name": "a"},
            {"id": "b", "parent_run_id": "a", "name": "b"},
            {"id": "c", "parent_run_id": "root", "name": "c"},
            {"id": "root2", "parent_run_id": "c", "name": "loop back"}]
    assert [n.name for n in build_tree(runs, "a").walk()] == ["a", "b"]
    chain = [{"id": "r0", "parent_run_id": None}] + [
        {"id": f"r{i}", "parent_run_id": f"r{i - 1}"} for i in range(1, 5000)]
    assert len(build_tree(chain, "r0").walk()) == 5000  # no RecursionError on a deep trace
    path = tmp_path / "cycle.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in runs[:3]))
    result = CliRunner().invoke(trace_cmd.app, ["show", str(path), "a"])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("k", [0, -1, 1.5, "3", True, None])
def test_k_below_one_or_not_a_whole_number_is_refused_by_every_retriever(k) -> None:
    with pytest.raises(RunOptionError, match="k must be a whole number >= 1"):
        check_request("Who founded Rome?", k)


@pytest.mark.parametrize("query", ["", "   ", None, "who \udcff"])
def test_base_retrievers_check_the_query(query) -> None:
    with pytest.raises(QuestionError):
        check_request(query, 5)


def test_base_retrievers_refuse_k_zero(tmp_path: Path) -> None:
    from support.tiny_corpus import make_runtime

    from gear_agent.retrieval.search import SearchRetriever

    runtime = make_runtime(tmp_path / "index")
    retriever = SearchRetriever(runtime.store, runtime.encode, "hybrid")
    with pytest.raises(RunOptionError):
        retriever.retrieve("Folsom", 0)
    assert retriever.retrieve("Folsom", 1)


def test_undecodable_arguments_are_refused_in_one_line() -> None:
    assert undecodable_argument(["search", "fine"]) is None
    assert "argument 2 is not valid UTF-8 (byte 0xff)" in undecodable_argument(["search", "x\udcff"])
    result = subprocess.run([sys.executable, "-m", "gear_agent.cli", "search", b"who \xff".decode(
        "utf-8", "surrogateescape")], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and result.stderr.strip().count("\n") == 0
    assert "not valid UTF-8" in result.stderr and "Traceback" not in result.stderr


def test_terminal_escapes_are_stripped_before_printing() -> None:
    hostile = "Paris\x1b[2J\x1b]0;owned\x07\x1b]52;c;ZXZpbA==\x07 is\x9b31m the\x08 capital\r"
    assert printable(hostile) == "Paris is the capital"
    out = io.StringIO()
    SafeConsole(file=out, force_terminal=True, color_system=None).print(hostile, markup=False)
    assert "\x1b" not in out.getvalue() and "Paris is the capital" in out.getvalue()
    assert printable("tab\tand\nnewline stay") == "tab\tand\nnewline stay"


def test_trace_files_are_created_owner_only(tmp_path: Path) -> None:
    from gear_agent.tracing.jsonl_tracer import FILE_NAME, JsonlTracer

    tracer = JsonlTracer(tmp_path)
    from langchain_core.runnables import RunnableLambda

    RunnableLambda(lambda x: x).invoke("hi", config={"callbacks": [tracer]})
    mode = stat.S_IMODE((tmp_path / FILE_NAME).stat().st_mode)
    assert mode == 0o600


# ---- properties: arbitrary bytes and JSON in, a result or the reader's own error out --------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children,
                                                                       max_size=4),
    max_leaves=16,
)
hostile_bytes = st.one_of(
    st.binary(max_size=200),
    st.builds(lambda n, open_: (open_ * n).encode(), st.integers(190, 3000), st.sampled_from(["[", "{\"a\":"])),
    st.builds(lambda n: ("[" + "9" * n + "]").encode(), st.integers(4000, 6000)),
    st.builds(lambda v: json.dumps(v).encode(), json_values),
    st.builds(lambda v, junk: json.dumps(v).encode() + junk, json_values, st.binary(max_size=4)),
)
records = st.lists(
    st.one_of(json_values, st.fixed_dictionaries({"title": json_values, "text": json_values}),
              st.fixed_dictionaries({"id": json_values, "parent_run_id": json_values,
                                     "name": json_values, "outputs": json_values}),
              st.fixed_dictionaries({"id": st.sampled_from(["r", "s"]),
                                     "parent_run_id": st.sampled_from([None, None, "r", "s"]),
                                     "name": json_values, "run_type": json_values,
                                     "inputs": json_values, "outputs": json_values,
                                     "tokens": json_values, "error": json_values,
                                     "start_time": json_values, "end_time": json_values})),
    max_size=6,
)
SLOW_OK = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                           HealthCheck.function_scoped_fixture])


def _only_own_errors(read, path: Path, error: type[GearError]) -> None:
    try:
        read(path)
    except error as exc:
        assert "\n" not in str(exc).strip() or len(str(exc)) < 400


@SLOW_OK
@given(data=hostile_bytes, suffix=st.sampled_from([".json", ".jsonl"]))
def test_corpus_readers_take_any_bytes(tmp_path_factory, data: bytes, suffix: str) -> None:
    path = tmp_path_factory.mktemp("c") / f"corpus{suffix}"
    path.write_bytes(data)
    _only_own_errors(read_corpus, path, CorpusFormatError)


@SLOW_OK
@given(data=st.one_of(hostile_bytes, st.builds(lambda d: json.dumps({"docs": d}).encode(), records)))
def test_openie_reader_takes_any_bytes(tmp_path_factory, data: bytes) -> None:
    path = tmp_path_factory.mktemp("o") / "openie.json"
    path.write_bytes(data)
    _only_own_errors(read_openie, path, CorpusFormatError)


@SLOW_OK
@given(data=st.one_of(hostile_bytes,
                      st.builds(lambda rs: b"\n".join(json.dumps(r).encode() for r in rs), records)))
def test_trace_reader_and_show_take_any_bytes(tmp_path_factory, data: bytes) -> None:
    path = tmp_path_factory.mktemp("t") / "t.jsonl"
    path.write_bytes(data)
    _only_own_errors(read_runs, path, TraceError)
    result = CliRunner().invoke(trace_cmd.app, ["show", str(path)])
    assert result.exit_code in (0, 2), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)


# ---- bounded text ----------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_long_records_are_split_like_folder_input(tmp_path: Path, suffix: str) -> None:
    long_text = " ".join(f"Sentence number {i} says something." for i in range(2000))  # 10,000 words
    records = [{"title": "Huge", "text": long_text, "year": 2020},
               {"title": "Small", "text": "word " * 900}]  # under record_max_words: whole
    path = tmp_path / f"corpus{suffix}"
    path.write_text(json.dumps(records) if suffix == ".json" else
                    "\n".join(json.dumps(r) for r in records))
    passages = read_corpus(path, max_words=200, overlap_words=30, record_max_words=1000)
    huge = [p for p in passages if p.title == "Huge"]
    assert len(huge) > 40 and all(len(p.text.split()) <= 200 for p in huge)
    assert len({p.id for p in huge}) == len(huge)  # one id per chunk
    assert all(p.metadata == {"year": 2020} for p in huge)
    assert [len(p.text.split()) for p in passages if p.title == "Small"] == [900]


def test_dict_items_are_split_beyond_the_record_limit() -> None:
    from gear_agent.ingest.items import passages_from_items

    passages = passages_from_items([{"title": "T", "text": "a b c. " * 400}], 100, 10, 500)
    assert len(passages) > 1 and all(len(p.text.split()) <= 100 for p in passages)


def test_prompts_pack_passages_to_the_budget_and_keep_the_instructions() -> None:
    from gear_agent.prompts import load_prompt, render_passages
    from gear_agent.types import Passage

    passages = [Passage("p1", "Huge", "word " * 50_000), Passage("p2", "Small", "A short fact.")]
    shown = render_passages(passages, max_tokens=1_000)
    assert len(shown) <= 1_000 * 4 + 100
    assert "A short fact." in shown and "[...]" in shown  # the long one is cut, not the short
    prompt = load_prompt("qa").format(question="Q?", passages=shown, conversation="")
    bare = load_prompt("qa").format(question="Q?", passages="", conversation="")
    assert all(line in prompt for line in bare.splitlines())  # every instruction line, whole
    small = [Passage("p1", "A", "one two"), Passage("p2", "B", "three")]
    assert render_passages(small, max_tokens=1_000) == render_passages(small)  # under budget: unchanged
