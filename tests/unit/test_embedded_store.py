import multiprocessing
import os
from pathlib import Path

import numpy as np
import pytest
from support.fakes import CountingEmbedder

from gear_agent.ids import passage_id, triple_id
from gear_agent.store.base import ModelMismatchError, StoreError
from gear_agent.store.embedded.store import EmbeddedStore, read_manifest
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
    store = EmbeddedStore.open(path, embedder or CountingEmbedder())
    store.passages.add([P1, P2, P3])
    store.triples.add([T1, T2, T3, T4])
    return store


def test_adding_the_same_passage_twice_is_a_no_op(tmp_path):
    embedder = CountingEmbedder()
    store = build(tmp_path / "ix", embedder)
    before = embedder.texts_embedded
    again = store.passages.add([P1, passage("Paris", "  Paris is the capital of France. ")])
    assert again.added == [] and len(again.existing) == 2
    assert embedder.texts_embedded == before  # nothing re-embedded
    assert store.passages.count() == 3


def test_adding_new_passages_embeds_only_those(tmp_path):
    embedder = CountingEmbedder()
    build(tmp_path / "ix", embedder)
    reopened = EmbeddedStore.open(tmp_path / "ix", embedder)
    embedder.calls.clear()
    new = [passage(f"N{i}", f"new passage number {i}") for i in range(10)]
    result = reopened.passages.add([P1, *new])
    assert len(result.added) == 10 and embedder.texts_embedded == 10


def test_reopen_restores_everything(tmp_path):
    store = build(tmp_path / "ix")
    reopened = EmbeddedStore.open(tmp_path / "ix", CountingEmbedder())
    assert reopened.passages.get([P2.id, P1.id]) == [P2, P1]
    assert reopened.triples.of_passage(P2.id) == [T2.id, T4.id]
    np.testing.assert_allclose(reopened.triples.vectors([T3.id]), store.triples.vectors([T3.id]))
    assert reopened.passages.bm25_search("Italy", 3)[0].id == P3.id


def test_neighbours_share_head_or_tail_after_normalisation(tmp_path):
    store = build(tmp_path / "ix")
    assert set(store.triples.neighbours(T1.id)) == {T2.id}  # "Paris" == "paris "
    assert set(store.triples.neighbours(T2.id)) == {T1.id, T4.id}  # via paris and via Seine
    assert store.triples.neighbours(T3.id) == []


def test_model_mismatch_is_refused_with_both_names(tmp_path):
    build(tmp_path / "ix")
    with pytest.raises(ModelMismatchError, match="hashing-64.*other-model"):
        EmbeddedStore.open(tmp_path / "ix", CountingEmbedder(name="other-model"))
    with pytest.raises(ModelMismatchError, match="dimension 64"):
        EmbeddedStore.open(tmp_path / "ix", CountingEmbedder(dimension=32))


def test_delete_removes_triples_and_graph_edges(tmp_path):
    store = build(tmp_path / "ix")
    assert store.passages.remove([P1.id, "p-unknown"]) == [P1.id]
    assert store.triples.get([T1.id]) == []
    assert store.triples.neighbours(T2.id) == [T4.id]  # the edge through Paris went with T1
    assert store.triples.count() == 3
    reopened = EmbeddedStore.open(tmp_path / "ix", CountingEmbedder())
    assert reopened.passages.count() == 2 and reopened.triples.neighbours(T2.id) == [T4.id]
    assert all(h.id != P1.id for h in reopened.passages.bm25_search("France", 5))


def test_delete_by_source(tmp_path):
    store = build(tmp_path / "ix")
    assert sorted(store.passages.remove_source("b.txt")) == sorted([P2.id, P3.id])
    assert store.passages.count() == 1 and store.triples.count() == 1


def test_triples_must_name_a_stored_passage(tmp_path):
    store = EmbeddedStore.open(tmp_path / "ix", CountingEmbedder())
    with pytest.raises(StoreError, match="not stored"):
        store.triples.add([T1])


def test_opening_a_missing_index_without_create_says_what_to_do(tmp_path):
    with pytest.raises(StoreError, match="gear index"):
        EmbeddedStore.open(tmp_path / "nothing", CountingEmbedder(), create=False)


def _crash_during_commit(path: str, stage: str) -> None:
    store = EmbeddedStore.open(Path(path), CountingEmbedder())
    if stage == "vectors":  # vectors appended and flushed, the transaction never commits
        vector_file = store.passage_parts.vectors.file
        original = vector_file.append

        def dying(start, vectors):
            original(start, vectors)
            os._exit(9)

        vector_file.append = dying
    else:  # every row written inside the transaction, killed just before COMMIT
        original_meta = store.db.set_meta

        def dying_meta(key, value):
            if key == "committed_at":
                os._exit(9)
            original_meta(key, value)

        store.db.set_meta = dying_meta
    store.passages.add([passage("Crash", "this write never commits")])


@pytest.mark.parametrize("stage", ["vectors", "before-commit"])
def test_a_write_killed_midway_leaves_the_last_good_index_readable(tmp_path, stage):
    build(tmp_path / "ix")
    process = multiprocessing.get_context("spawn").Process(
        target=_crash_during_commit, args=(str(tmp_path / "ix"), stage)
    )
    process.start()
    process.join(60)
    assert process.exitcode == 9
    reopened = EmbeddedStore.open(tmp_path / "ix", CountingEmbedder())
    assert reopened.passages.count() == 3 and reopened.triples.count() == 4
    # the next writer trims what the dead one appended and commits normally
    reopened.passages.add([passage("After", "a later write")])
    final = EmbeddedStore.open(tmp_path / "ix", CountingEmbedder())
    assert final.passages.count() == 4
    assert final.passages.vector_search(CountingEmbedder().embed_one("After\na later write"), 1)[0].id == \
        passage("After", "a later write").id
    assert final.passage_parts.vectors.file.stored_rows() == 4


def test_transaction_rolls_back_on_error(tmp_path):
    store = build(tmp_path / "ix")
    with pytest.raises(RuntimeError), store.transaction():
        store.passages.add([passage("Gone", "never committed")])
        raise RuntimeError("boom")
    assert store.passages.count() == 3
    assert read_manifest(tmp_path / "ix")["passages"] == 3
    assert store.passages.get([passage("Gone", "never committed").id]) == []


def test_a_second_writer_sees_the_first_writers_commit(tmp_path):
    first = build(tmp_path / "ix")
    second = EmbeddedStore.open(tmp_path / "ix", CountingEmbedder())
    first.passages.add([passage("One", "from the first writer")])
    second.passages.add([passage("Two", "from the second writer")])  # reloads under the lock
    final = EmbeddedStore.open(tmp_path / "ix", CountingEmbedder())
    assert final.passages.count() == 5


def test_the_lock_keeps_a_second_writer_out(tmp_path):
    store = build(tmp_path / "ix")
    other = EmbeddedStore.open(tmp_path / "ix", CountingEmbedder(), lock_timeout_s=0.2)
    with store.transaction(), pytest.raises(StoreError, match="locked"):
        other.passages.add([passage("Blocked", "cannot get in")])


def test_many_commits_keep_bm25_segments_few_and_scores_exact(tmp_path):
    from support.bm25_reference import BM25Index

    from gear_agent.store.embedded.postings import MERGE_FACTOR
    from gear_agent.text.tokenizer import tokenize

    store = build(tmp_path / "ix")
    extra = [passage(f"G{i}", f"generation {i} of river number {i % 5}") for i in range(40)]
    for p in extra:
        store.passages.add([p])
    store.passages.remove([extra[3].id, P2.id])
    segments = store.db.one("SELECT COUNT(*) FROM segments WHERE collection='passage'")[0]
    assert segments < 2 * MERGE_FACTOR
    live = list(store.passages.iterate())
    reference = BM25Index([tokenize(p.content) for p in live])
    for query in ("river number 3", "generation 7", "capital of Italy"):
        indices, scores = reference.search(tokenize(query), 10)
        hits = store.passages.bm25_search(query, 10)
        assert [h.id for h in hits] == [live[i].id for i in indices]
        np.testing.assert_allclose([h.score for h in hits], scores, rtol=1e-5)


def test_extraction_marks(tmp_path):
    store = build(tmp_path / "ix")
    store.passages.mark_extracted([P1.id])
    assert [p.id for p in store.passages.unextracted()] == [P2.id, P3.id]


def test_metadata_is_kept_and_filters_apply_before_ranking(tmp_path):
    store = EmbeddedStore.open(tmp_path / "ix", CountingEmbedder())
    docs = [
        Passage(passage_id(f"R{i}", f"revenue report {i}"), f"R{i}", f"revenue report {i}",
                f"reports/{2018 + i}/q{i}.md", {"year": 2018 + i, "tags": ["finance", f"t{i}"]})
        for i in range(6)
    ]
    store.passages.add(docs)
    assert store.passages.get([docs[2].id])[0].metadata == {"year": 2020, "tags": ["finance", "t2"]}
    recent = {"year": {"$gte": 2021}}
    hits = store.passages.bm25_search("revenue report", 10, where=recent)
    assert sorted(h.id for h in hits) == sorted(p.id for p in docs[3:])
    vector = CountingEmbedder().embed_one("revenue report 0")
    assert {h.id for h in store.passages.vector_search(vector, 10, where=["source=reports/2019"])} == {docs[1].id}
    assert store.passages.count(where={"tags": "t4"}) == 1
    assert store.passages.count(where=["year>3000"]) == 0
    assert store.passages.filter_ids([docs[5].id, "p-unknown", docs[0].id], ["year!=2018"]) == [docs[5].id]
    reopened = EmbeddedStore.open(tmp_path / "ix", CountingEmbedder())
    assert reopened.passages.get([docs[2].id])[0].metadata["year"] == 2020


def test_an_edited_record_is_detected(tmp_path):
    from gear_agent.store.base import IndexCorruptError

    store = build(tmp_path / "ix")
    with store.transaction():
        store.db.run("UPDATE passages SET text = 'Paris is the capital of Spain.' WHERE id = ?", (P1.id,))
    with pytest.raises(IndexCorruptError, match="checksum"):
        store.passages.get([P1.id])


def test_a_damaged_newest_vector_chunk_is_refused_at_open(tmp_path):
    from gear_agent.store.base import IndexCorruptError

    build(tmp_path / "ix")
    path = tmp_path / "ix" / "triple.vec"
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(IndexCorruptError, match="gear check"):
        EmbeddedStore.open(tmp_path / "ix", CountingEmbedder())


def test_an_index_of_the_previous_format_is_refused_at_open_and_migrated_by_the_command(tmp_path):
    from gear_agent.store.embedded import generations as generations
    from gear_agent.store.embedded.legacy import migrate

    root = tmp_path / "old"
    embedder = CountingEmbedder()
    passages, triples = [P1, P2, P3], [T1, T2, T3, T4]

    def write(folder):
        generations.write_jsonl(folder / "passages.jsonl", (
            {"id": p.id, "title": p.title, "text": p.text, "source": p.source, "extracted": p is P1}
            for p in passages))
        generations.write_jsonl(folder / "triples.jsonl", (
            {"id": t.id, "subject": t.subject, "predicate": t.predicate, "object": t.object,
             "passage_id": t.passage_id} for t in triples))
        generations.write_array(folder / "passage_vectors.npy", embedder.embed([p.content for p in passages]))
        generations.write_array(folder / "triple_vectors.npy", embedder.embed([t.text for t in triples]))
        generations.write_json(folder / "manifest.json", {
            "format_version": 1, "embedding_model": embedder.name, "dimension": embedder.dimension,
            "passages": 3, "triples": 4, "extracted_passages": 1})

    generations.commit_generation(root, write)
    embedder.calls.clear()
    before = sorted(str(p.relative_to(root)) for p in root.rglob("*"))
    assert read_manifest(root)["format_version"] == 1
    with pytest.raises(StoreError, match=f"gear migrate --index {root}"):  # never migrated on open
        EmbeddedStore.open(root, embedder)
    assert migrate(root, embedder) == {"passages": 3, "triples": 4}
    store = EmbeddedStore.open(root, embedder)
    assert store.passages.count() == 3 and store.triples.count() == 4
    assert [p.id for p in store.passages.unextracted()] == [P2.id, P3.id]
    assert set(store.triples.neighbours(T2.id)) == {T1.id, T4.id}
    assert embedder.texts_embedded == 0  # vectors copied, not re-embedded
    assert read_manifest(root)["format_version"] == 3
    after = {str(p.relative_to(root)) for p in root.rglob("*")}
    assert set(before) <= after  # the old generation is left exactly where it was
    with pytest.raises(StoreError, match="nothing to migrate"):
        migrate(root, embedder)  # migrated once, not twice
    again = EmbeddedStore.open(root, embedder)
    assert again.passages.count() == 3


def test_an_unreadable_previous_format_index_is_refused_and_kept(tmp_path):
    from gear_agent.store.base import IndexCorruptError
    from gear_agent.store.embedded.legacy import migrate

    root = tmp_path / "old"
    root.mkdir()
    (root / "CURRENT").write_text("gen-000007", encoding="utf-8")
    with pytest.raises(IndexCorruptError):
        migrate(root, CountingEmbedder())
    assert sorted(p.name for p in root.iterdir()) == ["CURRENT"]  # nothing left behind
    assert (root / "CURRENT").read_text(encoding="utf-8") == "gen-000007"


def test_the_lowest_similarity_is_the_negated_querys_best_hit_with_or_without_ann(tmp_path):
    # PPR's min-max normalisation: exact below the ANN size; through the parts' shallow
    # beam above it, never below the true lowest and close to it
    from gear_agent.store.ann import AnnPolicy

    embedder = CountingEmbedder()
    docs = [passage(f"D{i}", f"document {i} about topic {i % 13} and theme {i % 7}") for i in range(300)]
    exact = EmbeddedStore.open(tmp_path / "exact", embedder)
    approximate = EmbeddedStore.open(tmp_path / "ann", embedder, ann=AnnPolicy(min_rows=50, tail_max=10))
    for store in (exact, approximate):
        store.passages.add(docs)
        store.maintain()
    assert approximate.view("passage").ann.covered == 300 and exact.view("passage").ann.covered == 0
    for text in ("document about topic 5 and theme 2", "theme 6", "nothing alike"):
        query = embedder.embed_one(text)
        lowest = min(h.score for h in exact.passages.exact_vector_search(query, 300))
        assert exact.passages.lowest_similarity(query) == pytest.approx(lowest)
        assert lowest - 1e-6 <= approximate.passages.lowest_similarity(query) <= lowest + 0.05
    ann = approximate.view("passage").ann  # the shallow beam is a view of its own, over the same map
    assert [v.expansion_search for v in ann._views] == [640] and [v.expansion_search for v in ann._shallow()] == [128]
    assert ann._shallow()[0]._gear_map is ann._views[0]._gear_map
    assert EmbeddedStore.open(tmp_path / "empty", embedder).triples.lowest_similarity(query) is None


def test_ann_parts_are_built_checksummed_and_rebuilt_when_bad(tmp_path, caplog):
    from gear_agent.store.ann import AnnPolicy

    small = AnnPolicy(min_rows=50, tail_max=10)
    embedder = CountingEmbedder()
    store = EmbeddedStore.open(tmp_path / "ix", embedder, ann=small)
    docs = [passage(f"D{i}", f"document {i} about topic {i % 13} and theme {i % 7}") for i in range(300)]
    store.passages.add(docs)
    store.maintain()
    parts = list((tmp_path / "ix").glob("*.usearch"))
    assert len(parts) == 1 and store.view("passage").ann.covered == 300
    query = embedder.embed_one("document about topic 5 and theme 2")
    assert store.passages.vector_search(query, 5)[0].score == pytest.approx(
        store.passages.exact_vector_search(query, 5)[0].score)
    more = [passage(f"E{i}", f"extra {i} about topic {i % 13}") for i in range(40)]
    store.passages.add(more)
    found = store.passages.vector_search(embedder.embed_one(more[-1].content), 1)
    assert found[0].id == more[-1].id  # the tail past the ANN is searched exactly
    store.maintain()
    assert store.view("passage").ann.covered == 340
    names = sorted(p.name for p in (tmp_path / "ix").glob("*.usearch"))
    assert names == ["passage-0-300.usearch", "passage-300-340.usearch"]  # a small second part
    damaged = tmp_path / "ix" / "passage-300-340.usearch"
    damaged.write_bytes(damaged.read_bytes()[:-100])
    reopened = EmbeddedStore.open(tmp_path / "ix", embedder, ann=small)
    assert reopened.view("passage").ann.covered == 300 and reopened.view("passage").ann.problems
    assert reopened.passages.vector_search(query, 1)[0].id == store.passages.exact_vector_search(query, 1)[0].id
    reopened.maintain()
    assert reopened.view("passage").ann.covered == 340 and not reopened.view("passage").ann.problems
    store.passages.add([passage(f"F{i}", f"more {i}") for i in range(200)])
    store.maintain()  # 200 new rows: at least half of the parts before, so all fold into one
    names = sorted(p.name for p in (tmp_path / "ix").glob("*.usearch"))
    assert names == ["passage-0-540.usearch"]
