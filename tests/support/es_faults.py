"""Faults of a real Elasticsearch cluster, each run the same way by the tests and the table.

Every scenario runs against the test cluster of :mod:`support.es_cluster` (3 nodes in one
JVM; it stops and restarts nodes), under a fresh index prefix, with the model-free
``HashingEmbedder``, and returns a :class:`FaultOutcome`: the error the user saw (one
line), whether everything committed before the fault is still there, and whether a rerun
of the same work completed. ``tests/integration/test_es_faults.py`` asserts them;
``benchmarks/es_faults.py`` prints them as a table.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gear_agent.config import GearSettings
from gear_agent.embedding.hashing import HashingEmbedder
from gear_agent.ids import passage_id, triple_id
from gear_agent.store.base import StoreError
from gear_agent.store.elasticsearch.store import ElasticsearchStore
from gear_agent.types import Passage, Triple
from support.es_cluster import EsCluster

DIM = 64


@dataclass
class FaultOutcome:
    """What one fault did.

    Attributes:
        fault: The fault, in words.
        error: The error the call raised (its message), or "" when the call completed.
        committed_kept: Everything stored before the fault (and every write the store
            reported done) is still stored afterwards.
        rerun_ok: Running the same work again completed and left the expected counts.
        seconds: Wall time of the scenario.
        note: What else was seen (retries, which node).
    """

    fault: str
    error: str
    committed_kept: bool
    rerun_ok: bool
    seconds: float
    note: str = ""

    @property
    def one_line(self) -> bool:
        return "\n" not in self.error


def corpus(n: int, tag: str = "") -> tuple[list[Passage], list[Triple]]:
    """``n`` passages with one triple each (deterministic)."""
    passages = [Passage(passage_id(f"P{tag}{i}", f"text {i}"), f"P{tag}{i}",
                        f"Person {i} founded company {i % 97} in city {i % 13}.", "faults")
                for i in range(n)]
    triples = [Triple(triple_id(p.id, f"Person {i}", "founded", f"company {i % 97}"),
                      f"Person {i}", "founded", f"company {i % 97}", p.id)
               for i, p in enumerate(passages)]
    return passages, triples


class _SignallingEmbedder(HashingEmbedder):
    """Sets ``second_call`` when the second batch is embedded (the first bulk has been sent)."""

    def __init__(self) -> None:
        super().__init__(DIM)
        self.calls = 0
        self.second_call = threading.Event()

    def embed(self, texts):  # type: ignore[no-untyped-def]
        self.calls += 1
        if self.calls == 2:
            self.second_call.set()
        return super().embed(texts)


def _settings(url: str, prefix: str, cache: Path) -> GearSettings:
    return GearSettings(backend="elasticsearch", es_url=url, es_index_prefix=prefix, es_cache_dir=cache)


def _open(url: str, prefix: str, cache: Path, embedder: HashingEmbedder | None = None,
          **kwargs) -> ElasticsearchStore:  # type: ignore[no-untyped-def]
    return ElasticsearchStore(_settings(url, prefix, cache), embedder or HashingEmbedder(DIM), **kwargs)


def _stored_ids(url: str, prefix: str, cache: Path, ids: list[str]) -> set[str]:
    with _open(url, prefix, cache) as store:
        return {p.id for p in store.passages.get(ids)}


def _drop(cluster: EsCluster, prefix: str) -> None:
    from elasticsearch import Elasticsearch

    client = Elasticsearch(cluster.url)
    try:
        client.indices.delete(index=f"{prefix}-passages,{prefix}-triples", ignore_unavailable=True)
    finally:
        client.close()


def _seeded(cluster: EsCluster, tag: str, cache: Path, before: int, batch: int
            ) -> tuple[str, list[Passage], list[Passage]]:
    """A fresh prefix holding ``before`` passages, and a further ``batch`` to write."""
    prefix = f"fault-{tag}-{uuid.uuid4().hex[:6]}"
    stored, _ = corpus(before, "a")
    more, _ = corpus(batch, "b")
    with _open(cluster.url, prefix, cache) as store:
        store.passages.add(stored)
    return prefix, stored, more


def _restart(cluster: EsCluster, number: int, settings: dict[str, str] | None = None) -> None:
    cluster.stop_node(number)
    cluster.start_node(number, settings)
    cluster.health("green", 120)


def _timed(fault: str, run: Callable[[], FaultOutcome]) -> FaultOutcome:
    started = time.perf_counter()
    outcome = run()
    outcome.fault = fault
    outcome.seconds = time.perf_counter() - started
    return outcome


def node_stopped_during_bulk(cluster: EsCluster, cache: Path) -> FaultOutcome:
    """A data node (one holding a copy of the passage shard, not the one the client talks
    to) is stopped while ``add_passages`` sends its batches, then started again."""
    from elasticsearch import Elasticsearch

    def run() -> FaultOutcome:
        prefix, before, batch = _seeded(cluster, "bulk", cache, 200, 3000)
        client = Elasticsearch(cluster.url)
        shards = client.cat.shards(index=f"{prefix}-passages", format="json").body
        client.close()
        holders = sorted({int(s["node"].split("-")[1]) for s in shards if s.get("node")} - {1})
        victim = holders[0] if holders else 2
        embedder = _SignallingEmbedder()
        error, added = "", []
        store = _open(cluster.url, prefix, cache, embedder, bulk_batch_size=100)

        def write() -> None:
            nonlocal error, added
            try:
                added = store.passages.add(batch).added
            except StoreError as err:
                error = str(err)
                added = list(getattr(getattr(err, "result", None), "added", []) or [])

        writer = threading.Thread(target=write)
        writer.start()
        embedder.second_call.wait(60)
        cluster.stop_node(victim)
        writer.join(300)
        store.close()
        cluster.start_node(victim)
        cluster.health("green", 120)
        ids = [p.id for p in before] + added
        kept = _stored_ids(cluster.url, prefix, cache, ids) == set(ids)
        with _open(cluster.url, prefix, cache) as again:
            result = again.passages.add(batch)
            rerun = again.passages.count() == len(before) + len(batch)
        _drop(cluster, prefix)
        note = (f"node {victim} stopped after the first of 30 batches; {len(added)} written before the "
                f"call returned, {len(result.added)} by the rerun")
        return FaultOutcome("", error, kept, rerun, 0.0, note)

    return _timed("a data node stopped during a bulk write", run)


def cluster_unreachable_mid_query(cluster: EsCluster, cache: Path) -> FaultOutcome:
    """Node 1, the one the client talks to, is stopped while searches run; it is started
    again (on a new port) and the store reopened there."""

    def run() -> FaultOutcome:
        prefix = f"fault-query-{uuid.uuid4().hex[:6]}"
        passages, triples = corpus(300)
        with _open(cluster.url, prefix, cache) as store:
            store.passages.add(passages)
            store.triples.add(triples)
            expected = [h.id for h in store.passages.bm25_search("company 7 city 3", 10)]
        errors: list[str] = []
        stop = threading.Event()
        store = _open(cluster.url, prefix, cache)

        def query() -> None:
            while not stop.is_set():
                try:
                    store.passages.bm25_search("company 7 city 3", 10)
                    store.triples.vector_search(store.embedder.embed_one("Person 7 founded"), 5)
                except StoreError as err:
                    errors.append(str(err))
                    return

        reader = threading.Thread(target=query)
        reader.start()
        time.sleep(0.5)
        cluster.stop_node(1)
        reader.join(180)
        stop.set()
        store.close()
        cluster.start_node(1)
        cluster.health("green", 120)
        with _open(cluster.url, prefix, cache) as again:
            kept = again.passages.count() == len(passages) and again.triples.count() == len(triples)
            rerun = [h.id for h in again.passages.bm25_search("company 7 city 3", 10)] == expected
        _drop(cluster, prefix)
        return FaultOutcome("", errors[0] if errors else "", kept, rerun, 0.0,
                            "node 1 restarted on a new port; the same top 10 after reopening")

    return _timed("the cluster unreachable mid-query (the node the client uses stops)", run)


def index_deleted_underneath(cluster: EsCluster, cache: Path) -> FaultOutcome:
    """The passage index is deleted while a store has it open; searches and writes fail;
    no index is auto-created; reopening re-creates it and re-adding completes."""
    from elasticsearch import Elasticsearch

    def run() -> FaultOutcome:
        prefix = f"fault-gone-{uuid.uuid4().hex[:6]}"
        passages, triples = corpus(100)
        store = _open(cluster.url, prefix, cache)
        store.passages.add(passages)
        store.triples.add(triples)
        client = Elasticsearch(cluster.url)
        client.indices.delete(index=f"{prefix}-passages")
        errors = []
        for attempt in (lambda: store.passages.bm25_search("company", 3),
                        lambda: store.passages.add(corpus(5, "x")[0]),
                        lambda: store.passages.mark_extracted([passages[0].id])):
            try:
                attempt()
                errors.append("")
            except StoreError as err:
                errors.append(str(err))
        store.close()
        recreated = bool(client.indices.exists(index=f"{prefix}-passages"))
        client.close()
        with _open(cluster.url, prefix, cache) as again:
            kept = again.triples.count() == len(triples) and not recreated
            again.passages.add(passages)
            rerun = again.passages.count() == len(passages) and again.triples.add(triples).added == []
        _drop(cluster, prefix)
        failed = sum(1 for e in errors if e)
        return FaultOutcome("", next((e for e in errors if e), ""), kept and failed == 3, rerun, 0.0,
                            f"{failed}/3 calls (search, add, mark) failed; no index auto-created: {not recreated}")

    return _timed("an index deleted underneath", run)


def mapping_conflict(cluster: EsCluster, cache: Path) -> FaultOutcome:
    """``{prefix}-passages`` exists with a mapping gear-agent did not make (dynamic, as a
    write auto-creates it): opening refuses, nothing is written; and a document the mapping
    refuses (a metadata number out of a double's range) fails alone in its batch."""
    from elasticsearch import Elasticsearch

    def run() -> FaultOutcome:
        prefix = f"fault-map-{uuid.uuid4().hex[:6]}"
        client = Elasticsearch(cluster.url)
        client.index(index=f"{prefix}-passages", id="x", document={"id": 5, "text": "alien"}, refresh=True)
        error = ""
        try:
            _open(cluster.url, prefix, cache).close()
        except StoreError as err:
            error = str(err)
        untouched = client.count(index=f"{prefix}-passages")["count"] == 1 and not client.indices.exists(
            index=f"{prefix}-triples")
        client.indices.delete(index=f"{prefix}-passages")
        client.close()
        passages, _ = corpus(20)
        bad = Passage(passage_id("Bad", "number"), "Bad", "number", "faults", {"n": 10**400})
        item_error = ""
        with _open(cluster.url, prefix, cache) as store:
            try:
                store.passages.add([*passages[:10], bad, *passages[10:]])
            except StoreError as err:
                item_error = str(err)
            kept = store.passages.count() == 20
            fixed = Passage(bad.id, "Bad", "number", "faults", {"n": 1e300})
            rerun = store.passages.add([*passages, fixed]).added == [bad.id] and store.passages.count() == 21
        _drop(cluster, prefix)
        return FaultOutcome("", error, untouched and kept, rerun, 0.0,
                            f"one bad document in a batch of 21: {item_error.split(': ', 1)[-1][:160]}")

    return _timed("a mapping conflict (an index not made by gear-agent; a document it refuses)", run)


def rejected_429(cluster: EsCluster, cache: Path) -> FaultOutcome:
    """Node 1 restarted with ``indexing_pressure.memory.limit=1kb``: every bulk request it
    coordinates is answered 429 (``es_rejected_execution_exception``). The store retries
    with backoff, then fails naming the rejection; after a normal restart the rerun completes."""

    def run() -> FaultOutcome:
        prefix, before, batch = _seeded(cluster, "429", cache, 50, 500)
        _restart(cluster, 1, {"indexing_pressure.memory.limit": "1kb"})
        error, waits = "", []
        with _open(cluster.url, prefix, cache, max_retries=3, initial_backoff_s=0.1, sleep=waits.append) as store:
            try:
                store.passages.add(batch)
            except StoreError as err:
                error = str(err)
            kept = store.passages.count() == len(before)
        _restart(cluster, 1)
        with _open(cluster.url, prefix, cache) as store:
            rerun = len(store.passages.add(batch).added) == len(batch) and store.passages.count() == 550
        _drop(cluster, prefix)
        return FaultOutcome("", error, kept, rerun, 0.0,
                            f"{len(waits)} backoff waits before giving up ({', '.join(f'{w:g}' for w in waits[:4])} s)")

    return _timed("429 from the cluster (its indexing pressure limit)", run)


SCENARIOS: list[Callable[[EsCluster, Path], FaultOutcome]] = [
    node_stopped_during_bulk,
    cluster_unreachable_mid_query,
    index_deleted_underneath,
    mapping_conflict,
    rejected_429,
]
