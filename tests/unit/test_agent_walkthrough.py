"""The paper's appendix C walk-through (Table 6), replayed on a small 2-hop corpus.

Table 6 shows, per iteration, the query, the reader's proximal triples, the gist
memory, the reasoner's verdict and the rewritten query. The scripted replies below
have the same structure; after iteration 1 the agent's memory and next query must
be the table's.
"""

from __future__ import annotations

import json
from pathlib import Path

from support.fakes import client, scripted
from support.tiny_corpus import QUESTION, make_runtime, pid

from gear_agent.agent.graph import build_graph
from gear_agent.parts import index_parts

TABLE = [
    {  # iteration 1
        "query": QUESTION,
        "proximal": [
            ["Rainbow Bridge", "spans", "American River"],
            ["Rainbow Bridge", "located in", "Folsom"],
        ],
        "reasoner": {"answerable": False, "answer": None, "reason": "the county where Folsom is"},
        "next_query": "county of Folsom, California",
    },
    {  # iteration 2
        "query": "county of Folsom, California",
        "proximal": [["Folsom", "located in", "Sacramento County"]],
        "reasoner": {"answerable": True, "answer": "Sacramento County", "reason": None},
    },
]


def replies() -> list[str]:
    first, second = TABLE
    return [
        json.dumps({"triples": first["proximal"]}),
        json.dumps(first["reasoner"]),
        f"Query: {first['next_query']}",
        json.dumps({"triples": second["proximal"]}),
        json.dumps(second["reasoner"]),
        "Sacramento County",
    ]


def test_table6_walkthrough(tmp_path: Path) -> None:
    runtime = make_runtime(tmp_path / "index")
    model = scripted(replies())
    agent = build_graph(index_parts(runtime), client(model), runtime.settings).compile()
    states = list(agent.stream({"question": QUESTION}, stream_mode="values"))

    # The state just after iteration 1's rewrite: the table's memory and next query.
    after_rewrite = [s for s in states if s.get("iteration") == 2 and "base" in s]
    first = after_rewrite[0]
    assert first["gist_memory"] == TABLE[0]["proximal"]
    assert first["query"] == TABLE[0]["next_query"]
    assert first["queries"] == [TABLE[0]["query"], TABLE[1]["query"]]
    assert first["reason"] == TABLE[0]["reasoner"]["reason"]
    assert len(first["retrieved"]) == 1

    final = states[-1]
    assert final["gist_memory"] == TABLE[0]["proximal"] + TABLE[1]["proximal"]
    assert final["stop_reason"] == "answerable"
    assert final["iterations"] == 2
    assert final["answer"] == "Sacramento County"
    assert len(final["retrieved"]) == 2
    gold = {pid("Rainbow Bridge (Folsom)"), pid("Folsom, California")}
    assert {p["id"] for p in final["passages"][:2]} == gold

    # What each prompt was shown: the reason in the rewriter, the memory in the second read.
    read_1, reason_1, rewrite_1, read_2, reason_2, qa = model.prompts
    assert "the county where Folsom is" in rewrite_1
    assert '["Rainbow Bridge", "located in", "Folsom"]' in read_2
    assert "Folsom is a city in Sacramento County" in read_2  # hop-2 passage found by the new query
    assert '["Folsom", "located in", "Sacramento County"]' in reason_2
    assert "Folsom, California" in qa
