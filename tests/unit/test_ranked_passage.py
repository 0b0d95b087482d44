"""One ranked-passage shape: ``RankedPassage`` in the state (its dict form, the chain as
triple ids) and the record at the edges, made by one function and read back with no store read."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.tiny_corpus import make_runtime, make_settings

from gear_agent.registry import make_retriever
from gear_agent.retrieval.base import RankedPassage
from gear_agent.retrieval.records import PassageRecord, cite, passage_records
from gear_agent.types import Triple


def test_the_state_form_round_trips() -> None:
    passage = RankedPassage("p-1", 0.25, ("t-1", "t-2"), "seeds")
    assert RankedPassage.from_dict(passage.to_dict()) == passage


def test_a_record_reads_back_from_its_dict_without_the_store(tmp_path: Path) -> None:
    runtime = make_runtime(tmp_path / "index", make_settings())
    ranked = make_retriever("hybrid+naive_ge", runtime).retrieve("Which county is Folsom in?", 4)
    records = passage_records(runtime.store, ranked)
    dicts = [r.to_dict() for r in records]
    assert any(d["chain"] for d in dicts)
    runtime.store.close()  # nothing below reads it
    assert [PassageRecord.from_dict(d) for d in dicts] == records


def test_a_record_dict_is_refused_as_a_ranked_passage() -> None:
    record = {"id": "p-1", "score": 1.0, "chain": [["Folsom", "in", "Sacramento County"]]}
    with pytest.raises(TypeError, match="PassageRecord.from_dict"):
        RankedPassage.from_dict(record)


def test_citations_join_their_passages_by_number() -> None:
    a = PassageRecord("p-a", "A", "Alpha.", 0.5, source="docs/a.pdf", metadata={"page": 2})
    b = PassageRecord("p-b", "B", "Beta.", 0.4)
    cited = cite([{"passage_id": "p-b", "quote": None}, {"passage_id": "p-a", "quote": "Alpha"},
                  {"passage_id": "p-gone"}], [a, b])
    assert [(c.number, c.passage.id, c.quote) for c in cited] == [(1, "p-b", None), (2, "p-a", "Alpha")]
    assert cited[1].location == "a.pdf, p. 2" == cited[1].to_dict()["location"]


def test_a_citation_dict_is_its_records_dict_with_number_and_quote() -> None:
    record = PassageRecord("p-a", "A", "Alpha.", 0.5, (Triple("t-1", "A", "is", "Alpha", "p-a"),),
                           source="docs/a.pdf", metadata={"page": 2})
    [cited] = cite([{"passage_id": "p-a", "quote": "Alpha"}], [record])
    fields = record.to_dict()
    assert cited.to_dict() == {"number": 1, "passage_id": "p-a", "quote": "Alpha",
                               **{k: fields[k] for k in ("title", "location", "source", "text", "chain")}}
