"""Algorithm 1 on a hand-made graph, checked by hand.

Vectors are 2-D unit vectors at an angle; the query points at 0 degrees. Under
the ``sum`` scorer the normalised sum of two unit vectors at angles a and b
points at (a + b) / 2, so a two-triple sequence scores cos((a + b) / 2).
"""

import math
from collections.abc import Sequence

import numpy as np
import pytest
from support.fakes import CountingEmbedder

from gear_agent.config import BeamSettings
from gear_agent.embedding.base import Embedder
from gear_agent.expansion.beam import (
    Beam,
    TripleBeamSearch,
    beams_to_passages,
    flatten_breadth_first,
    rank_penalty,
)
from gear_agent.expansion.naive_ge import NaiveGERetriever
from gear_agent.expansion.scorers import sequence_text
from gear_agent.ids import passage_id, triple_id
from gear_agent.retrieval.search import QueryEncoder, SearchRetriever
from gear_agent.store.embedded.store import EmbeddedStore
from gear_agent.types import Passage, Triple


def at(degrees: float) -> np.ndarray:
    r = math.radians(degrees)
    return np.array([math.cos(r), math.sin(r)], dtype=np.float32)


class AngleEmbedder(Embedder):
    """Test double: each known text gets a fixed 2-D unit vector; others point at 90 degrees."""

    name = "angles"

    def __init__(self, angles: dict[str, float]) -> None:
        self.angles = angles

    @property
    def dimension(self) -> int:
        return 2

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([at(self.angles.get(t, 90.0)) for t in texts]) if texts else np.zeros((0, 2))


# name: (subject, predicate, object, angle)
GRAPH = {
    "A": ("a", "r", "x1", 10.0),
    "A1": ("x1", "r", "y1", 0.0),
    "A2": ("x1", "r", "y2", 20.0),
    "B": ("b", "r", "z1", 30.0),
    "B1": ("z1", "r", "w1", 20.0),
}


@pytest.fixture
def graph_store(tmp_path):
    embedder = AngleEmbedder({f"{s} {p} {o}": angle for s, p, o, angle in GRAPH.values()})
    store = EmbeddedStore.open(tmp_path / "ix", embedder)
    ids = {}
    for name, (s, p, o, _) in GRAPH.items():
        passage = Passage(passage_id(name, f"passage {name}"), name, f"passage {name}")
        store.passages.add([passage])
        triple = Triple(triple_id(passage.id, s, p, o), s, p, o, passage.id)
        store.triples.add([triple])
        ids[name] = triple.id
    return store, embedder, ids


def names(beams, ids):
    back = {v: k for k, v in ids.items()}
    return [tuple(back[t] for t in beam.triples) for beam in beams]


def test_diverse_and_plain_search_pick_different_beams(graph_store):
    store, embedder, ids = graph_store
    query = at(0.0)
    start = [ids["A"], ids["B"]]
    plain = TripleBeamSearch(store, embedder, BeamSettings(beam_width=2, beam_length=2, beam_diverse=False)).run(query, start)
    diverse = TripleBeamSearch(store, embedder, BeamSettings(beam_width=2, beam_length=2)).run(query, start)
    # By hand: A+A1 = cos 5, A+A2 = cos 15, B+B1 = cos 25. Plain keeps the two best;
    # diverse multiplies A's second candidate by exp(-1/4) = 0.7788 -> 0.752 < cos 25 = 0.906.
    assert names(plain, ids) == [("A", "A1"), ("A", "A2")]
    assert names(diverse, ids) == [("A", "A1"), ("B", "B1")]
    assert plain[1].score == pytest.approx(math.cos(math.radians(15)), abs=1e-5)
    assert diverse[0].score == pytest.approx(math.cos(math.radians(5)), abs=1e-5)
    assert diverse[1].score == pytest.approx(math.cos(math.radians(25)), abs=1e-5)


def test_rank_penalty_values():
    assert rank_penalty(0, 20) == 1.0
    assert rank_penalty(1, 4) == pytest.approx(math.exp(-0.25))
    assert rank_penalty(50, 20) == pytest.approx(math.exp(-1))  # capped at gamma


def test_first_step_keeps_the_width_best_start_triples(graph_store):
    store, embedder, ids = graph_store
    beams = TripleBeamSearch(store, embedder, BeamSettings(beam_width=1, beam_length=1)).run(
        at(0.0), [ids["B"], ids["A"]]
    )
    assert names(beams, ids) == [("A",)]


def test_triples_already_in_a_beam_are_not_candidates(graph_store):
    store, embedder, ids = graph_store
    # A1 and A2 are neighbours of each other; starting from both, neither may extend with the other.
    beams = TripleBeamSearch(store, embedder, BeamSettings(beam_width=2, beam_length=2)).run(
        at(0.0), [ids["A1"], ids["A2"]]
    )
    for beam in beams:
        assert len(set(beam.triples)) == len(beam.triples)
        assert not ({ids["A1"], ids["A2"]} <= set(beam.triples))


def test_breadth_first_flattening_and_passage_chains(graph_store):
    store, _, ids = graph_store
    beams = [Beam((ids["A"], ids["A1"]), 0.9), Beam((ids["B"], ids["B1"]), 0.8)]
    flat = flatten_breadth_first(beams)
    assert [t for t, _ in flat] == [ids["A"], ids["B"], ids["A1"], ids["B1"]]
    passages = beams_to_passages(store, beams)
    assert [store.passages.get([p.id])[0].title for p in passages] == ["A", "B", "A1", "B1"]
    assert passages[2].chain == (ids["A"], ids["A1"])
    assert [p.score for p in passages] == [1.0, 0.5, pytest.approx(1 / 3), 0.25]


def test_concat_scorer_equals_a_direct_computation(tmp_path):
    embedder = CountingEmbedder()
    store = EmbeddedStore.open(tmp_path / "ix", embedder)
    facts = [("Paris", "capital of", "France"), ("France", "member of", "European Union"),
             ("Paris", "twinned with", "Rome"), ("Rome", "capital of", "Italy")]
    for s, p, o in facts:
        passage = Passage(passage_id(s, f"{s} {p} {o}."), s, f"{s} {p} {o}.")
        store.passages.add([passage])
        store.triples.add([Triple(triple_id(passage.id, s, p, o), s, p, o, passage.id)])
    query = embedder.embed_one("which union is the capital of France in")
    start = [t.id for t in store.triples.iterate()][:1]
    beams = TripleBeamSearch(
        store, embedder, BeamSettings(beam_width=5, beam_length=2, beam_scorer="concat", beam_diverse=False)
    ).run(query, start)
    assert beams and all(len(b.triples) == 2 for b in beams)
    for beam in beams:
        texts = [t.text for t in store.triples.get(list(beam.triples))]
        direct = float(embedder.embed([sequence_text(texts)])[0] @ query)
        assert beam.score == pytest.approx(direct, abs=1e-6)


def test_sum_scorer_equals_normalised_sum_of_stored_vectors(graph_store):
    store, embedder, ids = graph_store
    beams = TripleBeamSearch(store, embedder, BeamSettings(beam_width=5, beam_length=2, beam_diverse=False)).run(
        at(0.0), [ids["B"]]
    )
    summed = store.triples.vectors([ids["B"], ids["B1"]]).sum(axis=0)
    assert beams[0].score == pytest.approx(float(summed @ at(0.0) / np.linalg.norm(summed)), abs=1e-6)


def test_naive_ge_passages_carry_the_chain_that_reached_them(graph_store):
    store, embedder, ids = graph_store
    encode = QueryEncoder(embedder)
    base = SearchRetriever(store, encode, "bm25")
    naive = NaiveGERetriever(
        base, TripleBeamSearch(store, embedder, BeamSettings(beam_width=2, beam_length=2)), encode, base_k=1
    )
    base_list = base.retrieve("passage A", 1)
    assert store.passages.get([base_list[0].id])[0].title == "A"
    expanded = naive.expand("passage A", base_list)
    by_id = {t.id: t for t in store.triples.iterate()}
    for item in expanded:
        assert item.chain and by_id[item.chain[-1]].passage_id == item.id
        for first, second in zip(item.chain, item.chain[1:]):  # consecutive triples share an entity
            assert {by_id[first].subject, by_id[first].object} & {by_id[second].subject, by_id[second].object}
    fused = naive.retrieve("passage A", k=5)
    assert fused[0].id == base_list[0].id  # in both lists, so first after RRF
    assert {p.id for p in fused} >= {p.id for p in expanded}


def test_unknown_scorer_is_rejected_with_the_valid_names():
    with pytest.raises(ValueError, match="'sum', 'concat'"):
        BeamSettings(beam_scorer="max")


def _chain_store(tmp_path, embedder):
    store = EmbeddedStore.open(tmp_path / "ix", embedder)
    facts = [("Paris", "capital of", "France"), ("France", "member of", "European Union"),
             ("Paris", "twinned with", "Rome"), ("Rome", "capital of", "Italy"),
             ("France", "borders", "Spain"), ("Rome", "hosts", "Vatican")]
    for s, p, o in facts:
        passage = Passage(passage_id(s, f"{s} {p} {o}."), s, f"{s} {p} {o}.")
        store.passages.add([passage])
        store.triples.add([Triple(triple_id(passage.id, s, p, o), s, p, o, passage.id)])
    return store


def test_rerank_with_every_candidate_is_concat_and_encodes_once_per_step(tmp_path):
    embedder = CountingEmbedder()  # records its calls
    store = _chain_store(tmp_path, embedder)
    query = embedder.embed_one("which union is the capital of France in")
    start = [t.id for t in store.triples.iterate()][:2]
    concat = TripleBeamSearch(
        store, embedder, BeamSettings(beam_width=3, beam_length=3, beam_scorer="concat", beam_diverse=False)
    ).run(query, start)
    embedder.calls.clear()
    search = TripleBeamSearch(
        store, embedder, BeamSettings(beam_width=3, beam_length=3, beam_scorer="rerank", beam_rerank=100, beam_diverse=False)
    )
    rerank = search.run(query, start)
    assert [b.triples for b in rerank] == [b.triples for b in concat]
    assert [b.score for b in rerank] == pytest.approx([b.score for b in concat], abs=1e-6)
    assert len(embedder.calls) == 2  # steps 2 and 3; step 1 uses the stored vectors
    embedder.calls.clear()
    search.run(query, start)
    assert embedder.calls == []  # every sequence text is cached


def test_rerank_rescores_only_the_best_few_by_sum(tmp_path):
    embedder = CountingEmbedder()  # records its calls
    store = _chain_store(tmp_path, embedder)
    query = embedder.embed_one("Paris")
    start = [t.id for t in store.triples.iterate()][:1]
    embedder.calls.clear()
    beams = TripleBeamSearch(
        store, embedder, BeamSettings(beam_width=4, beam_length=2, beam_scorer="rerank", beam_rerank=1)
    ).run(query, start)
    assert embedder.calls == [1]  # one beam, its best candidate by sum
    assert len(beams) == 1 and len(beams[0].triples) == 2


class RecordingAngleEmbedder(AngleEmbedder):
    """AngleEmbedder that records the texts of every call."""

    def __init__(self, angles: dict[str, float]) -> None:
        super().__init__(angles)
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return super().embed(texts)


def _sequence(*triples):
    return sequence_text([" ".join(GRAPH[t][:3]) for t in triples])


def test_shortlist_rescores_the_steps_best_penalised_sequences_in_one_call(graph_store):
    store, _, ids = graph_store
    # By sum (diverse): A+A1 = cos 5 = 0.996, B+B1 = cos 25 = 0.906, A+A2 = cos 15 x 0.7788
    # = 0.752. A shortlist of 2 encodes A+A1 and B+B1 only; concat then puts B+B1 first.
    angles = {" ".join(v[:3]): v[3] for v in GRAPH.values()}
    angles |= {_sequence("A", "A1"): 40.0, _sequence("B", "B1"): 0.0}
    embedder = RecordingAngleEmbedder(angles)
    search = TripleBeamSearch(
        store, embedder, BeamSettings(beam_width=2, beam_length=2, beam_scorer="shortlist", beam_shortlist=2)
    )
    beams = search.run(at(0.0), [ids["A"], ids["B"]])
    assert embedder.calls == [[_sequence("A", "A1"), _sequence("B", "B1")]]
    assert names(beams, ids) == [("B", "B1"), ("A", "A1")]
    assert [b.score for b in beams] == pytest.approx([1.0, math.cos(math.radians(40))], abs=1e-6)


def test_shortlist_drops_beams_none_of_whose_sequences_made_it(graph_store):
    store, embedder, ids = graph_store
    beams = TripleBeamSearch(
        store, embedder, BeamSettings(beam_width=2, beam_length=2, beam_scorer="shortlist", beam_shortlist=1)
    ).run(at(0.0), [ids["A"], ids["B"]])
    assert [len(b.triples) for b in beams] == [2]  # B's one-triple beam does not come back
    assert names(beams, ids) == [("A", "A1")]


def test_shortlist_defaults_to_twice_the_width():
    assert BeamSettings(beam_width=7).shortlist_size == 14
    assert BeamSettings(beam_width=7, beam_shortlist=3).shortlist_size == 3
    with pytest.raises(ValueError, match="shortlist"):
        BeamSettings(beam_shortlist=0)


def test_shortlist_of_every_sequence_is_concat(tmp_path):
    embedder = CountingEmbedder()
    store = _chain_store(tmp_path, embedder)
    query = embedder.embed_one("which union is the capital of France in")
    start = [t.id for t in store.triples.iterate()][:2]
    concat = TripleBeamSearch(
        store, embedder, BeamSettings(beam_width=3, beam_length=3, beam_scorer="concat", beam_diverse=False)
    ).run(query, start)
    embedder.calls.clear()
    shortlist = TripleBeamSearch(
        store, embedder,
        BeamSettings(beam_width=3, beam_length=3, beam_scorer="shortlist", beam_shortlist=1000, beam_diverse=False),
    ).run(query, start)
    assert [b.triples for b in shortlist] == [b.triples for b in concat]
    assert [b.score for b in shortlist] == pytest.approx([b.score for b in concat], abs=1e-6)
    assert len(embedder.calls) == 2  # steps 2 and 3, one call each
