"""``gear check`` verifies the identity stamp of every derived structure that records one, as
it does the PPR graph's: the SiReRAG pool (both backends) and Elasticsearch's expansion
cache. A stale or foreign one is named, and ``check --repair`` rebuilds it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from support.cli import run_cli
from support.fakes import make_passage, make_triple

from gear_agent.config import GearSettings
from gear_agent.embedding.hashing import HashingEmbedder
from gear_agent.sirerag import build_ablation
from gear_agent.store.changes import Stamp
from gear_agent.store.check_report import CheckReport, stamp_problem
from gear_agent.store.embedded.check import check_index
from gear_agent.store.embedded.store import EmbeddedStore

HASHING = {"GEAR_EMBEDDING_MODEL": "hashing-384"}
ALPHA = make_passage("Alpha", "Alpha Base lies near Kestrel Lake.")
BRAVO = make_passage("Bravo", "Bravo Station lies near Kestrel Lake.")
TRIPLES = [make_triple(ALPHA, "Alpha Base", "near", "Kestrel Lake"),
           make_triple(BRAVO, "Bravo Station", "near", "Kestrel Lake")]
FOREIGN = json.dumps(Stamp("another-index", 2, "0123").as_dict())


def _item(report: CheckReport, name: str):  # noqa: ANN202 - a CheckItem
    return next(i for i in report.items if i.name == name)


def test_stamp_problems_name_what_is_wrong() -> None:
    held = Stamp("ix", 4, "c4")
    assert stamp_problem("f", held, "ix", 6, lambda s: True) is None  # behind: brought up to date at next use
    assert "no stamp" in stamp_problem("f", None, "ix", 6, lambda s: True)
    assert "another index" in stamp_problem("f", held, "other", 6, lambda s: True)
    assert "past this index's last commit 3" in stamp_problem("f", held, "ix", 3, lambda s: True)
    assert "rolled back and written again" in stamp_problem("f", held, "ix", 6, lambda s: False)


def test_a_foreign_sirerag_pool_is_named_by_check_and_rebuilt_by_repair(tmp_path: Path) -> None:
    index = tmp_path / "index"
    store = EmbeddedStore.open(index, HashingEmbedder(384))
    try:
        store.passages.add([ALPHA, BRAVO])
        store.triples.add(TRIPLES)
        build_ablation(store)
        assert _item(check_index(index), "SiReRAG pool").ok
        store.nodes.set_meta({"stamp": FOREIGN})  # as a pool of another index would record
    finally:
        store.close()
    item = _item(check_index(index), "SiReRAG pool")
    assert not item.ok and item.derived and "reflects another index" in item.detail
    checked = run_cli("check", "--index", str(index), env=HASHING)
    assert checked.exit_code == 1 and "SiReRAG pool" in checked.output
    repaired = run_cli("check", "--repair", "--index", str(index), env=HASHING)
    assert repaired.exit_code == 0, repaired.output
    assert "rebuilt the SiReRAG pool" in repaired.output
    item = _item(check_index(index), "SiReRAG pool")
    assert item.ok, item.detail
    store = EmbeddedStore.open(index, HashingEmbedder(384))
    try:
        assert Stamp.from_dict(json.loads(store.nodes.get_meta("stamp") or "null")).index_id == store.index_id()
    finally:
        store.close()


def test_an_index_without_a_pool_has_no_pool_item(tmp_path: Path) -> None:
    store = EmbeddedStore.open(tmp_path / "index", HashingEmbedder(64))
    try:
        store.passages.add([ALPHA])
    finally:
        store.close()
    assert "SiReRAG pool" not in [i.name for i in check_index(tmp_path / "index").items]


@pytest.fixture
def fake_es(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):  # noqa: ANN201
    pytest.importorskip("elasticsearch", reason="the elasticsearch client is not installed")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "conformance"))
    from es_fake import FakeElasticsearch

    import gear_agent.store.elasticsearch.check as es_check
    import gear_agent.store.elasticsearch.store as es_store

    server = FakeElasticsearch()
    monkeypatch.setattr(es_check, "make_client", lambda settings: server.client())
    monkeypatch.setattr(es_store, "make_client", lambda settings: server.client())
    settings = GearSettings(backend="elasticsearch", es_url="http://fake-es:9200", es_index_prefix="stamps",
                            es_cache_dir=tmp_path / "es-cache")
    return server, settings


def _es_check(settings: GearSettings) -> CheckReport:
    """``gear check`` of the fake's indices (``make_client`` answers with the fake)."""
    from gear_agent.store.elasticsearch.check import check_elasticsearch

    return check_elasticsearch(settings)


def test_a_stale_expansion_cache_and_pool_on_elasticsearch_are_named_and_rebuilt(fake_es) -> None:  # noqa: ANN001
    from gear_agent.store.elasticsearch.check import repair_elasticsearch
    from gear_agent.store.elasticsearch.graph_cache import CACHE_FILE
    from gear_agent.store.elasticsearch.store import ElasticsearchStore

    server, settings = fake_es
    embedder = HashingEmbedder(64)
    store = ElasticsearchStore(settings, embedder, client=server.client(), sleep=lambda _s: None)
    try:
        store.passages.add([ALPHA, BRAVO])
        store.triples.add(TRIPLES)
        assert store.triples.of_passages([ALPHA.id]) == [[TRIPLES[0].id]]  # the first expansion: saved
        build_ablation(store)
        folder = store.derived_dir
        manifest = folder / CACHE_FILE
        assert manifest.exists()
    finally:
        store.close()
    report = _es_check(settings)
    assert report.ok, [(i.name, i.detail) for i in report.items if not i.ok]
    assert _item(report, "expansion cache").ok and _item(report, "SiReRAG pool").ok

    body = json.loads(manifest.read_text(encoding="utf-8"))
    body["stamp"]["index_id"] = "indices-made-again"  # another index under the same names
    manifest.write_text(json.dumps(body), encoding="utf-8")
    store = ElasticsearchStore(settings, embedder, client=server.client(), sleep=lambda _s: None)
    try:
        store.nodes.set_meta({"stamp": FOREIGN})
    finally:
        store.close()
    report = _es_check(settings)
    cache, pool = _item(report, "expansion cache"), _item(report, "SiReRAG pool")
    assert not cache.ok and cache.derived and "reflects another index" in cache.detail
    assert not pool.ok and pool.derived and "reflects another index" in pool.detail
    assert report.repairable

    assert repair_elasticsearch(settings, report, embedder) == ["rebuilt the expansion cache from the triple index"]
    assert _item(_es_check(settings), "expansion cache").ok

    manifest.with_suffix(".npy").write_bytes(b"damaged")
    cache = _item(_es_check(settings), "expansion cache")
    assert not cache.ok and "fails its checksum" in cache.detail


def test_a_pool_behind_the_index_is_ok_and_says_so(tmp_path: Path) -> None:
    index = tmp_path / "index"
    store = EmbeddedStore.open(index, HashingEmbedder(64))
    try:
        store.passages.add([ALPHA, BRAVO])
        store.triples.add(TRIPLES)
        build_ablation(store)
        store.passages.add([make_passage("Charlie", "Charlie Camp lies near Osprey Ridge.")])
    finally:
        store.close()
    item = _item(check_index(index), "SiReRAG pool")
    assert item.ok and "commit(s) behind" in item.detail
