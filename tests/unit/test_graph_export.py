"""See the graph: the index's entities, triples and passages as GraphML and JSON that
networkx reads back, a neighbourhood, one question's chains, and `gear trace show` chains."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.fakes import scripted
from support.tiny_corpus import CORPUS, build_store, make_runtime, make_settings, pid
from typer.testing import CliRunner

from gear_agent.cli import app
from gear_agent.embedding.hashing import HashingEmbedder
from gear_agent.graph_export import (
    ExportOptions,
    GraphExportError,
    chains_graph,
    entity_neighbourhood,
    entity_node_id,
    index_graph,
)
from gear_agent.registry import make_retriever
from gear_agent.retrieval.records import passage_records
from gear_agent.types import Passage, Triple

nx = pytest.importorskip("networkx", reason="networkx reads the exported graphs back")

TRIPLES = sum(len(triples) for _, triples in CORPUS.values())


def node_link_graph(data: dict) -> nx.MultiDiGraph:
    """networkx's reader of our node-link JSON (edges under "edges") in any networkx 3.x."""
    try:
        return nx.node_link_graph(data, edges="edges")
    except TypeError:  # networkx before 3.4 (the newest on Python 3.10) names it `link`
        return nx.node_link_graph(data, link="edges")


@pytest.fixture
def store(tmp_path: Path):
    store = build_store(tmp_path / "index", HashingEmbedder(64))
    yield store
    store.close()


def read_back(graph, fmt: str, tmp_path: Path):
    path = tmp_path / f"graph.{fmt}"
    path.write_bytes(graph.to_bytes(fmt))
    if fmt == "graphml":
        return nx.read_graphml(path, force_multigraph=True)
    return node_link_graph(json.loads(path.read_text(encoding="utf-8")))


@pytest.mark.parametrize("fmt", ["graphml", "json"])
def test_the_whole_index_reads_back_into_networkx(store, tmp_path: Path, fmt: str) -> None:
    graph = index_graph(store)
    g = read_back(graph, fmt, tmp_path)
    assert isinstance(g, nx.MultiDiGraph)
    counts = graph.counts()
    assert counts["triples"] == TRIPLES and counts["passages"] == len(CORPUS)
    assert g.number_of_nodes() == counts["entities"] + counts["passages"]
    assert g.number_of_edges() == counts["triples"] + counts["mentions"]
    folsom, county = entity_node_id("Folsom"), entity_node_id("Sacramento County")
    assert g.nodes[folsom]["label"] == "Folsom" and g.nodes[folsom]["kind"] == "entity"
    (edge,) = g.get_edge_data(folsom, county).values()
    assert edge["predicate"] == "located in" and edge["passage_id"] == pid("Folsom, California")
    passage = g.nodes[pid("Folsom, California")]
    assert passage["kind"] == "passage" and passage["title"] == "Folsom, California"
    assert g.has_edge(pid("Folsom, California"), folsom)  # the passage mentions the entity
    # "Rainbow Bridge" from two passages is one entity (lower-cased, spaces collapsed)
    bridge = entity_node_id("rainbow  bridge")
    assert g.nodes[bridge]["mentions"] == 5


def test_parallel_triples_stay_apart(tmp_path: Path) -> None:
    from gear_agent.store.embedded.store import EmbeddedStore

    store = EmbeddedStore.open(tmp_path / "ix", HashingEmbedder(16))
    store.passages.add([Passage("p-1", "A", "Ann met Bob. Ann married Bob.", "t")])
    store.triples.add([Triple("t-1", "Ann", "met", "Bob", "p-1"),
                       Triple("t-2", "Ann", "married", "Bob", "p-1")])
    g = read_back(index_graph(store), "graphml", tmp_path)
    edges = g.get_edge_data(entity_node_id("Ann"), entity_node_id("Bob"))
    assert {key: data["predicate"] for key, data in edges.items()} == {"t-1": "met", "t-2": "married"}


def test_text_that_xml_cannot_hold_is_replaced(tmp_path: Path) -> None:
    from gear_agent.store.embedded.store import EmbeddedStore

    store = EmbeddedStore.open(tmp_path / "ix", HashingEmbedder(16))
    store.passages.add([Passage("p-1", "Bell\x07", "A bell\x07 rang <loudly> & long.", "t")])
    store.triples.add([Triple("t-1", "bell\x07", "rang", "<loudly>", "p-1")])
    g = read_back(index_graph(store), "graphml", tmp_path)
    assert g.nodes["p-1"]["text"] == "A bell\ufffd rang <loudly> & long."


def test_options_leave_out_passages_and_text(store, tmp_path: Path) -> None:
    bare = index_graph(store, ExportOptions(passages=False))
    assert bare.counts()["passages"] == 0 and bare.counts()["mentions"] == 0
    short = index_graph(store, ExportOptions(text_chars=10))
    assert short.nodes[pid("Folsom, California")]["text"] == "Folsom is "
    assert "text" not in index_graph(store, ExportOptions(text_chars=0)).nodes[pid("Folsom, California")]


def test_a_neighbourhood_grows_with_hops(store, tmp_path: Path) -> None:
    one = entity_neighbourhood(store, "folsom", hops=1)
    names = {attrs["label"] for attrs in one.nodes.values() if attrs["kind"] == "entity"}
    assert names == {"Folsom", "Rainbow Bridge", "Folsom State Prison", "Sacramento County", "Sacramento"}
    two = entity_neighbourhood(store, "Folsom", hops=2)
    assert "American River" in {a["label"] for a in two.nodes.values()}
    assert one.counts()["triples"] < two.counts()["triples"] <= TRIPLES
    hops = {attrs["label"]: attrs["hop"] for attrs in two.nodes.values() if attrs["kind"] == "entity"}
    assert hops["Folsom"] == 0 and hops["Rainbow Bridge"] == 1 and hops["American River"] == 2
    assert read_back(two, "json", tmp_path).number_of_nodes() == len(two.nodes)


def test_an_unknown_entity_suggests_close_names(store) -> None:
    with pytest.raises(GraphExportError, match="no triple names the entity 'Folsum'.*close: folsom"):
        entity_neighbourhood(store, "Folsum")
    with pytest.raises(GraphExportError, match="at least 1"):
        entity_neighbourhood(store, "Folsom", hops=0)


def test_a_questions_chains(tmp_path: Path) -> None:
    runtime = make_runtime(tmp_path / "index", make_settings())
    ranked = make_retriever("hybrid+naive_ge", runtime).retrieve("Which county is Folsom in?", 4)
    records = passage_records(runtime.store, ranked)
    graph = chains_graph(runtime.store, records)
    chained = [r for r in records if r.chain]
    assert chained and graph.counts()["reached"] == len(chained)
    g = read_back(graph, "graphml", tmp_path)
    for rank, record in enumerate(records, start=1):
        assert g.nodes[record.id]["rank"] == rank
    steps = {data["step"] for *_, data in g.edges(data=True) if data["kind"] == "triple"}
    assert 1 in steps


def test_cytoscape_elements(store) -> None:
    data = json.loads(index_graph(store).to_bytes("cytoscape"))
    nodes, edges = data["elements"]["nodes"], data["elements"]["edges"]
    ids = {n["data"]["id"] for n in nodes}
    assert all(e["data"]["source"] in ids and e["data"]["target"] in ids for e in edges)


def test_gear_graph_export_at_the_cli(store, tmp_path: Path, monkeypatch) -> None:
    index = str(store.root)
    runner = CliRunner()
    out = tmp_path / "whole.graphml"
    result = runner.invoke(app, ["graph", "export", str(out), "--index", index])
    assert result.exit_code == 0, result.output
    assert f"{len(CORPUS)} passages, {TRIPLES} triples" in result.output
    assert nx.read_graphml(out).number_of_nodes() > len(CORPUS)
    near = tmp_path / "near.json"
    result = runner.invoke(app, ["graph", "export", str(near), "--index", index, "--entity",
                                 "Sacramento County", "--no-passages"])
    assert result.exit_code == 0, result.output
    g = node_link_graph(json.loads(near.read_text()))
    assert {d["kind"] for _, d in g.nodes(data=True)} == {"entity"}
    stdout = runner.invoke(app, ["graph", "export", "--format", "json", "--index", index])
    assert stdout.exit_code == 0
    assert json.loads(stdout.stdout)["multigraph"] is True
    bad = runner.invoke(app, ["graph", "export", "--format", "dot", "--index", index])
    assert bad.exit_code == 2 and "unknown --format 'dot'" in bad.output


def test_a_traced_runs_chains_export_and_draw(tmp_path: Path) -> None:
    from gear_agent.agent.graph import build_agent
    from gear_agent.tracing.jsonl_tracer import FILE_NAME, JsonlTracer

    runtime = make_runtime(tmp_path / "index", make_settings())
    replies = [json.dumps({"triples": [["Rainbow Bridge", "located in", "Folsom"]]}),
               json.dumps({"answerable": True, "answer": "Sacramento County", "reason": None}),
               "Sacramento County"]
    agent = build_agent(runtime.settings, index=runtime, chat_model=scripted(replies))
    state = agent.invoke({"question": "In which county is the Rainbow Bridge?"},
                         config={"callbacks": [JsonlTracer(tmp_path / "traces")]})
    trace = tmp_path / "traces" / FILE_NAME
    runtime.store.close()
    out = tmp_path / "chains.graphml"
    result = CliRunner().invoke(app, ["graph", "export", str(out), "--trace", str(trace),
                                      "--index", str(tmp_path / "index")], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    g = nx.read_graphml(out, force_multigraph=True)
    ranked = {d["rank"]: n for n, d in g.nodes(data=True) if "rank" in d}
    assert [ranked[r] for r in sorted(ranked)] == [p["id"] for p in state["passages"]]
    drawn = CliRunner().invoke(app, ["trace", "show", str(trace), "--chains"], env={"COLUMNS": "200"})
    assert drawn.exit_code == 0, drawn.output
    lines = drawn.output.splitlines()
    assert lines[0].startswith("chains")
    first = state["passages"][0]
    assert first["chain"], "the fake corpus reaches its first passage by a chain"
    triple = "(" + "; ".join(first["chain"][0]) + ")"
    at = next(i for i, line in enumerate(lines) if triple in line)
    assert any(f"#1 {first['title']}" in line for line in lines[at:])
