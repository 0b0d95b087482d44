import multiprocessing
import os
from pathlib import Path

import numpy as np
import pytest
from index_fakes import FakeBagOfWordsEmbedder

from gear_agent.ids import passage_id, triple_id
from gear_agent.store import generations
from gear_agent.store.base import ModelMismatchError, StoreError
from gear_agent.store.embedded import EmbeddedStore, read_manifest
from gear_agent.types import Passage, Triple


def passage(title, text, source="test"):
    return Passage(passage_id(title, text), title, text, source)


def triple(p, s, r, o):
    return Triple(triple_id(p.id, s, r, o), s, r, o, p.id)


P1 = passage("Paris", "Paris is the capital of France.", "a.txt")
P2 = passage("Seine", "The Seine flows through Paris.", "b.txt")
P3 = passage("Rome", "Rome is the capital of Italy.", "b.txt")
T1 = triple(P1, "Paris", "capital of", "France")
T2 = triple(P2, "Seine", "flows through", "paris ")
T3 = triple(P3, "Rome", "capital of", "Italy")
T4 = triple(P2, "Seine", "is a", "river")


def build(path: Path, embedder=None) -> EmbeddedStore:
    store = EmbeddedStore.open(path, embedder or FakeBagOfWordsEmbedder())
    store.add_passages([P1, P2, P3])
    store.add_triples([T1, T2, T3, T4])
    return store


def test_adding_the_same_passage_twice_is_a_no_op(tmp_path):
    embedder = FakeBagOfWordsEmbedder()
    store = build(tmp_path / "ix", embedder)
    before = embedder.texts_embedded
    again = store.add_passages([P1, passage("Paris", "  Paris is the capital of France. ")])
    assert again.added == [] and len(again.existing) == 2
    assert embedder.texts_embedded == before  # nothing re-embedded
    assert store.count("passage") == 3


def test_adding_new_passages_embeds_only_those(tmp_path):
    embedder = FakeBagOfWordsEmbedder()
    build(tmp_path / "ix", embedder)
    reopened = EmbeddedStore.open(tmp_path / "ix", embedder)
    embedder.calls.clear()
    new = [passage(f"N{i}", f"new passage number {i}") for i in range(10)]
    result = reopened.add_passages([P1, *new])
    assert len(result.added) == 10 and embedder.texts_embedded == 10


def test_reopen_restores_everything(tmp_path):
    store = build(tmp_path / "ix")
    reopened = EmbeddedStore.open(tmp_path / "ix", FakeBagOfWordsEmbedder())
    assert reopened.get_passages([P2.id, P1.id]) == [P2, P1]
    assert reopened.triples_of_passage(P2.id) == [T2.id, T4.id]
    np.testing.assert_allclose(reopened.triple_vectors([T3.id]), store.triple_vectors([T3.id]))
    assert reopened.bm25_search("passage", "Italy", 3)[0].id == P3.id


def test_neighbours_share_head_or_tail_after_normalisation(tmp_path):
    store = build(tmp_path / "ix")
    assert set(store.neighbours(T1.id)) == {T2.id}  # "Paris" == "paris "
    assert set(store.neighbours(T2.id)) == {T1.id, T4.id}  # via paris and via Seine
    assert store.neighbours(T3.id) == []


def test_model_mismatch_is_refused_with_both_names(tmp_path):
    build(tmp_path / "ix")
    with pytest.raises(ModelMismatchError, match="fake-bag-of-words.*other-model"):
        EmbeddedStore.open(tmp_path / "ix", FakeBagOfWordsEmbedder(name="other-model"))
    with pytest.raises(ModelMismatchError, match="dimension 64"):
        EmbeddedStore.open(tmp_path / "ix", FakeBagOfWordsEmbedder(dimension=32))


def test_delete_removes_triples_and_graph_edges(tmp_path):
    store = build(tmp_path / "ix")
    assert store.delete_passages([P1.id, "p-unknown"]) == [P1.id]
    assert store.get_triples([T1.id]) == []
    assert store.neighbours(T2.id) == [T4.id]  # the edge through Paris went with T1
    assert store.count("triple") == 3
    reopened = EmbeddedStore.open(tmp_path / "ix", FakeBagOfWordsEmbedder())
    assert reopened.count("passage") == 2 and reopened.neighbours(T2.id) == [T4.id]
    assert all(h.id != P1.id for h in reopened.bm25_search("passage", "France", 5))


def test_delete_by_source(tmp_path):
    store = build(tmp_path / "ix")
    assert sorted(store.delete_source("b.txt")) == sorted([P2.id, P3.id])
    assert store.count("passage") == 1 and store.count("triple") == 1


def test_triples_must_name_a_stored_passage(tmp_path):
    store = EmbeddedStore.open(tmp_path / "ix", FakeBagOfWordsEmbedder())
    with pytest.raises(StoreError, match="not stored"):
        store.add_triples([T1])


def test_opening_a_missing_index_without_create_says_what_to_do(tmp_path):
    with pytest.raises(StoreError, match="gear index"):
        EmbeddedStore.open(tmp_path / "nothing", FakeBagOfWordsEmbedder(), create=False)


def _crash_during_commit(path: str, stage: str) -> None:
    store = EmbeddedStore.open(Path(path), FakeBagOfWordsEmbedder())
    original = store._write_files

    def dying(folder: Path) -> None:
        if stage == "files":
            (folder / "passages.jsonl").write_text('{"id": "half', encoding="utf-8")
            os._exit(9)
        original(folder)
        os._exit(9)  # everything written, pointer not yet moved

    store._write_files = dying
    store.add_passages([passage("Crash", "this write never commits")])


@pytest.mark.parametrize("stage", ["files", "before-pointer"])
def test_a_write_killed_midway_leaves_the_last_good_index_readable(tmp_path, stage):
    build(tmp_path / "ix")
    process = multiprocessing.get_context("spawn").Process(
        target=_crash_during_commit, args=(str(tmp_path / "ix"), stage)
    )
    process.start()
    process.join(60)
    assert process.exitcode == 9
    reopened = EmbeddedStore.open(tmp_path / "ix", FakeBagOfWordsEmbedder())
    assert reopened.count("passage") == 3 and reopened.count("triple") == 4
    # the next writer cleans up and commits normally
    reopened.add_passages([passage("After", "a later write")])
    assert EmbeddedStore.open(tmp_path / "ix", FakeBagOfWordsEmbedder()).count("passage") == 4
    assert not list((tmp_path / "ix").glob(".tmp-*"))


def test_transaction_rolls_back_on_error(tmp_path):
    store = build(tmp_path / "ix")
    with pytest.raises(RuntimeError), store.transaction():
        store.add_passages([passage("Gone", "never committed")])
        raise RuntimeError("boom")
    assert store.count("passage") == 3
    assert read_manifest(tmp_path / "ix")["passages"] == 3


def test_a_second_writer_sees_the_first_writers_commit(tmp_path):
    first = build(tmp_path / "ix")
    second = EmbeddedStore.open(tmp_path / "ix", FakeBagOfWordsEmbedder())
    first.add_passages([passage("One", "from the first writer")])
    second.add_passages([passage("Two", "from the second writer")])  # reloads under the lock
    final = EmbeddedStore.open(tmp_path / "ix", FakeBagOfWordsEmbedder())
    assert final.count("passage") == 5


def test_the_lock_keeps_a_second_writer_out(tmp_path):
    store = build(tmp_path / "ix")
    other = EmbeddedStore.open(tmp_path / "ix", FakeBagOfWordsEmbedder(), lock_timeout_s=0.2)
    with store.transaction(), pytest.raises(StoreError, match="locked"):
        other.add_passages([passage("Blocked", "cannot get in")])


def test_only_two_generations_are_kept(tmp_path):
    store = build(tmp_path / "ix")
    for i in range(4):
        store.add_passages([passage(f"G{i}", f"generation {i}")])
    assert len(list((tmp_path / "ix").glob("gen-*"))) == generations.KEEP_GENERATIONS


def test_extraction_marks(tmp_path):
    store = build(tmp_path / "ix")
    store.mark_extracted([P1.id])
    assert [p.id for p in store.unextracted_passages()] == [P2.id, P3.id]
