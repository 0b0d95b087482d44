"""Every setting's default is written once, in its section of ``gear_agent/config.py``:
a signature that takes a setting defaults to None and reads the section's default."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from support.fakes import client, scripted
from support.tiny_corpus import make_runtime, make_settings

import gear_agent
from gear_agent.agent.gear_retriever import GearRetriever
from gear_agent.agent.syncge import SyncGERetriever
from gear_agent.config import GearSettings, RetrievalSettings, SiReRAGSettings
from gear_agent.parts import index_parts
from gear_agent.retrieval.fusion import rrf, rrf_constant

PACKAGE = Path(gear_agent.__file__).parent
NOT_DEFAULTS = {("Store", "backend"), ("EmbeddedStore", "backend"), ("ElasticsearchStore", "backend")}
"""Class attributes named like a setting that name what a class is, not a default."""


def literal_defaults(tree: ast.AST) -> list[tuple[int, str, str]]:
    """``(line, owner, name)`` of each parameter or class field named like a setting whose
    default is a literal other than None."""
    fields = set(GearSettings.model_fields)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args
            positional = args.posonlyargs + args.args
            pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
            pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
            found += [(node.lineno, node.name, a.arg) for a, d in pairs
                      if a.arg in fields and isinstance(d, ast.Constant) and d.value is not None]
        elif isinstance(node, ast.ClassDef):
            found += [(st.lineno, node.name, st.target.id) for st in node.body
                      if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name)
                      and st.target.id in fields and isinstance(st.value, ast.Constant)
                      and st.value.value is not None and (node.name, st.target.id) not in NOT_DEFAULTS]
    return found


def test_no_signature_repeats_a_settings_default() -> None:
    repeated = [f"{path.relative_to(PACKAGE.parent)}:{line} {owner}({name}=...)"
                for path in sorted(PACKAGE.rglob("*.py")) if path.name != "config.py"
                for line, owner, name in literal_defaults(ast.parse(path.read_text(encoding="utf-8")))]
    assert repeated == [], "defaults written outside gear_agent/config.py (default to None, read the section)"


def test_the_scan_sees_a_repeated_default() -> None:
    tree = ast.parse("def f(x, rrf_k: int = 60, *, base_k=15, top_k=None): ...")
    assert [name for _, _, name in literal_defaults(tree)] == ["rrf_k", "base_k"]


def test_none_means_the_sections_default() -> None:
    assert rrf_constant() == RetrievalSettings().rrf_k == 60
    assert rrf([["a"]]) == rrf([["a"]], k=60)
    assert SiReRAGSettings.default_of("sirerag_min_propositions") == SiReRAGSettings().sirerag_min_propositions


@pytest.fixture
def runtime(tmp_path: Path):
    return make_runtime(tmp_path / "index")


def test_the_retrievers_expand_as_the_settings_say_unless_told(runtime) -> None:
    parts, llm = index_parts(runtime), client(scripted([]))
    ppr = make_settings(expansion=GearSettings.default_of("expansion"))
    syncge = SyncGERetriever(parts, llm, settings=ppr)
    assert (syncge.expansion, syncge.name) == ("ppr", "syncge-ppr")
    beam = make_settings(expansion="beam")
    assert (SyncGERetriever(parts, llm, settings=beam).name, GearRetriever(parts, llm, settings=beam).name) == (
        "syncge", "gear")
    told = GearRetriever(parts, llm, "both", settings=ppr)
    assert (told.expansion, told.name) == ("both", "gear-fused")
