"""The small caches beside a store are derived state under the one freshness rule
(``changes.bring_up_to_date``), keyed by the index stamp: the embedded store's live node
rows (``LiveNodes``) and Elasticsearch's recent triple documents (``RecentTriples``)."""

from __future__ import annotations

from pathlib import Path

from support.fakes import make_passage

from gear_agent.embedding.hashing import HashingEmbedder
from gear_agent.ids import node_id
from gear_agent.store.changes import Changes, Stamp
from gear_agent.store.elasticsearch.recent_triples import RecentTriples
from gear_agent.store.embedded.nodes import LiveNodes
from gear_agent.store.embedded.store import EmbeddedStore
from gear_agent.types import Node

ALPHA = make_passage("Alpha", "Alpha Base lies near Kestrel Lake.")
BRAVO = make_passage("Bravo", "Bravo Station lies near Kestrel Lake.")


def _node(text: str, passage_id: str) -> Node:
    return Node(node_id("aggregate", "relatedness", 0, text), "aggregate", "relatedness", 0, text,
                (passage_id,), entity=text.lower())


def _open(path: Path) -> EmbeddedStore:
    return EmbeddedStore.open(path, HashingEmbedder(64))


def test_the_live_nodes_follow_the_stamp_of_each_commit_of_any_process(tmp_path: Path) -> None:
    reader, writer = _open(tmp_path / "ix"), _open(tmp_path / "ix")
    try:
        writer.passages.add([ALPHA, BRAVO])
        kestrel, alpha = _node("Kestrel Lake", ALPHA.id), _node("Alpha Base", ALPHA.id)
        writer.nodes.add([kestrel, alpha])
        vector = reader.embedder.embed_one("Kestrel Lake")
        assert reader.nodes.count() == 2
        with reader.snapshot():
            assert reader.nodes._live.stamp == reader.stamp()  # the cache names the commit it reflects
        writer.nodes.remove([kestrel.id])  # another process's commit: a new stamp
        assert reader.nodes.count() == 1
        assert [h.id for h in reader.nodes.search(vector, 5)] == [alpha.id]
        writer.passages.remove([ALPHA.id])  # the nodes of a removed passage go in its commit
        assert reader.nodes.count() == 0 and reader.nodes.search(vector, 5) == []
        bravo = _node("Bravo Station", BRAVO.id)
        reader.nodes.add([bravo])  # this process's own write
        assert reader.nodes.count() == 1 and reader.nodes.vectors([bravo.id]).shape == (1, 64)
    finally:
        reader.close()
        writer.close()


def test_a_snapshot_reads_the_live_nodes_of_its_own_commit(tmp_path: Path) -> None:
    reader, writer = _open(tmp_path / "ix"), _open(tmp_path / "ix")
    try:
        writer.passages.add([ALPHA])
        writer.nodes.add([_node("Kestrel Lake", ALPHA.id)])
        with reader.snapshot():
            assert reader.nodes.count() == 1
            writer.nodes.clear()
            assert reader.nodes.count() == 1  # still the pinned commit
        assert reader.nodes.count() == 0
    finally:
        reader.close()
        writer.close()


def test_live_nodes_are_read_again_for_any_change() -> None:
    reads: list[int] = []

    def read() -> list[tuple[int, str]]:
        reads.append(1)
        return [(0, "n-1")]

    live = LiveNodes(read)
    assert not live.can_apply(Changes(1, 2))  # the feed does not list nodes
    live.rebuild(None, 2)
    assert live.ids == ["n-1"] and len(reads) == 1


class _Feed:
    """A store's change feed as :func:`bring_up_to_date` reads it."""

    def __init__(self, stamp: Stamp, changes: Changes | None = None, known: bool = True) -> None:
        self.now, self.changes, self.known, self.asked = stamp, changes, known, 0

    def stamp(self) -> Stamp:
        return self.now

    def knows(self, stamp: Stamp) -> bool:
        return self.known

    def changes_since(self, generation: int) -> Changes:
        self.asked += 1
        assert self.changes is not None
        return self.changes


def _hit(tid: str, pid: str) -> dict:
    return {"_id": tid, "_source": {"id": tid, "passage_id": pid}}


def test_recent_triples_drop_what_the_feed_removed() -> None:
    recent = RecentTriples()
    recent.current(_Feed(Stamp("ix", 3)))  # none kept: the stamp is taken, the feed not read
    recent.remember([_hit("t-1", "p-1"), _hit("t-2", "p-1"), _hit("t-3", "p-2"), _hit("t-4", "p-3")])
    feed = _Feed(Stamp("ix", 5), Changes(3, 5, passages_removed=("p-1",), triples_removed=("t-4",)))
    recent.current(feed)
    assert recent.found(["t-1", "t-2", "t-3", "t-4"]).keys() == {"t-3"}
    assert recent.stamp == Stamp("ix", 5)
    recent.current(feed)  # the same stamp: fresh
    assert feed.asked == 1


def test_recent_triples_are_forgotten_where_the_feed_cannot_say() -> None:
    for feed in (_Feed(Stamp("ix", 5), Changes(3, 5, complete=False)),  # before the feed began
                 _Feed(Stamp("other", 5), known=False)):  # another index under the same names
        recent = RecentTriples()
        recent.current(_Feed(Stamp("ix", 3)))
        recent.remember([_hit("t-1", "p-1")])
        recent.current(feed)
        assert len(recent) == 0 and recent.stamp == feed.now


def test_recent_triples_keep_the_latest_and_a_write_forgets_them() -> None:
    recent = RecentTriples(limit=2)
    recent.remember([_hit("t-1", "p"), _hit("t-2", "p"), _hit("t-3", "p")])
    assert list(recent.found(["t-1", "t-2", "t-3"])) == ["t-2", "t-3"]
    recent.clear()
    assert len(recent) == 0 and recent.stamp is None


def test_a_derived_structure_that_reads_no_feed_is_rebuilt_at_a_new_stamp_without_it() -> None:
    from gear_agent.store.changes import bring_up_to_date

    live = LiveNodes(lambda: [(3, "n-3")])
    feed = _Feed(Stamp("ix", 4, "c4"))  # changes_since would fail: no changes given
    live.stamp = Stamp("ix", 2, "c2")  # a stamp of this index's history
    assert bring_up_to_date(live, feed) is True
    assert live.ids == ["n-3"] and live.stamp == Stamp("ix", 4, "c4") and feed.asked == 0
    assert bring_up_to_date(live, feed) is False  # equal stamps: fresh
