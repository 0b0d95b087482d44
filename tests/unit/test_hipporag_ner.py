"""``hipporag+ner``: HippoRAG 1's query NER step with a scripted LLM on the tiny corpus.

The reply's entities become the query nodes (each linked to its nearest phrase by cosine,
weighted by node specificity), the ranking is the phrase walk from them against a direct
linear solve, and a reply that names nothing or cannot be read falls back to ``hipporag``'s
LLM-free linking.
"""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest
from support.fakes import ScriptedChatModel, client, scripted
from support.tiny_corpus import QUESTION, build_store, pid
from test_ppr import _direct_ppr

from gear_agent.config import GearSettings
from gear_agent.embedding.hashing import HashingEmbedder
from gear_agent.expansion.hipporag import HippoRAGRetriever
from gear_agent.expansion.hipporag_ner import HippoRAGNERRetriever, link_entities, make_query_ner
from gear_agent.expansion.ppr import PPRRetriever
from gear_agent.filters import parse_where
from gear_agent.llm import LLMCallError, LLMClient, LLMDeadlineError
from gear_agent.parsing import ParseError, parse_entities_reply
from gear_agent.retrieval.search import QueryEncoder

NER_PROMPT = "You find the named entities in a question"


def _entities(*names: str) -> str:
    return json.dumps({"named_entities": list(names)})


@pytest.fixture(scope="module")
def ppr(tmp_path_factory: pytest.TempPathFactory) -> PPRRetriever:
    """The tiny corpus's PPR retriever (exact walk), stand-in embedder hashing-384."""
    embedder = HashingEmbedder(384)
    store = build_store(tmp_path_factory.mktemp("ner") / "index", embedder)
    settings = GearSettings(ppr_method="global")
    return PPRRetriever(store, QueryEncoder(embedder), settings, graph_path=None)


def _retriever(ppr: PPRRetriever, model: ScriptedChatModel) -> HippoRAGNERRetriever:
    return HippoRAGNERRetriever(ppr, make_query_ner(client(model)), ppr.settings)


def test_the_replys_entities_are_the_seeds_weighted_by_specificity(ppr: PPRRetriever) -> None:
    model = scripted([_entities("Rainbow Bridge", "american  RIVER", "Rainbow Bridge")])
    retriever = _retriever(ppr, model)
    seeds, mass = retriever.query_nodes(QUESTION, ppr.encode(QUESTION))
    graph = ppr.graph
    assert len(model.calls) == 1 and model.calls[0].startswith(NER_PROMPT)
    assert f"Question: {QUESTION}" in model.calls[0]
    # normalised as phrase nodes are, each linked to itself (cosine 1), duplicates once
    assert seeds.tolist() == [graph.phrase_vertex("rainbow bridge"),
                              graph.phrase_vertex("american river")]
    # node specificity: Rainbow Bridge is in 2 passages, American River in 3 (Placer County too)
    sizes = np.array([graph.specificity("rainbow bridge"), graph.specificity("american river")])
    assert sizes.tolist() == [2, 3]
    np.testing.assert_allclose(mass, (1 / sizes) / (1 / sizes).sum())


def test_an_entity_links_to_its_nearest_phrase_by_cosine(ppr: PPRRetriever) -> None:
    graph = ppr.graph
    names = ["the rainbow bridge arch", "folsom prison", "sacramento"]
    vectors = ppr.encode.embedder.embed(names)
    vertices, cosines = link_entities(graph, vectors)
    phrase_rows = graph.phrase_rows()
    direct = graph.phrase_vectors() @ vectors.T  # every phrase against every entity
    expected = list(dict.fromkeys(int(phrase_rows[np.argmax(direct[:, i])]) for i in range(3)))
    assert vertices.tolist() == expected
    np.testing.assert_allclose(cosines, direct.max(axis=0)[: len(expected)], rtol=1e-6)


@pytest.mark.parametrize("method", ["global", "local"])
def test_the_ranking_is_the_phrase_walk_from_the_entities(ppr: PPRRetriever, method: str) -> None:
    settings = GearSettings(ppr_method=method, ppr_tolerance=1e-13)
    model = scripted([_entities("Rainbow Bridge", "American River")])
    retriever = HippoRAGNERRetriever(ppr, make_query_ner(client(model)), settings)
    ranked = retriever.retrieve(QUESTION, k=8)
    graph = ppr.graph
    names = graph.node_names()
    phrase_edges = [(names.index(a), names.index(b), w)
                    for a, b, _, _, contains, w in graph.edge_kinds() if not contains]
    seeds = [graph.phrase_vertex("rainbow bridge"), graph.phrase_vertex("american river")]
    reset = np.zeros(graph.n_vertices)
    reset[seeds] = [1 / 2, 1 / 3]  # s_i = 1 / |P_i|: in 2 and 3 passages
    p = _direct_ppr(graph.n_vertices, phrase_edges, reset, 0.5)
    expected: dict[str, float] = {}
    for a, b, _, _, contains, _ in graph.edge_kinds():
        if contains:
            passage, phrase = (a, b) if graph.passage_vertex(a) is not None else (b, a)
            expected[passage] = expected.get(passage, 0.0) + p[names.index(phrase)]
    reached = [i for i, score in sorted(expected.items(), key=lambda kv: -kv[1]) if score > 0]
    assert [r.id for r in ranked[: len(reached)]] == reached  # best first, as the direct solve
    for r in ranked:
        assert r.score == pytest.approx(expected.get(r.id, 0.0), abs=1e-9)
    assert ranked[0].id == pid("Rainbow Bridge (Folsom)")  # it holds both linked phrases


@pytest.mark.parametrize(
    "reply", ["I could not find any entities.", '{"answer": "Folsom"}', "[[1, 2]]"]
)
def test_an_unreadable_reply_falls_back_to_hipporag_with_one_warning(
    ppr: PPRRetriever, reply: str, caplog: pytest.LogCaptureFixture
) -> None:
    retriever = _retriever(ppr, scripted([reply]))
    with caplog.at_level(logging.WARNING, logger="gear_agent.expansion.hipporag_ner"):
        ranked = retriever.retrieve(QUESTION, k=5)
    llm_free = HippoRAGRetriever(ppr, ppr.settings).retrieve(QUESTION, k=5)
    assert ranked == llm_free
    [record] = caplog.records
    message = record.getMessage()
    assert "\n" not in message and message.startswith("hipporag+ner: unreadable NER reply")
    assert "reply starts" in message


@pytest.mark.parametrize("reply", ['{"named_entities": []}', "[]", "Entities: []"])
def test_no_entities_fall_back_to_hipporag_quietly(
    ppr: PPRRetriever, reply: str, caplog: pytest.LogCaptureFixture
) -> None:
    retriever = _retriever(ppr, scripted([reply]))
    with caplog.at_level(logging.WARNING, logger="gear_agent.expansion.hipporag_ner"):
        ranked = retriever.retrieve(QUESTION, k=5)
    assert ranked == HippoRAGRetriever(ppr, ppr.settings).retrieve(QUESTION, k=5)
    assert not caplog.records


def test_a_filter_keeps_passing_passages_and_asks_the_model_once(ppr: PPRRetriever) -> None:
    model = scripted([_entities("Rainbow Bridge")])
    keep = [pid("Placer County"), pid("Folsom State Prison")]
    where = parse_where({"id": {"$in": keep}})
    ranked = _retriever(ppr, model).retrieve(QUESTION, k=2, where=where)
    assert sorted(r.id for r in ranked) == sorted(keep)
    assert len(model.calls) == 1  # the filter widens the ranking, not the NER


def test_a_failed_call_fails_the_query_after_the_clients_retries(ppr: PPRRetriever) -> None:
    model = scripted([TimeoutError("slow"), TimeoutError("slow"), TimeoutError("slow")])
    with pytest.raises(LLMCallError, match="hipporag_ner"):
        _retriever(ppr, model).retrieve(QUESTION, k=3)
    assert len(model.calls) == 3  # max_retries=2


def test_the_deadline_applies_to_the_ner_call() -> None:
    times = iter([0.0, 10.0])
    model = scripted([_entities("Folsom")])
    ner = make_query_ner(LLMClient(model, clock=lambda: next(times)), deadline_s=5.0)
    with pytest.raises(LLMDeadlineError):
        ner(QUESTION)
    assert not model.calls


@pytest.mark.parametrize(
    ("reply", "names"),
    [('{"named_entities": ["Folsom", "Sacramento County"]}', ["Folsom", "Sacramento County"]),
     ('Sure:\n```json\n{"Entities": [{"name": "Folsom"}, "Folsom"]}\n```', ["Folsom"]),
     ('["Folsom", "American River"]', ["Folsom", "American River"]),
     ('{"named_entities": ["Folsom", "Ameri', ["Folsom"]),  # cut off at the token cap
     ('{"named_entities": []}', [])],
)
def test_entity_replies_are_read(reply: str, names: list[str]) -> None:
    assert parse_entities_reply(reply) == names


@pytest.mark.parametrize(
    ("reply", "message"),
    [("Folsom and Sacramento", "no JSON"), ('{"answer": "x"}', "no 'named_entities' key"),
     ('{"named_entities": [[1], {}]}', "no entity names")],
)
def test_unreadable_entity_replies_are_one_parse_error(reply: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        parse_entities_reply(reply)
