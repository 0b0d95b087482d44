"""The triples graph expansion keeps in the process for an Elasticsearch index
(``gear_agent.store.elasticsearch.graph_cache``), without a cluster: a reader of documents stands in."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from gear_agent.store.changes import Changes, Stamp
from gear_agent.store.elasticsearch.graph_cache import CACHE_FILE, ExpansionCache
from gear_agent.store.elasticsearch.passage_vectors import PassageVectors


def _doc(tid, s, o, pid, n, vector):
    return {"id": tid, "subject": s, "predicate": "r", "object": o, "passage_id": pid, "head": s.lower(),
            "tail": o.lower(), "added_ns": n, "position": 0, "vector": list(vector)}


DOCS = [_doc("t1", "A", "B", "p1", 1, (1, 0)), _doc("t2", "B", "C", "p1", 1, (0, 1)),
        _doc("t3", "C", "A", "p2", 2, (0.6, 0.8)), _doc("t4", "A", "D", "p2", 2, (0.8, 0.6))]


def _reader(docs):
    def read(ids):
        if ids is None:
            yield list(docs)
        else:
            yield [d for d in docs if d["id"] in ids]
    return read


def test_neighbours_are_the_adjacent_triples_by_exact_cosine_ties_by_insertion_order() -> None:
    cache = ExpansionCache(2, _reader(DOCS))
    cache.rebuild(None, 1)
    assert cache.neighbours("t1", np.array([1.0, 0.0], np.float32), 10) == ["t4", "t3", "t2"]
    assert cache.neighbours("t1", np.array([0.0, 1.0], np.float32), 2) == ["t2", "t3"]
    assert cache.neighbours("t1", None, 2) == ["t2", "t3"]  # by id without a vector
    assert cache.neighbours("unknown", None, 2) == []
    assert cache.triples_of_passages(["p2", "p9"]) == [["t3", "t4"], []]
    assert [t.object for t in cache.get_triples(["t4", "nope", "t1"])] == ["D", "B"]


def test_changes_remove_then_add_in_extraction_order() -> None:
    docs = list(DOCS)
    cache = ExpansionCache(2, _reader(docs))
    cache.rebuild(None, 1)
    docs.append(_doc("t5", "A", "E", "p2", 0, (0.0, 1.0)))  # another process's clock sorts it first
    cache.apply(None, Changes(1, 2, triples_added=("t5",), triples_removed=("t3",)))
    assert cache.triples_of_passages(["p2"]) == [["t5", "t4"]]
    assert "t3" not in cache.neighbours("t1", np.array([1.0, 0.0], np.float32), 10)
    cache.apply(None, Changes(2, 3, passages_removed=("p1",)))  # a passage's triples go with it
    assert not cache.has("t1") and not cache.has("t2") and len(cache) == 2
    with pytest.raises(KeyError):
        cache.triple_vectors(["t1"])


def test_saved_copy_is_loaded_whole_or_not_at_all(tmp_path) -> None:
    cache = ExpansionCache(2, _reader(DOCS), tmp_path)
    cache.rebuild(None, 1)
    cache.stamp = Stamp("ix", 1)
    cache._save()
    loaded = ExpansionCache(2, _reader([]), tmp_path)
    assert loaded.stamp == Stamp("ix", 1) and len(loaded) == 4
    assert (loaded.triple_vectors(["t3"]) == cache.triple_vectors(["t3"])).all()
    (tmp_path / CACHE_FILE).with_suffix(".npy").write_bytes(b"not the vectors")
    assert ExpansionCache(2, _reader([]), tmp_path).stamp is None  # checksum differs: not trusted


def _tracked_rows(kept, rows: int) -> list[str]:
    """The attributes of ``kept`` (and the values of its dict attributes) that are containers
    the garbage collector tracks and that hold at least ``rows`` items."""
    found = []
    for name, value in vars(kept).items():
        for key, item in [(name, value), *((f"{name}[{k}]", v) for k, v in (value.items() if isinstance(value, dict) else []))]:
            if isinstance(item, list | tuple | dict | set) and len(item) >= rows and gc.is_tracked(item):
                found.append(key)
    return found


@pytest.mark.parametrize("kind", ["triples", "passages"])
def test_kept_rows_are_nothing_a_full_garbage_collection_walks(kind) -> None:
    """Per-row columns are tuples of strings and numbers after every fill (a read, a change
    taken in, a load), which the collector stops tracking: a full collection does not walk
    every kept row (at 190,000 triples that walk was most of a ``ppr`` question's tail)."""
    rows = 2_000
    docs = [_doc(f"t{i}", f"S{i % 50}", f"O{i % 70}", f"p{i // 3}", i, (1.0, 0.0)) for i in range(rows)]
    if kind == "triples":
        kept = ExpansionCache(2, _reader(docs))
    else:
        kept = PassageVectors(2, _reader([{"id": d["id"], "vector": d["vector"]} for d in docs]))
    kept.rebuild(None, 1)
    gc.collect()
    assert _tracked_rows(kept, rows) == []
    docs.append(_doc("t-new", "S1", "O1", "p0", rows, (0.0, 1.0)))
    kept.apply(None, Changes(1, 2, passages_added=("t-new",), triples_added=("t-new",), triples_removed=("t1",)))
    gc.collect()
    assert _tracked_rows(kept, rows) == [] and len(kept) in (rows, rows + 1)
