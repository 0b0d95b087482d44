"""``gear snapshot`` on a live Elasticsearch cluster (issue 36, item 6): the first one
registers an ``fs`` repository under the cluster's ``path.repo`` (the test cluster has one:
``tests/support/es_cluster.py``) and snapshots the index; ``gear snapshot --restore`` puts
the newest back after an index was lost, keeping the state before as a snapshot of its own;
``gear check`` offers it when an index is missing and ``gear check --repair`` restores it,
naming the commits after the snapshot that it could not bring back."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.tiny_corpus import CORPUS, make_settings
from typer.testing import CliRunner

from gear_agent.cli import app
from gear_agent.embedding.hashing import HashingEmbedder
from gear_agent.ids import passage_id, triple_id
from gear_agent.store import open_store
from gear_agent.store.elasticsearch.client import make_client
from gear_agent.store.elasticsearch.snapshot import indices_of
from gear_agent.types import Passage, Triple

pytestmark = pytest.mark.es


def gear(*args: str, code: int = 0) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == code, result.output
    return " ".join(result.output.split())


def es_index(es_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, prefix: str):  # noqa: ANN201
    """Settings (also set in the environment, for the CLI) and an open store of the corpus."""
    for name, value in {"GEAR_BACKEND": "elasticsearch", "GEAR_ES_INDEX_PREFIX": prefix,
                        "GEAR_ES_CACHE_DIR": str(tmp_path / "cache"), "GEAR_EMBEDDING_MODEL": "hashing-64"}.items():
        monkeypatch.setenv(name, value)
    settings = make_settings(backend="elasticsearch", es_url=es_url, es_index_prefix=prefix,
                             es_cache_dir=tmp_path / "cache", embedding_model="hashing-64")
    store = open_store(settings, HashingEmbedder(64), create=True)
    passages = [Passage(passage_id(t, text), t, text, "test") for t, (text, _) in CORPUS.items()]
    store.passages.add(passages)
    store.triples.add([Triple(triple_id(p.id, *spo), *spo, p.id) for p in passages for spo in CORPUS[p.title][1]])
    return settings, store, passages


@contextlib.contextmanager
def es_client(settings: Any, prefix: str) -> Iterator[Any]:
    """A client of the cluster for the test's body; the prefix's indices are deleted after it."""
    client = make_client(settings)
    try:
        yield client
    finally:
        client.indices.delete(index=",".join(indices_of(prefix)), ignore_unavailable=True)
        client.close()


def test_snapshot_registers_a_repository_and_restore_brings_a_lost_index_back(
        es_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prefix = f"snap-{uuid.uuid4().hex[:8]}"
    settings, store, _ = es_index(es_url, tmp_path, monkeypatch, prefix)
    store.close()

    taken = gear("snapshot")
    assert f"in repository {prefix}-snapshots (registered now, type fs, under path.repo)" in taken
    assert f"{prefix}-passages" in taken and f"{prefix}-triples" in taken
    assert "registered now" not in gear("snapshot")  # the second finds the repository

    with es_client(settings, prefix) as client:
        client.indices.delete(index=f"{prefix}-passages")  # the texts are gone
        restored = gear("snapshot", "--restore")
        assert f"{prefix}-passages: absent -> {len(CORPUS)}" in restored, restored
        assert client.count(index=f"{prefix}-passages")["count"] == len(CORPUS)
        kept = client.snapshot.get(repository=f"{prefix}-snapshots", snapshot=f"{prefix}-before-restore-*")
        assert [s["state"] for s in kept["snapshots"]] in (["SUCCESS"], ["PARTIAL"])
        assert f"{prefix}-triples" in kept["snapshots"][0]["indices"]  # the state before, kept


def test_restore_without_a_snapshot_says_so_in_one_line(es_url: str, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    prefix = f"snap-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("GEAR_BACKEND", "elasticsearch")
    monkeypatch.setenv("GEAR_ES_INDEX_PREFIX", prefix)
    monkeypatch.setenv("GEAR_ES_SNAPSHOT_REPOSITORY", f"{prefix}-none")
    result = CliRunner().invoke(app, ["snapshot", "--restore"])
    assert result.exit_code == 2 and "error:" in result.output and len(result.output.strip().splitlines()) == 1, \
        result.output


def test_check_offers_the_snapshot_and_repair_restores_it_naming_the_commits_lost(
        es_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prefix = f"snap-{uuid.uuid4().hex[:8]}"
    settings, store, passages = es_index(es_url, tmp_path, monkeypatch, prefix)
    with es_client(settings, prefix) as client:
        gear("snapshot")
        held = store.generation()
        later = [Passage(passage_id(f"Later {i}", f"Written after the snapshot {i}."), f"Later {i}",
                         f"Written after the snapshot {i}.", "later") for i in range(3)]
        store.passages.add(later)  # a commit after the snapshot ...
        store.passages.remove([passages[0].id])  # ... and one that deletes a passage and its triples
        assert store.generation() == held + 2
        store.close()
        assert "ok" in gear("check")
        client.indices.delete(index=f"{prefix}-triples")  # the triples are gone

        checked = gear("check", code=1)
        assert f"{prefix}-triples is missing" in checked and "--repair restores it from snapshot " in checked, checked
        repaired = gear("check", "--repair")
        assert f"repaired: restored snapshot {prefix}-snapshot-" in repaired, repaired
        assert f"{prefix}-triples: absent -> " in repaired and f"{prefix}-passages: {len(CORPUS) + 2} -> {len(CORPUS)}" in repaired
        deletions = 1 + len(CORPUS[passages[0].title][1])
        assert (f"lost commit(s) {held + 1}-{held + 2} after the snapshot's commit {held} (3 passage(s) they wrote, "
                f"the triples they wrote (that index was unreadable), {deletions} deletion(s) they made (undone where the "
                "snapshot holds what they deleted))") in repaired
        assert repaired.endswith("ok"), repaired
        assert client.count(index=f"{prefix}-passages")["count"] == len(CORPUS)
        assert client.count(index=f"{prefix}-triples")["count"] == sum(len(t) for _, t in CORPUS.values())


def test_repair_without_a_snapshot_restores_nothing_and_says_the_index_is_damaged(
        es_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prefix = f"snap-{uuid.uuid4().hex[:8]}"
    settings, store, _ = es_index(es_url, tmp_path, monkeypatch, prefix)
    store.close()
    monkeypatch.setenv("GEAR_ES_SNAPSHOT_REPOSITORY", f"{prefix}-none")  # a repository that does not exist
    with es_client(settings, prefix) as client:
        client.indices.delete(index=f"{prefix}-passages")
        repaired = gear("check", "--repair", code=1)
        assert "restored" not in repaired and "--repair restores" not in repaired
        assert f"damaged: passage index: {prefix}-passages is missing" in repaired, repaired


def test_the_snapshot_cost_benchmark_measures_an_existing_index_and_leaves_it_as_it_was(
        es_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prefix = f"snap-{uuid.uuid4().hex[:8]}"
    settings, store, _ = es_index(es_url, tmp_path, monkeypatch, prefix)
    store.close()
    root = Path(__file__).resolve().parents[2]
    with es_client(settings, prefix) as client:
        done = subprocess.run([sys.executable, str(root / "benchmarks" / "snapshot_cost.py"), "--es-prefix", prefix,
                               "--es-restore"], capture_output=True, text=True, timeout=300, check=False,
                              env={**os.environ, "PYTHONPATH": str(root)})
        assert done.returncode == 0, done.stderr[-2000:]
        rows = [line.split(" | ") for line in done.stdout.splitlines() if line.startswith(f"| {prefix} ")]
        assert [r[4] for r in rows] == ["first", "again (2)"], done.stdout
        assert rows[0][1] == str(len(CORPUS)) and float(rows[0][7]) > 0 and float(rows[0][8].split()[0]) > 0
        assert rows[1][8].endswith(" (0)") and float(rows[1][9].rstrip(" |")) > 0, done.stdout  # nothing new; restored
        assert not client.indices.exists(index=f"snapcost-restored-{prefix}-passages")
        assert not client.snapshot.get_repository(name="*").get(f"{prefix}-snapshot-cost")
        assert client.count(index=f"{prefix}-passages")["count"] == len(CORPUS)


def test_repair_restores_over_an_index_that_is_not_gear_agents(
        es_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prefix = f"snap-{uuid.uuid4().hex[:8]}"
    settings, store, _ = es_index(es_url, tmp_path, monkeypatch, prefix)
    store.close()
    with es_client(settings, prefix) as client:
        gear("snapshot")
        client.indices.delete(index=f"{prefix}-passages")
        client.index(index=f"{prefix}-passages", document={"stray": 1}, refresh=True)  # auto-created by a write
        assert "--repair restores it from snapshot" in gear("check", code=1)
        repaired = gear("check", "--repair")
        assert f"{prefix}-passages: 1 -> {len(CORPUS)}" in repaired and "nothing lost" in repaired, repaired
        assert repaired.endswith("ok") and client.count(index=f"{prefix}-passages")["count"] == len(CORPUS)
