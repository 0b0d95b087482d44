"""The fused expansion list is exactly the RRF of its two parts."""

from pathlib import Path

import pytest
from support.fakes import CountingEmbedder

from gear_agent.config import GearSettings
from gear_agent.expansion.fused import FusedExpansionRetriever
from gear_agent.indexing import IndexReport, add_passages, import_openie
from gear_agent.ingest.corpus import read_corpus
from gear_agent.open_index import OpenIndex
from gear_agent.parts import index_parts
from gear_agent.registry import make_retriever
from gear_agent.retrieval.fusion import rrf
from gear_agent.retrieval.search import QueryEncoder
from gear_agent.store.embedded.store import EmbeddedStore

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo"


@pytest.fixture
def runtime(tmp_path):
    embedder = CountingEmbedder()
    store = EmbeddedStore.open(tmp_path / "ix", embedder)
    report = IndexReport()
    add_passages(store, read_corpus(DEMO / "corpus.json"), report)
    import_openie(store, DEMO / "openie.json", report)
    return OpenIndex(GearSettings(index_dir=tmp_path / "ix"), embedder, store, QueryEncoder(embedder))


@pytest.mark.parametrize("question", [
    "Who founded the observatory where Marela Voss worked?",
    "Who designed the dome of the planetarium directed by the co-discoverer of comet Hallin-Voss?",
])
def test_fused_list_is_the_rrf_of_its_parts(runtime, question):
    fused = make_retriever("hybrid+naive_ge+ppr", runtime)
    assert isinstance(fused, FusedExpansionRetriever) and fused.name == "hybrid+naive_ge+ppr"
    naive, ppr = fused.parts(question, 10)
    assert naive and ppr
    expected = rrf([[p.id for p in ppr], [p.id for p in naive]], k=60)[:10]
    got = fused.retrieve(question, 10)
    assert [(p.id, pytest.approx(p.score)) for p in got] == [(i, pytest.approx(s)) for i, s in expected]
    # parts equal the standalone retrievers' lists
    assert [p.id for p in naive] == [p.id for p in make_retriever("hybrid+naive_ge", runtime).retrieve(question, 10)]
    assert [p.id for p in ppr] == [p.id for p in make_retriever("ppr", runtime).retrieve(question, 10)]


def test_agent_expansion_both_is_the_rrf_of_beam_and_ppr(runtime):
    from gear_agent.agent import _steps as steps

    start = [t.id for t in runtime.store.triples.iterate()][:3]
    question = "Who founded the observatory where Marela Voss worked?"
    beam = steps.beam_expand(index_parts(runtime), runtime.settings, question, start)
    ppr = steps.ppr_expand(index_parts(runtime), question, start, runtime.settings.base_k)
    both = steps.expand(index_parts(runtime), runtime.settings, question, start, "both")
    assert [p.id for p in both] == [i for i, _ in rrf([[p.id for p in beam], [p.id for p in ppr]])]
