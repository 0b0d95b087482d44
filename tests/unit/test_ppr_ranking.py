"""``ppr``'s ranking beyond HippoRAG 2: title edges, sharpened passage weights, the query's
names as seeds; checked against a direct linear solve of the same restart vector, and the
agent's expansion kept on HippoRAG 2's walk.

The direct solve: ``p = (1 - d) (I - d M)^-1 r`` with ``M`` the column-normalised adjacency
(graph edges plus title edges) and ``r`` the restart vector built by hand.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gear_agent.config import PPRSettings
from gear_agent.embedding.hashing import HashingEmbedder
from gear_agent.expansion._query_entities import capitalised_spans, query_entity_vertices
from gear_agent.expansion.ppr import (
    PPRRetriever,
    add_query_entities,
    passage_mass,
    ppr_expand,
    seed_phrase_mass,
)
from gear_agent.expansion.ppr_graph import PPRGraph
from gear_agent.expansion.ppr_walk import title_pairs, walk_of
from gear_agent.ids import passage_id, triple_id
from gear_agent.retrieval.search import QueryEncoder
from gear_agent.store.embedded.store import EmbeddedStore
from gear_agent.types import Passage, Triple

# A bridge question's two hops: the album's passage names its singer by a short name; the
# singer's own passage spells the name out in full and is titled by the short one.
DOCS = {
    "Transfiguration of Vincent": (
        "Transfiguration of Vincent is the third studio album by M. Ward.",
        [("Transfiguration of Vincent", "album by", "M. Ward"),
         ("Transfiguration of Vincent", "is", "third studio album")],
    ),
    "M. Ward": (
        "Matthew Stephen Ward is a singer-songwriter from Portland, Oregon.",
        [("Matthew Stephen Ward", "is", "singer-songwriter"),
         ("Matthew Stephen Ward", "from", "Portland, Oregon")],
    ),
    "Portland Trail Blazers": (
        "The Portland Trail Blazers are a basketball team from Portland, Oregon.",
        [("Portland Trail Blazers", "based in", "Portland, Oregon")],
    ),
    "Third studio album": (
        "A third studio album follows a second one.",
        [("third studio album", "follows", "second studio album")],
    ),
}
QUERY = "Transfiguration of Vincent is the third studio album by a singer from what state?"


def _corpus(tmp_path: Path) -> tuple[EmbeddedStore, PPRGraph, dict[str, Passage]]:
    embedder = HashingEmbedder(64)
    store = EmbeddedStore.open(tmp_path / "index", embedder)
    passages = {title: Passage(passage_id(title, text), title, text)
                for title, (text, _) in DOCS.items()}
    store.passages.add(list(passages.values()))
    store.triples.add([
        Triple(triple_id(passages[title].id, *t), *t, passages[title].id)
        for title, (_, triples) in DOCS.items() for t in triples
    ])
    return store, PPRGraph.build(store, embedder), passages


# ---- the query's names -------------------------------------------------------------------


def test_capitalised_spans_join_connectors_and_skip_the_sentence_start() -> None:
    words = "Which city hosted the Duke of Edinburgh in 1999 and then Paris".split()
    assert [" ".join(words[a:b]) for a, b in capitalised_spans(words)] == [
        "Duke of Edinburgh in 1999", "Paris"]  # the longest match splits a joined span
    words = "New York is big".split()  # two capitalised words at the start are a name
    assert [" ".join(words[a:b]) for a, b in capitalised_spans(words)] == ["New York"]


def test_longest_match_keeps_punctuation_and_does_not_match_inside() -> None:
    names = {"m. ward": 1, "ward": 2, "l'amour": 3, "haymo of faversham": 4, "haymo": 5,
             "1999": 6}
    found = query_entity_vertices(
        "Did M. Ward play at L'Amour before Haymo of Faversham's day in 1999?", names.get)
    assert found == [1, 3, 4, 6]
    assert query_entity_vertices("Was Haymo of Faversham in 1999 there?", names.get) == [4, 6]
    assert query_entity_vertices("nothing named here", names.get) == []


def test_query_names_add_mass_over_specificity(tmp_path: Path) -> None:
    store, graph, _ = _corpus(tmp_path)
    oregon = graph.phrase_vertex("Portland, Oregon")
    assert graph.vertex_specificity()[oregon] == 2
    merged = add_query_entities(graph, "Who lives in Portland, Oregon?", {oregon: 0.1}, 0.5)
    assert merged[oregon] == pytest.approx(0.1 + 0.5 / 2)


# ---- title edges ---------------------------------------------------------------------------


def test_title_edges_join_a_passage_to_the_phrase_its_title_names(tmp_path: Path) -> None:
    store, graph, passages = _corpus(tmp_path)
    pairs = set(zip(*(a.tolist() for a in title_pairs(graph, store))))
    assert pairs == {
        (graph.passage_vertex(passages["M. Ward"].id), graph.phrase_vertex("m. ward")),
        (graph.passage_vertex(passages["Transfiguration of Vincent"].id),
         graph.phrase_vertex("transfiguration of vincent")),
        (graph.passage_vertex(passages["Third studio album"].id),
         graph.phrase_vertex("third studio album")),
        (graph.passage_vertex(passages["Portland Trail Blazers"].id),
         graph.phrase_vertex("portland trail blazers")),
    }
    own, titled = walk_of(graph, store, 0.0), walk_of(graph, store, 2.0)
    assert own.adjacency is graph.adjacency()[0]  # no titles: the walk read before
    ward_passage = graph.passage_vertex(passages["M. Ward"].id)
    ward = graph.phrase_vertex("m. ward")
    assert titled.adjacency[ward_passage, ward] == pytest.approx(2.0)
    assert own.adjacency[ward_passage, ward] == 0
    assert titled.strength[ward] == pytest.approx(own.strength[ward] + 2.0)
    columns = np.asarray(titled.transition.sum(axis=0)).ravel()
    assert np.allclose(columns[~titled.dangling], 1.0)


def _named_pairs(graph: PPRGraph, store: EmbeddedStore) -> set[tuple[str, str]]:
    return {(graph.vertex_name(p), graph.vertex_name(t)) for p, t in zip(*(a.tolist() for a in title_pairs(graph, store)))}


def test_title_edges_after_adds_and_deletes_read_only_the_new_passages(tmp_path: Path, monkeypatch) -> None:
    """The titles are kept with the graph across its updates: after a write, only the added
    passages' titles are read (by id, no walk over every passage), the removed ones' dropped,
    and the pairs are those of a graph built from scratch on the same data."""
    store, graph, passages = _corpus(tmp_path)
    assert _named_pairs(graph, store)  # the first version reads every title (one walk)
    walks: list[int] = []
    iterate = type(store.passages).iterate
    monkeypatch.setattr(type(store.passages), "iterate", lambda self: walks.append(1) or iterate(self))
    extra = Passage(passage_id("Kestrel", "Kestrel hunts over fields."), "Kestrel", "Kestrel hunts over fields.")
    store.passages.add([extra])
    store.triples.add([Triple(triple_id(extra.id, "Kestrel", "hunts over", "fields"), "Kestrel", "hunts over",
                              "fields", extra.id)])
    store.passages.remove([passages["M. Ward"].id])
    graph.update(store)
    after = _named_pairs(graph, store)
    assert not walks  # one title read by id
    scratch = PPRGraph.build(store, store.embedder)
    assert after == _named_pairs(scratch, store)
    assert (extra.id, "kestrel") in after and not [a for a in after if a[0] == passages["M. Ward"].id]
    assert walk_of(graph, store, 2.0).adjacency.nnz == walk_of(scratch, store, 2.0).adjacency.nnz
    # the ranking with title edges is that of the graph built from scratch
    retriever = PPRRetriever(store, QueryEncoder(store.embedder), graph=graph, graph_path=None)
    fresh = PPRRetriever(store, QueryEncoder(store.embedder), graph=scratch, graph_path=None)
    assert retriever.settings.ppr_title_weight > 0
    assert [(p.id, round(p.score, 9)) for p in retriever.retrieve(QUERY, 5)] == [
        (p.id, round(p.score, 9)) for p in fresh.retrieve(QUERY, 5)]


def test_title_edges_reach_the_second_hop(tmp_path: Path) -> None:
    store, graph, passages = _corpus(tmp_path)
    q = HashingEmbedder(64).embed_one(QUERY)
    seed = [Triple(triple_id(passages["Transfiguration of Vincent"].id,
                             "Transfiguration of Vincent", "album by", "M. Ward"), "", "", "", "").id]

    def rank(title_weight: float) -> list[str]:
        ranked = ppr_expand(store, graph, QUERY, q, seed, k=4, method="global",
                            walk=walk_of(graph, store, title_weight))
        return [p.id for p in ranked]

    ward = passages["M. Ward"].id
    assert rank(2.0).index(ward) < rank(0.0).index(ward)
    assert rank(2.0)[:2] == [passages["Transfiguration of Vincent"].id, ward]


# ---- the whole restart vector against a direct solve ------------------------------------------


@pytest.mark.parametrize("method", ["global", "local"])
def test_ppr_equals_a_direct_solve_of_its_restart_vector(tmp_path: Path, method: str) -> None:
    store, graph, passages = _corpus(tmp_path)
    embedder = HashingEmbedder(64)
    q = embedder.embed_one(QUERY)
    weight, sharpness, names, damping = 2.0, 3.0, 0.25, 0.5
    walk = walk_of(graph, store, weight)
    ranked = ppr_expand(store, graph, QUERY, q, None, k=4, seed_triples=2, method=method,
                        tolerance=1e-12, passage_sharpness=sharpness,
                        query_entity_weight=names, walk=walk)

    # the restart vector by hand: seeds' phrases, the query's names, sharpened passages
    best = store.triples.vector_search(q, 2)
    low_t = -store.triples.vector_search(-q, 1)[0].score
    triples = store.triples.get([h.id for h in best])
    by_id = {h.id: h.score for h in best}
    scores = [(by_id[t.id] - low_t) / (best[0].score - low_t) for t in triples]
    reset = np.zeros(graph.n_vertices)
    for vertex, mass in seed_phrase_mass(graph, triples, scores).items():
        reset[vertex] = mass
    specificity = graph.vertex_specificity()
    for vertex in query_entity_vertices(QUERY, graph.phrase_vertex):
        reset[vertex] += names / max(int(specificity[vertex]), 1)
    hits = store.passages.vector_search(q, 4)
    low, high = -store.passages.vector_search(-q, 1)[0].score, hits[0].score
    for hit in hits:
        reset[graph.passage_vertex(hit.id)] = 0.05 * ((hit.score - low) / (high - low)) ** 3
    assert reset[graph.phrase_vertex("transfiguration of vincent")] > 0  # named by the query

    m = walk.transition.toarray()
    p = (1 - damping) * np.linalg.solve(np.eye(graph.n_vertices) - damping * m,
                                        reset / reset.sum())
    expected = sorted(passages.values(), key=lambda x: -p[graph.passage_vertex(x.id)])
    assert [r.id for r in ranked] == [x.id for x in expected]
    for r in ranked:
        assert r.score == pytest.approx(p[graph.passage_vertex(r.id)], rel=1e-6, abs=1e-9)


def test_sharpness_one_is_hipporag2s_linear_mass(tmp_path: Path) -> None:
    store, graph, _ = _corpus(tmp_path)
    q = HashingEmbedder(64).embed_one(QUERY)
    hits = store.passages.vector_search(q, 4)
    low, high = hits[-1].score, hits[0].score
    linear = passage_mass(graph, hits, low, high, 0.05)
    cubed = passage_mass(graph, hits, low, high, 0.05, sharpness=3.0)
    for vertex, mass in linear.items():
        assert cubed[vertex] == pytest.approx(0.05 * (mass / 0.05) ** 3)


# ---- which walk each caller gets ---------------------------------------------------------------


def test_the_agents_expansion_keeps_hipporag2s_walk_and_ppr_gets_the_new_one(
    tmp_path: Path,
) -> None:
    store, graph, passages = _corpus(tmp_path)
    embedder = HashingEmbedder(64)
    retriever = PPRRetriever(store, QueryEncoder(embedder), PPRSettings(), graph=graph,
                             graph_path=None)
    q = embedder.embed_one(QUERY)
    seeds = store.triples.of_passage(passages["Transfiguration of Vincent"].id)[:1]
    recorded = ppr_expand(store, graph, QUERY, q, seeds, k=4)
    assert retriever.expand(QUERY, seeds, 4) == recorded
    new = ppr_expand(store, graph, QUERY, q, None, k=4, query_entity_weight=0.25,
                     walk=walk_of(graph, store, 2.0))
    assert retriever.retrieve(QUERY, 4) == new
    sharp = PPRRetriever(store, QueryEncoder(embedder), PPRSettings(ppr_passage_sharpness=3.0),
                         graph=graph, graph_path=None)
    assert sharp.retrieve(QUERY, 4) == ppr_expand(
        store, graph, QUERY, q, None, k=4, passage_sharpness=3.0, query_entity_weight=0.25,
        walk=walk_of(graph, store, 2.0))
    assert PPRSettings.hipporag2().knobs(seeds_given=False) == (0.0, 1.0, 0.0)
