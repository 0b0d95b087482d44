"""The embedded ANN parts are derived state under the one freshness rule
(``changes.bring_up_to_date`` over ``AnnParts``): the write path takes in the changes since the
stamp this process last brought them to, whoever made them; an unknown stamp (a first use,
another index's parts) rebuilds what cannot be used; a process that only reads builds nothing."""

from __future__ import annotations

from pathlib import Path

from gear_agent.embedding.hashing import HashingEmbedder
from gear_agent.ids import passage_id
from gear_agent.store import ann
from gear_agent.store.changes import Stamp
from gear_agent.store.embedded.check import check_index
from gear_agent.store.embedded.store import EmbeddedStore
from gear_agent.types import Passage

POLICY = ann.AnnPolicy(min_rows=50, tail_max=10, piece_rows=100)


def _docs(start: int, stop: int) -> list[Passage]:
    texts = [(f"D{i}", f"document {i} about topic {i % 13} and theme {i % 7}") for i in range(start, stop)]
    return [Passage(passage_id(t, x), t, x, "test") for t, x in texts]


def _open(path: Path) -> EmbeddedStore:
    return EmbeddedStore.open(path, HashingEmbedder(32), ann=POLICY)


def _spans(store: EmbeddedStore) -> list[tuple[int, int]]:
    return [(p.start, p.stop) for p in store.view("passage").ann.parts]


def test_the_write_path_takes_in_the_changes_since_its_stamp_whoever_made_them(tmp_path: Path) -> None:
    ours, theirs = _open(tmp_path / "ix"), _open(tmp_path / "ix")
    try:
        ours.passages.add(_docs(0, 150))
        ours.maintain()
        assert _spans(ours) == [(0, 100), (100, 150)]
        held = ours.ann_parts.stamp
        assert held is not None and ours.knows(held)
        generation = ours.generation()
        assert ours.ann_parts.update(ours) == [] and ours.generation() == generation  # fresh: no commit

        theirs.passages.add(_docs(150, 260))  # another process's write, no maintenance of its own
        theirs.passages.remove([_docs(0, 1)[0].id])
        assert _spans(ours) == [(0, 100), (100, 150)]  # the new rows are searched exactly meanwhile
        ours.maintain()
        assert _spans(ours) == [(0, 100), (100, 200), (200, 260)]
        assert ours.ann_parts.stamp is not None and ours.ann_parts.stamp.generation > held.generation
        query = ours.embedder.embed_one("topic 5 and theme 2")
        assert ours.passages.vector_search(query, 5) == ours.passages.exact_vector_search(query, 5)
    finally:
        ours.close()
        theirs.close()


def test_a_process_that_only_reads_builds_no_part(tmp_path: Path) -> None:
    writer, reader = _open(tmp_path / "ix"), _open(tmp_path / "ix")
    try:
        writer.passages.add(_docs(0, 120))
        generation = writer.generation()
        query = reader.embedder.embed_one("document 7 about topic 7")
        assert reader.passages.vector_search(query, 5) == reader.passages.exact_vector_search(query, 5)
        assert reader.generation() == generation and _spans(reader) == []
        assert reader.ann_parts.stamp is None
    finally:
        writer.close()
        reader.close()


def test_parts_of_another_index_are_dropped_and_built_again(tmp_path: Path) -> None:
    store = _open(tmp_path / "ix")
    try:
        store.passages.add(_docs(0, 120))
        store.maintain()
        good = store.view("passage").ann.parts
        foreign = [ann.PartInfo(p.file, p.start, p.stop, p.checksum, Stamp("another", 1, "c").as_dict())
                   for p in good]
        with store.transaction():  # as a folder holding another index's part list would
            store.passage_parts.db.set_meta("ann:passage", ann.dump_parts(foreign))
    finally:
        store.close()
    item = next(i for i in check_index(tmp_path / "ix").items if i.name == "passage ANN")
    assert not item.ok and item.derived and "another index" in item.detail
    store = _open(tmp_path / "ix")  # a new process: no stamp yet, so a rebuild
    try:
        assert _spans(store) == [] and "another index" in store.view("passage").ann.problems[0]
        store.maintain()
        rebuilt = store.view("passage").ann.parts
        assert [(p.start, p.stop, p.checksum) for p in rebuilt] == [(p.start, p.stop, p.checksum) for p in good]
        assert all(p.stamp is not None and p.stamp.index_id == store.index_id() for p in rebuilt)
        assert not store.view("passage").ann.problems
    finally:
        store.close()
    assert next(i for i in check_index(tmp_path / "ix").items if i.name == "passage ANN").ok
