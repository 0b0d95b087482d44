"""The embedded index's files under fuzz: damaged bytes give the project's one-line error
(or a correct answer), never another exception, and `gear check` reports the damage.

Each example copies a small built index, flips or truncates bytes of one of its files
(SQLite database, vector files, ANN part), then opens it and runs every read.
"""

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from support.fakes import CountingEmbedder

from gear_agent.errors import GearError
from gear_agent.ids import passage_id, triple_id
from gear_agent.store.embedded.check import check_index
from gear_agent.store.embedded.store import EmbeddedStore
from gear_agent.types import Passage, Triple


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    from gear_agent.store.ann import AnnPolicy

    root = tmp_path_factory.mktemp("fuzz") / "ix"
    store = EmbeddedStore.open(root, CountingEmbedder(), ann=AnnPolicy(min_rows=50))
    passages = [Passage(passage_id(f"T{i}", f"town {i} on river {i % 5}"), f"T{i}", f"town {i} on river {i % 5}",
                        f"src/{i % 3}", {"n": i}) for i in range(120)]
    store.passages.add(passages)
    store.triples.add([Triple(triple_id(p.id, p.title, "on", f"river {i % 5}"), p.title, "on", f"river {i % 5}", p.id)
                       for i, p in enumerate(passages)])
    store.maintain()
    store.close()
    return root


FILES = ["index.sqlite", "passage.vec", "triple.vec", "passage-0-120.usearch"]


def _read_everything(root: Path) -> None:
    embedder = CountingEmbedder()
    store = EmbeddedStore.open(root, embedder, create=False)
    try:
        query = embedder.embed_one("town on river 3")
        store.passages.bm25_search("river 3", 5)
        store.triples.bm25_search("river", 5, where={"n": {"$gte": 10}})
        hits = store.passages.vector_search(query, 5)
        store.triples.vector_search(query, 5)
        store.passages.get([h.id for h in hits])
        triples = list(store.triples.iterate())
        if triples:
            store.triples.neighbours(triples[0].id, query, 5)
            store.triples.vectors([triples[0].id])
        list(store.passages.iterate())
        store.passages.unextracted()
    finally:
        store.close()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.sampled_from(FILES),
    flips=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(1, 255)), min_size=1, max_size=8),
    truncate=st.one_of(st.none(), st.floats(0, 1)),
)
@example(name="index.sqlite", flips=[(0.9375, 1), (0.02224146338606392, 1)], truncate=None)
def test_damaged_files_give_one_line_errors(built, tmp_path, name, flips, truncate):
    root = tmp_path / "copy"
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(built, root)
    path = root / name
    data = bytearray(path.read_bytes())
    for where, mask in flips:
        data[int(where * len(data))] ^= mask
    if truncate is not None:
        data = data[: int(truncate * len(data))]
    path.write_bytes(bytes(data))
    try:
        _read_everything(root)
    except GearError as exc:
        assert "\n" not in str(exc).strip()
    report = check_index(root)  # never raises; says what it found
    assert report.items
    shutil.rmtree(root)
