"""One behaviour for every Store backend (see conftest.py for the backends).

The corpus: four passages about landmarks, six triples whose entities meet at
"Paris" (written differently on purpose: ``Paris``, ``  PARIS ``, ``paris``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from gear_agent.embedding.base import Embedder
from gear_agent.ids import passage_id, triple_id
from gear_agent.store.base import ModelMismatchError, Store, StoreError
from gear_agent.store.collections import Passages, Triples
from gear_agent.store.nodes import NodeStore
from gear_agent.types import Passage, Triple


def _passage(title: str, text: str, source: str) -> Passage:
    return Passage(passage_id(title, text), title, text, source)


P_EIFFEL = _passage(
    "Eiffel Tower", "The Eiffel Tower is a wrought-iron lattice tower in Paris.", "a.txt"
)
P_COLOSSEUM = _passage("Colosseum", "The Colosseum is an elliptical amphitheatre in Rome.", "a.txt")
P_GATE = _passage(
    "Brandenburg Gate", "The Brandenburg Gate is a neoclassical monument in Berlin.", "b.txt"
)
P_SEINE = _passage("Seine", "The Seine is a river that flows through Paris.", "b.txt")
PASSAGES = [P_EIFFEL, P_COLOSSEUM, P_GATE, P_SEINE]


def _triple(passage: Passage, subject: str, predicate: str, obj: str) -> Triple:
    return Triple(
        triple_id(passage.id, subject, predicate, obj), subject, predicate, obj, passage.id
    )


T_EIFFEL_PARIS = _triple(P_EIFFEL, "Eiffel Tower", "located in", "Paris")
T_EIFFEL_IRON = _triple(P_EIFFEL, "Eiffel Tower", "made of", "wrought iron")
T_SEINE_PARIS = _triple(P_SEINE, "Seine", "flows through", "  PARIS ")
T_COLOSSEUM_ROME = _triple(P_COLOSSEUM, "Colosseum", "located in", "Rome")
T_GATE_BERLIN = _triple(P_GATE, "Brandenburg  Gate", "located in", "Berlin")
T_PARIS_FRANCE = _triple(P_SEINE, "paris", "capital of", "France")
TRIPLES = [
    T_EIFFEL_PARIS,
    T_EIFFEL_IRON,
    T_SEINE_PARIS,
    T_COLOSSEUM_ROME,
    T_GATE_BERLIN,
    T_PARIS_FRANCE,
]


@pytest.fixture
def filled(store: Store) -> Store:
    store.passages.add(PASSAGES)
    store.triples.add(TRIPLES)
    return store


def ids(records: list) -> list[str]:
    return [r.id for r in records]


# ---- writes ------------------------------------------------------------------


def test_add_passages_then_readd_is_a_noop(store: Store) -> None:
    first = store.passages.add(PASSAGES)
    assert first.added == ids(PASSAGES)
    assert first.existing == []
    again = store.passages.add([P_GATE, P_EIFFEL])
    assert again.added == []
    assert again.existing == [P_GATE.id, P_EIFFEL.id]
    assert store.passages.count() == 4


def test_a_repeat_within_one_call_counts_as_existing(store: Store) -> None:
    result = store.passages.add([P_EIFFEL, P_EIFFEL])
    assert result.added == [P_EIFFEL.id]
    assert result.existing == [P_EIFFEL.id]
    assert store.passages.count() == 1


def test_add_triples_then_readd_is_a_noop(store: Store) -> None:
    store.passages.add(PASSAGES)
    first = store.triples.add(TRIPLES)
    assert first.added == ids(TRIPLES)
    again = store.triples.add([T_SEINE_PARIS])
    assert again.added == [] and again.existing == [T_SEINE_PARIS.id]
    assert store.triples.count() == 6


def test_triples_must_name_a_stored_passage(store: Store) -> None:
    store.passages.add([P_EIFFEL])
    with pytest.raises(StoreError):
        store.triples.add([T_EIFFEL_PARIS, T_SEINE_PARIS])
    assert store.triples.count() == 0


def test_counts_start_at_zero(store: Store) -> None:
    assert store.passages.count() == 0
    assert store.triples.count() == 0


# ---- search ------------------------------------------------------------------


def test_bm25_finds_the_passage_with_a_distinctive_word(filled: Store) -> None:
    hits = filled.passages.bm25_search("amphitheatre", k=3)
    assert hits[0].id == P_COLOSSEUM.id
    assert hits[0].score > 0
    assert len(hits) == 1  # only matching documents come back


def test_bm25_over_triples(filled: Store) -> None:
    hits = filled.triples.bm25_search("wrought iron", k=5)
    assert hits[0].id == T_EIFFEL_IRON.id


def test_bm25_scores_descend_and_respect_k(filled: Store) -> None:
    hits = filled.passages.bm25_search("Paris tower river", k=2)
    assert len(hits) == 2
    assert hits[0].score >= hits[1].score
    assert filled.passages.bm25_search("zeppelin", k=5) == []


def test_vector_search_finds_the_same_text_first(filled: Store, embedder: Embedder) -> None:
    query = embedder.embed_one(P_GATE.content)
    hits = filled.passages.vector_search(query, k=4)
    assert hits[0].id == P_GATE.id
    assert hits[0].score == pytest.approx(1.0, abs=1e-4)  # a cosine, not a rescaled score
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert len(hits) == 4


def test_vector_search_over_triples(filled: Store, embedder: Embedder) -> None:
    hits = filled.triples.vector_search(embedder.embed_one(T_COLOSSEUM_ROME.text), k=2)
    assert hits[0].id == T_COLOSSEUM_ROME.id
    assert len(hits) == 2


def test_the_lowest_similarity_is_the_last_of_a_full_vector_search(filled: Store, embedder: Embedder) -> None:
    # PPR's min-max normalisation (HippoRAG 2) needs it; a handful of records is searched exactly
    query = embedder.embed_one(P_GATE.content)
    for collection in ("passage", "triple"):
        every = filled.collection(collection).vector_search(query, k=filled.collection(collection).count())
        assert filled.collection(collection).lowest_similarity(query) == pytest.approx(every[-1].score, abs=1e-4)


# ---- reads -------------------------------------------------------------------


def test_get_by_ids_keeps_the_order_asked_and_skips_unknown(filled: Store) -> None:
    assert filled.passages.get([P_SEINE.id, "p-unknown", P_EIFFEL.id]) == [P_SEINE, P_EIFFEL]
    assert filled.triples.get([T_PARIS_FRANCE.id, "t-unknown", T_EIFFEL_PARIS.id]) == [
        T_PARIS_FRANCE,
        T_EIFFEL_PARIS,
    ]
    assert filled.passages.get([]) == []


def test_the_store_composes_its_collections(filled: Store) -> None:
    """Passages, triples and SiReRAG nodes are collection objects on every backend; the
    store picks one by name and names the two it knows when asked for another."""
    assert isinstance(filled.passages, Passages)
    assert isinstance(filled.triples, Triples)
    assert isinstance(filled.nodes, NodeStore)
    assert filled.collection("passage") is filled.passages
    assert filled.collection("triple") is filled.triples
    with pytest.raises(ValueError, match="expected 'passage' or 'triple'"):
        filled.collection("node")  # type: ignore[arg-type]


def test_passage_vectors_are_the_stored_embeddings(filled: Store, embedder: Embedder) -> None:
    vectors = filled.passages.vectors([P_SEINE.id, P_EIFFEL.id])
    assert vectors.shape == (2, embedder.dimension)
    np.testing.assert_allclose(vectors, embedder.embed([P_SEINE.content, P_EIFFEL.content]), atol=1e-6)


def test_triple_vectors_are_the_stored_embeddings(filled: Store, embedder: Embedder) -> None:
    wanted = [T_GATE_BERLIN, T_EIFFEL_PARIS]
    vectors = filled.triples.vectors([t.id for t in wanted])
    assert vectors.shape == (2, embedder.dimension)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, embedder.embed([t.text for t in wanted]), atol=1e-6)


def test_triples_of_passage_in_extraction_order(store: Store) -> None:
    store.passages.add(PASSAGES)
    later = _triple(P_EIFFEL, "Eiffel Tower", "opened in", "1889")
    first_call = sorted([T_EIFFEL_PARIS, T_EIFFEL_IRON], key=lambda t: t.id, reverse=True)
    store.triples.add(first_call)
    store.triples.add([later])
    assert store.triples.of_passage(P_EIFFEL.id) == [*ids(first_call), later.id]
    assert store.triples.of_passage(P_GATE.id) == []
    assert store.triples.of_passage("p-unknown") == []
    assert store.triples.of_passages([P_GATE.id, P_EIFFEL.id, "p-unknown", P_EIFFEL.id]) == [
        [], [*ids(first_call), later.id], [], [*ids(first_call), later.id]]
    assert store.triples.of_passages([]) == []


def test_iterators_return_everything(filled: Store) -> None:
    assert sorted(filled.passages.iterate(), key=lambda p: p.id) == sorted(
        PASSAGES, key=lambda p: p.id
    )
    assert sorted(filled.triples.iterate(), key=lambda t: t.id) == sorted(TRIPLES, key=lambda t: t.id)


def test_iter_triples_in_the_order_added(store: Store) -> None:
    """SiReRAG's aggregates join propositions in this order: another order would give other
    node texts (hence embeddings) on one backend than on the other."""
    store.passages.add(PASSAGES)
    first_call = sorted(TRIPLES[:4], key=lambda t: t.id, reverse=True)
    second_call = sorted(TRIPLES[4:], key=lambda t: t.id, reverse=True)
    store.triples.add(first_call)
    store.triples.add(second_call)
    assert ids(list(store.triples.iterate())) == ids([*first_call, *second_call])


# ---- entity graph ------------------------------------------------------------


def test_neighbours_share_a_normalised_head_or_tail(filled: Store) -> None:
    found = filled.triples.neighbours(T_EIFFEL_PARIS.id)
    # head "Eiffel Tower" -> T_EIFFEL_IRON; tail "Paris" -> "  PARIS " and "paris"
    assert sorted(found) == sorted([T_EIFFEL_IRON.id, T_SEINE_PARIS.id, T_PARIS_FRANCE.id])
    assert T_EIFFEL_PARIS.id not in found
    assert filled.triples.neighbours(T_COLOSSEUM_ROME.id) == []
    assert filled.triples.neighbours("t-unknown") == []


def test_neighbours_order_is_stable_and_limited(filled: Store) -> None:
    found = filled.triples.neighbours(T_EIFFEL_PARIS.id)
    assert filled.triples.neighbours(T_EIFFEL_PARIS.id) == found
    assert filled.triples.neighbours(T_EIFFEL_PARIS.id, limit=2) == found[:2]


def test_neighbours_most_query_similar_first(filled: Store, embedder: Embedder) -> None:
    query = embedder.embed_one("Seine flows through Paris")
    found = filled.triples.neighbours(T_EIFFEL_PARIS.id, query_vector=query)
    assert found[0] == T_SEINE_PARIS.id
    assert sorted(found) == sorted([T_EIFFEL_IRON.id, T_SEINE_PARIS.id, T_PARIS_FRANCE.id])
    query = embedder.embed_one("capital of France")
    assert filled.triples.neighbours(T_EIFFEL_PARIS.id, query_vector=query, limit=1) == [T_PARIS_FRANCE.id]


# ---- deletes -----------------------------------------------------------------


def test_delete_passages_cascades_to_triples_and_neighbours(filled: Store) -> None:
    deleted = filled.passages.remove([P_SEINE.id, "p-unknown"])
    assert deleted == [P_SEINE.id]
    assert filled.passages.count() == 3
    assert filled.triples.count() == 4
    assert filled.triples.get([T_SEINE_PARIS.id, T_PARIS_FRANCE.id]) == []
    assert filled.triples.of_passage(P_SEINE.id) == []
    assert filled.triples.neighbours(T_EIFFEL_PARIS.id) == [T_EIFFEL_IRON.id]
    assert filled.passages.bm25_search("river", k=5) == []
    assert filled.triples.bm25_search("France", k=5) == []
    assert filled.passages.remove([P_SEINE.id]) == []


def test_delete_source_removes_its_passages_and_their_triples(filled: Store) -> None:
    deleted = filled.passages.remove_source("a.txt")
    assert sorted(deleted) == sorted([P_EIFFEL.id, P_COLOSSEUM.id])
    assert sorted(ids(list(filled.passages.iterate()))) == sorted([P_GATE.id, P_SEINE.id])
    assert sorted(ids(list(filled.triples.iterate()))) == sorted(
        [T_SEINE_PARIS.id, T_GATE_BERLIN.id, T_PARIS_FRANCE.id]
    )
    assert filled.triples.neighbours(T_SEINE_PARIS.id) == [T_PARIS_FRANCE.id]
    assert filled.passages.remove_source("no-such-source") == []


def test_stored_sources_lists_a_folder_and_its_files(store: Store) -> None:
    under = [_passage(t, f"{t} text.", f"/d/docs{s}") for t, s in
             (("One", "/a.txt"), ("Two", "/sub/b.md"), ("Three", "2/c.txt"), ("Four", ""))]
    store.passages.add(under)
    assert store.passages.sources() == ["/d/docs", "/d/docs/a.txt", "/d/docs/sub/b.md", "/d/docs2/c.txt"]
    assert store.passages.sources(under="/d/docs") == ["/d/docs", "/d/docs/a.txt", "/d/docs/sub/b.md"]
    assert store.passages.sources(under="/d/docs/") == ["/d/docs", "/d/docs/a.txt", "/d/docs/sub/b.md"]
    assert store.passages.sources(under="/d/docs/a.txt") == ["/d/docs/a.txt"]
    assert store.passages.sources(under="/d/doc") == []
    store.passages.add([_passage("Five", "Five text.", "docs/e.txt"), _passage("Six", "Six.", "wiki")])
    assert store.passages.sources(relative=True) == ["docs/e.txt", "wiki"]
    assert store.passages.sources(under="docs", relative=True) == ["docs/e.txt"]


def test_replace_passages_deletes_the_old_and_adds_the_new(filled: Store) -> None:
    edited = _passage("Seine", "The Seine is a river that flows through Paris and Rouen.", "b.txt")
    result = filled.passages.replace([P_SEINE.id], [edited, P_GATE])
    assert result.added == [edited.id] and result.existing == [P_GATE.id]
    assert sorted(filled.passages.ids_of_source("b.txt")) == sorted([P_GATE.id, edited.id])
    assert sorted(ids(list(filled.triples.iterate()))) == sorted(
        [T_EIFFEL_PARIS.id, T_EIFFEL_IRON.id, T_COLOSSEUM_ROME.id, T_GATE_BERLIN.id])
    assert edited.id in ids(filled.passages.unextracted())


# ---- extraction bookkeeping --------------------------------------------------


def test_mark_extracted_and_unextracted_passages(store: Store) -> None:
    store.passages.add(PASSAGES)
    assert sorted(ids(store.passages.unextracted())) == sorted(ids(PASSAGES))
    store.passages.mark_extracted([P_EIFFEL.id, P_COLOSSEUM.id, "p-unknown"])
    assert sorted(ids(store.passages.unextracted())) == sorted([P_GATE.id, P_SEINE.id])
    store.passages.add([P_EIFFEL])  # a no-op re-add keeps the mark
    assert sorted(ids(store.passages.unextracted())) == sorted([P_GATE.id, P_SEINE.id])
    assert store.passages.unextracted()[0] in (P_GATE, P_SEINE)


# ---- model checks ------------------------------------------------------------


def test_reopening_with_another_model_is_refused(backend: Any, embedder: Embedder) -> None:
    store = backend.open(embedder)
    store.passages.add([P_EIFFEL])
    store.close()
    other = type(embedder)(dimension=embedder.dimension, name="another-model")
    with pytest.raises(ModelMismatchError) as caught:
        backend.open(other)
    assert embedder.name in str(caught.value) and "another-model" in str(caught.value)
    with pytest.raises(ModelMismatchError):
        backend.open(type(embedder)(dimension=32, name=embedder.name))


def test_reopening_with_the_same_model_keeps_the_data(backend: Any, embedder: Embedder) -> None:
    store = backend.open(embedder)
    store.passages.add(PASSAGES)
    store.close()
    again = backend.open(type(embedder)(dimension=embedder.dimension, name=embedder.name))
    assert again.passages.count() == 4
    assert again.embedding_model == embedder.name


# ---- metadata and filters --------------------------------------------------------

REPORTS = [
    Passage(passage_id(f"Report {i}", f"Annual revenue report number {i} of the group."),
            f"Report {i}", f"Annual revenue report number {i} of the group.",
            f"reports/{2018 + i % 4}/r{i}.md",
            {"year": 2018 + i % 4, "lang": "en" if i % 3 else "de", "tags": ["finance", f"t{i}"],
             "draft": i % 2 == 0, "author": {"name": f"A{i % 2}"}})
    for i in range(8)
]


@pytest.fixture
def reports(store: Store) -> Store:
    store.passages.add(REPORTS)
    store.triples.add([_triple(p, p.title, "covers", f"year {p.metadata['year']}") for p in REPORTS])
    return store


def _expected(where: Any) -> list[str]:
    from gear_agent.filters import parse_where

    parsed = parse_where(where)
    return sorted(p.id for p in REPORTS if parsed.matches(p))


def test_metadata_is_stored_and_returned(reports: Store) -> None:
    got = reports.passages.get([REPORTS[3].id])[0]
    assert got.metadata == REPORTS[3].metadata
    assert {p.id: p.metadata for p in reports.passages.iterate()} == {p.id: p.metadata for p in REPORTS}


FILTERS = [
    {"source": "reports/2019"},
    ["source=reports"],
    {"year": {"$gte": 2020}},
    ["year>=2019", "year<2021"],
    {"lang": "de"},
    ["lang!=de"],
    {"tags": "t5"},
    {"draft": True},
    {"author.name": "A1", "year": {"$in": [2018, 2021]}},
    {"year": {"$nin": [2018, 2019]}},
    {"title": "Report 2"},
    ["year>2020.5"],
    ["year>abc"],
]


@pytest.mark.parametrize("where", FILTERS, ids=[str(f) for f in FILTERS])
def test_filters_apply_before_ranking(reports: Store, embedder: Embedder, where: Any) -> None:
    expected = _expected(where)
    assert reports.passages.count(where=where) == len(expected)
    bm25 = reports.passages.bm25_search("annual revenue report group", k=20, where=where)
    assert sorted(h.id for h in bm25) == expected
    dense = reports.passages.vector_search(embedder.embed_one("annual revenue report"), k=20, where=where)
    assert sorted(h.id for h in dense) == expected
    few = reports.passages.bm25_search("annual revenue report group", k=2, where=where)
    assert len(few) == min(2, len(expected))  # k hits whenever k passages pass: filtered before ranking
    ids = [p.id for p in reversed(REPORTS)] + ["p-unknown"]
    assert reports.passages.filter_ids(ids, where) == [i for i in ids if i in set(expected)]


def test_a_filter_on_triples_keeps_the_triples_of_passing_passages(reports: Store, embedder: Embedder) -> None:
    where = {"year": 2021}
    passing = set(_expected(where))
    hits = reports.triples.bm25_search("covers year", k=20, where=where)
    assert hits and {t.passage_id for t in reports.triples.get([h.id for h in hits])} <= passing
    assert reports.triples.count(where=where) == len(passing)
    dense = reports.triples.vector_search(embedder.embed_one("covers year 2021"), k=20, where=where)
    assert {t.passage_id for t in reports.triples.get([h.id for h in dense])} == passing


def test_a_filter_matching_nothing(reports: Store, embedder: Embedder) -> None:
    where = {"source": "nowhere"}
    assert reports.passages.count(where=where) == 0
    assert reports.passages.bm25_search("report", k=5, where=where) == []
    assert reports.passages.vector_search(embedder.embed_one("report"), k=5, where=where) == []
    assert reports.passages.filter_ids([REPORTS[0].id], where) == []


def test_a_bad_filter_is_one_clear_error(reports: Store) -> None:
    from gear_agent.errors import GearError
    from gear_agent.filters import FilterError

    with pytest.raises(FilterError, match="year~2020") as caught:
        reports.passages.bm25_search("report", k=5, where=["year~2020"])
    assert isinstance(caught.value, GearError) and "\n" not in str(caught.value)
    with pytest.raises(FilterError, match=r"\$near"):
        reports.passages.count(where={"year": {"$near": 2020}})


# ---- commit generations and the change feed ---------------------------------------------


def test_every_write_moves_the_generation_even_when_counts_stay_the_same(store: Store) -> None:
    seen = [store.generation()]
    store.passages.add(PASSAGES[:2])
    seen.append(store.generation())
    store.triples.add([T_EIFFEL_PARIS, T_COLOSSEUM_ROME])
    seen.append(store.generation())
    before = (store.passages.count(), store.triples.count())
    store.passages.remove([P_COLOSSEUM.id])
    store.passages.add([P_GATE])
    store.triples.add([T_GATE_BERLIN])
    seen.append(store.generation())
    assert (store.passages.count(), store.triples.count()) == before  # counts cannot tell
    assert seen == sorted(seen) and len(set(seen)) == len(seen)


def test_the_change_feed_lists_what_changed_since_a_generation(store: Store) -> None:
    store.passages.add(PASSAGES[:2])
    store.triples.add([T_EIFFEL_PARIS, T_COLOSSEUM_ROME])
    mark = store.generation()
    store.passages.remove([P_COLOSSEUM.id])
    store.passages.add([P_GATE])
    store.triples.add([T_GATE_BERLIN])
    changes = store.changes_since(mark)
    assert (changes.since, changes.generation) == (mark, store.generation())
    assert changes.complete  # every backend keeps a feed and lists every change exactly
    assert changes.passages_added == (P_GATE.id,)
    assert changes.passages_removed == (P_COLOSSEUM.id,)
    assert changes.triples_added == (T_GATE_BERLIN.id,)
    assert changes.triples_removed == (T_COLOSSEUM_ROME.id,)
    assert store.changes_since(store.generation()).empty
    assert changes.generation == store.generation()


def test_the_stamp_names_the_index_and_moves_with_every_write(store: Store) -> None:
    """What a derived file records (issue 35): an id of the index that a new index under
    the same names does not share, and the generation."""
    store.passages.add(PASSAGES[:2])
    first = store.stamp()
    assert first.index_id and first.generation == store.generation()
    assert store.knows(first) and store.stamp() == first  # nothing written: the same stamp
    store.triples.add([T_EIFFEL_PARIS])
    later = store.stamp()
    assert later.index_id == first.index_id and later.generation > first.generation
    assert store.knows(later) and not store.knows(replace(later, index_id="another-index"))
    # An earlier commit of its history: the change feed leads from it to now, so derived
    # state (the PPR graph) is brought up to date from the feed, not rebuilt, on every backend.
    assert store.knows(first)


def test_listeners_hear_every_commit_of_their_store(store: Store) -> None:
    heard: list[int] = []
    stop = store.subscribe(heard.append)
    store.passages.add([P_EIFFEL])
    store.triples.add([T_EIFFEL_PARIS])
    store.passages.remove([P_EIFFEL.id])
    assert len(heard) == 3 and heard == sorted(heard) and heard[-1] == store.generation()
    stop()
    store.passages.add([P_SEINE])
    assert len(heard) == 3


def test_a_snapshot_reads_one_commit(store: Store) -> None:
    store.passages.add(PASSAGES)
    with store.snapshot():
        generation = store.generation()
        assert store.passages.count() == 4
    assert store.generation() == generation


def test_delete_source_matches_the_source_exactly(store: Store) -> None:
    store.passages.add([_passage("A", "from folder a", "a/corpus.json"),
                        _passage("B", "from folder b", "b/corpus.json")])
    assert store.passages.ids_of_source("corpus.json") == []
    assert store.passages.remove_source("corpus.json") == []
    assert store.passages.remove_source("a/corpus.json") == [passage_id("A", "from folder a")]
    assert store.passages.count() == 1
