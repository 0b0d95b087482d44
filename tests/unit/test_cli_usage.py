"""The command line a newcomer expects: -h, --version, typed help, every retriever listed,
bad arguments in one line, and checks that answer before any model loads."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.cli import one_line_error, run_cli
from support.tiny_corpus import build_store

from gear_agent.cli.search_cmd import describe_score
from gear_agent.config import GearSettings
from gear_agent.embedding import embedder_name, make_embedder
from gear_agent.embedding.hashing import HashingEmbedder
from gear_agent.registry import RETRIEVERS
from gear_agent.types import Passage

COMMANDS = [["index"], ["info"], ["delete"], ["search"], ["eval"], ["retrievers"], ["serve"],
            ["trace"], ["trace", "show"], ["trace", "list"], ["graph"], ["graph", "export"]]


run = run_cli


@pytest.fixture
def no_model(monkeypatch):
    """Fail the test if anything loads an embedding model or opens a runtime."""

    def refuse(*args, **kwargs):
        raise AssertionError("a model was loaded before the checks")

    monkeypatch.setattr("gear_agent.embedding.make_embedder", refuse)
    monkeypatch.setattr("gear_agent.open_index.OpenIndex.open", refuse)


@pytest.fixture
def hashing_index(tmp_path: Path, monkeypatch) -> Path:
    """The tiny two-hop corpus with its triples, embedded by the model-free hashing-64."""
    monkeypatch.setenv("GEAR_EMBEDDING_MODEL", "hashing-64")
    build_store(tmp_path / "index", HashingEmbedder(64)).close()
    return tmp_path / "index"


@pytest.mark.parametrize("flag", ["-h", "--help"])
def test_help_lists_the_commands(flag: str) -> None:
    result = run(flag)
    assert result.exit_code == 0, result.output
    for command in ("index", "info", "search", "eval", "retrievers", "trace", "graph"):
        assert command in result.output


def test_version() -> None:
    result = run("--version")
    assert result.exit_code == 0
    assert re.fullmatch(r"gear-agent \S+\n", result.output)


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_help_is_typed_without_bool(command: list[str]) -> None:
    result = run(*command, "-h")
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.output
    assert "--help" in result.output and "-h" in result.output


@pytest.mark.parametrize("command", [["search"], ["eval"]])
def test_where_a_retriever_is_chosen_every_name_is_listed(command: list[str]) -> None:
    text = " ".join(run(*command, "-h").output.split())
    for name in RETRIEVERS:
        assert re.search(rf"(?<![\w+-]){re.escape(name)}(?![\w+-])", text), name


@pytest.mark.parametrize("value", ["0", "-5"])
def test_k_below_one_is_refused_in_one_line(value: str, no_model) -> None:
    line = one_line_error(run("search", "a question", "--k", value))
    assert "--k" in line and "search -h" in line


@pytest.mark.parametrize(
    ("args", "expected"),
    [(["serch", "x"], "No such command 'serch'"), (["search"], "uestion"),
     (["search", "x", "--bogus"], "No such option: --bogus"),
     (["eval", "--questions", "q", "--corpus", "c", "--limit", "0"], "--limit"),
     (["graph", "export", "--hops", "0"], "--hops")],
)
def test_usage_errors_are_one_line(args: list[str], expected: str, no_model) -> None:
    assert expected in one_line_error(run(*args)).replace("QUESTION", "question")


def test_a_missing_index_is_named_before_any_model_loads(tmp_path: Path, no_model) -> None:
    for args in (["search", "x"], ["delete", "p-1"], ["graph", "export"], ["info"]):
        line = one_line_error(run(*args, "--index", str(tmp_path / "none")))
        assert "no index at" in line and "gear index" in line, args


def test_another_model_is_named_before_any_model_loads(hashing_index: Path, no_model) -> None:
    line = one_line_error(run("search", "x", "--index", str(hashing_index),
                              env={"GEAR_EMBEDDING_MODEL": "all-MiniLM-L6-v2"}))
    assert "built with embedding model 'hashing-64'" in line
    assert "GEAR_EMBEDDING_MODEL=hashing-64" in line


def test_a_missing_llm_is_named_before_any_model_loads(hashing_index: Path, no_model, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("GEAR_LLM_MODEL", "gpt-4o-mini")
    line = one_line_error(run("search", "x", "--retriever", "syncge", "--index", str(hashing_index)))
    assert "OPENAI_API_KEY" in line


def test_eval_of_an_llm_retriever_without_an_llm_is_one_line(tmp_path: Path, no_model, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("GEAR_LLM_MODEL", "gpt-4o-mini")
    line = one_line_error(run("eval", "--questions", str(tmp_path / "q.json"), "--corpus",
                              str(tmp_path / "c.json"), "--retrievers", "hipporag,hipporag+ner"))
    assert "OPENAI_API_KEY" in line


def test_search_names_the_score_kind(hashing_index: Path) -> None:
    result = run("search", "Which county is Folsom in?", "--index", str(hashing_index), "--k", "2",
                 "--retriever", "hybrid+naive_ge")
    assert result.exit_code == 0, result.output
    assert re.search(r"^1\. .*RRF 0\.\d{4} = \d\.\d\d× a first place · p-", result.output, re.M)
    dense = run("search", "Folsom", "--index", str(hashing_index), "--retriever", "dense")
    assert re.search(r"^1\. .*cosine -?\d\.\d{3} · p-", dense.output, re.M), dense.output


def test_describe_score() -> None:
    assert describe_score("rrf", 1 / 61) == "RRF 0.0164 = 1.00× a first place"
    assert describe_score("cosine", 0.71234) == "cosine 0.712"
    assert describe_score("bm25", 12.345) == "BM25 12.35"
    assert describe_score("ppr", 0.05) == "PPR 5.00%"
    assert {spec.score for spec in RETRIEVERS.values()} <= {"rrf", "cosine", "bm25", "ppr"}
    assert RETRIEVERS["dense"].score == "cosine" and RETRIEVERS["ppr"].score == "ppr"


def test_the_table_knows_the_base_modes() -> None:
    from gear_agent.registry import BASE_MODES as TABLE_MODES
    from gear_agent.retrieval.search import BASE_MODES

    assert TABLE_MODES == BASE_MODES


@pytest.mark.parametrize("model", ["hashing-64", "all-MiniLM-L6-v2",
                                   "sentence-transformers/all-MiniLM-L6-v2", "my/local-model"])
def test_embedder_name_matches_the_embedder_without_loading(model: str) -> None:
    settings = GearSettings(embedding_model=model)
    if model == "hashing-64":
        assert embedder_name(settings) == make_embedder(settings).name
    else:
        from gear_agent.embedding.sentence_transformer import canonical_model_name

        assert embedder_name(settings) == canonical_model_name(model)


def text_only_index(tmp_path: Path) -> Path:
    from gear_agent.store.embedded.store import EmbeddedStore

    store = EmbeddedStore.open(tmp_path / "text-only", HashingEmbedder(64))
    store.passages.add([Passage("p-a", "Folsom", "Folsom is a city in Sacramento County.", "t"),
                        Passage("p-b", "Bridge", "The Rainbow Bridge is in Folsom.", "t")])
    store.close()
    return tmp_path / "text-only"


def test_info_gives_hints(tmp_path: Path, monkeypatch, no_model) -> None:
    monkeypatch.setenv("GEAR_EMBEDDING_MODEL", "hashing-64")
    result = run("info", "--index", str(text_only_index(tmp_path)))
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "hint: passages not yet extracted: 2 (run `gear index CORPUS --extract`" in text
    assert "hint: no triples: graph retrievers need them" in text
    assert 'next: gear search "your question"' in text
    other = run("info", "--index", str(tmp_path / "text-only"), env={"GEAR_EMBEDDING_MODEL": "hashing-32"})
    assert "set GEAR_EMBEDDING_MODEL=hashing-64 to search this index" in " ".join(other.output.split())


def test_a_retriever_that_needs_triples_warns_on_a_text_only_index(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("GEAR_EMBEDDING_MODEL", "hashing-64")
    index = text_only_index(tmp_path)
    result = run("search", "Where is the Rainbow Bridge?", "--index", str(index))
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.output.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "ppr walks triples" in warnings[0]  # the default
    assert "index has none" in warnings[0]
    plain = run("search", "Where is the Rainbow Bridge?", "--index", str(index), "--retriever", "hybrid")
    assert plain.exit_code == 0 and "warning:" not in plain.output


def test_delete_needs_no_model(hashing_index: Path, no_model) -> None:
    from support.tiny_corpus import pid

    result = run("delete", pid("Placer County"), "--index", str(hashing_index))
    assert result.exit_code == 0, result.output
    assert "deleted 1 passages" in result.output
