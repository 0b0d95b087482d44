"""One ranked-passage shape: ``RankedPassage`` in the state (its dict form) and the record
dict at the edges, read back by one reader."""

from __future__ import annotations

from pathlib import Path

from support.tiny_corpus import make_runtime, make_settings

from gear_agent.registry import make_retriever
from gear_agent.retrieval.base import RankedPassage
from gear_agent.retrieval.records import passage_records, records_from_dicts


def test_the_state_form_round_trips() -> None:
    passage = RankedPassage("p-1", 0.25, ("t-1", "t-2"))
    assert RankedPassage.from_dict(passage.to_dict()) == passage


def test_a_record_dict_reads_back_by_its_chain_ids(tmp_path: Path) -> None:
    runtime = make_runtime(tmp_path / "index", make_settings())
    ranked = make_retriever("hybrid+naive_ge", runtime).retrieve("Which county is Folsom in?", 4)
    records = passage_records(runtime.store, ranked)
    dicts = [r.to_dict() for r in records]
    assert any(d["chain"] for d in dicts)
    assert [RankedPassage.from_dict(d) for d in dicts] == ranked
    assert records_from_dicts(runtime.store, dicts) == records


def test_a_record_dict_without_chain_ids_never_takes_triples_for_ids() -> None:
    old = {"id": "p-1", "score": 1.0, "chain": [["Folsom", "in", "Sacramento County"]]}
    assert RankedPassage.from_dict(old) == RankedPassage("p-1", 1.0, ())
