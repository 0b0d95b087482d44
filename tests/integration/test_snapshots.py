"""`gear snapshot`, the server's timer, and `gear check --repair` restoring a damaged
database from the newest good snapshot (hashing embedder, no model).

Each index has one commit after its snapshot, still in the WAL (a writer killed after its
commit, as the damage matrix builds it): a damaged ``index.sqlite`` is restored with that
commit replayed from the WAL; a damaged WAL loses it, and ``--repair`` names it.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli import one_line_error, run_cli

from gear_agent.config import GearSettings
from gear_agent.embedding.hashing import HashingEmbedder
from gear_agent.store.embedded.snapshot import newest_good, snapshots, take
from gear_agent.store.embedded.store import EmbeddedStore
from gear_agent.store.snapshot_timer import SnapshotTimer
from gear_agent.types import Passage

CODE = Path(__file__).resolve().parents[2]
ENV = {"GEAR_EMBEDDING_MODEL": "hashing-64"}
FIRST = [Passage(f"p-{i}", f"Lake {i}", f"Lake number {i} lies in valley {i}.", "lakes.json") for i in range(20)]
LATE = Passage("p-late", "Late Commit", "The last commit before the crash holds this passage.", "late.json")
WRITE_AND_DIE = """
import os, sys
from pathlib import Path
from gear_agent.embedding.hashing import HashingEmbedder
from gear_agent.store.embedded.store import EmbeddedStore
from gear_agent.types import Passage
store = EmbeddedStore.open(Path(sys.argv[1]), HashingEmbedder(64), create=False)
store.passages.add([Passage("p-late", "Late Commit", "The last commit before the crash holds this passage.", "late.json")])
os._exit(0)  # killed after the commit: it stays in the WAL
"""


def _ids(index: Path, query: str) -> list[str] | None:
    result = run_cli("search", query, "--index", str(index), "--retriever", "bm25", "--json", env=ENV)
    if result.exit_code != 0:
        return None
    return [p["id"] for p in json.loads(result.output[result.output.index("{"):])["passages"]]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """20 passages, a snapshot of that commit, then one more commit left in the WAL."""
    path = tmp_path_factory.mktemp("snapshots") / "ix"
    store = EmbeddedStore.open(path, HashingEmbedder(64))
    store.passages.add(FIRST)
    store.maintain()
    store.close()
    assert "snapshot of commit" in run_cli("snapshot", "--index", str(path), env=ENV).output
    subprocess.run([sys.executable, "-c", WRITE_AND_DIE, str(path)], check=True, cwd="/",
                   env={**os.environ, "PYTHONPATH": str(CODE)})
    assert (path / "index.sqlite-wal").stat().st_size > 0
    return path


@pytest.fixture
def index(pristine: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "ix"
    shutil.copytree(pristine, copy)
    return copy


def _the_error(result) -> str:  # noqa: ANN001 - click's Result
    """`gear check --repair` refused: exit 2 after its table, one `error:` line."""
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert result.exit_code == 2 and len(errors) == 1 and "Traceback" not in result.output, result.output
    return errors[0]


def _damage(path: Path, how: str) -> None:
    if how == "delete":
        path.unlink()
    elif how == "truncate":
        os.truncate(path, path.stat().st_size // 2)
    else:
        size = path.stat().st_size
        with path.open("r+b") as handle:
            handle.seek(size // 2 // 4096 * 4096)
            handle.write(bytes(4096) if how == "zero" else b"\xff" * 4096)


@pytest.mark.parametrize("how", ["delete", "truncate", "zero", "flip bytes"])
def test_a_damaged_database_is_restored_with_the_commit_after_the_snapshot_replayed(index: Path, how: str) -> None:
    _damage(index / "index.sqlite", how)
    assert run_cli("check", "--index", str(index), env=ENV).exit_code == 1
    repaired = run_cli("check", "--repair", "--index", str(index), env=ENV)
    assert repaired.exit_code == 0, repaired.output
    line = next(x for x in repaired.output.splitlines() if x.startswith("repaired: restored index.sqlite"))
    assert "replayed commits 2 from the WAL; nothing lost (now at commit 2)" in line
    assert _ids(index, "Late Commit crash")[0] == "p-late"
    assert _ids(index, "Lake number 7 valley 7")[0] == "p-7"
    assert [p.name for p in index.glob("damaged-*/*")] != []  # the damaged files are kept, not deleted


def test_damage_first_met_by_a_query_keeps_the_wal_for_the_replay(index: Path) -> None:
    """Closing the last connection folds the WAL into the database file; the copy made when
    a query first meets the damage is what the restore replays."""
    with (index / "index.sqlite").open("r+b") as handle:  # every page but the first: a query meets it
        handle.seek(4096)
        handle.write(bytes((index / "index.sqlite").stat().st_size - 4096))
    assert _ids(index, "Lake number 7 valley 7") is None  # refused in one line
    assert (index / "index.sqlite-wal.at-damage").exists()
    repaired = run_cli("check", "--repair", "--index", str(index), env=ENV)
    assert repaired.exit_code == 0, repaired.output
    assert "nothing lost" in repaired.output
    assert _ids(index, "Late Commit crash")[0] == "p-late"


@pytest.mark.parametrize("how", ["delete", "truncate", "zero", "flip bytes"])
def test_a_damaged_wal_loses_its_commit_and_the_repair_names_it(index: Path, how: str) -> None:
    _damage(index / "index.sqlite-wal", how)
    one_line_error(run_cli("search", "lake", "--index", str(index), env=ENV))
    repaired = run_cli("check", "--repair", "--index", str(index), env=ENV)
    assert repaired.exit_code == 0, repaired.output
    line = " ".join(repaired.output.split())
    assert ("could not restore commit(s) 2 (1 row(s) of passage.vec after the restored commit; their texts were "
            "only in the damaged files") in line
    assert "(now at commit 3)" in line  # past every commit made, so no cache of commit 2 matches
    assert _ids(index, "Lake number 7 valley 7")[0] == "p-7"
    assert "p-late" not in (_ids(index, "Late Commit crash") or [])
    kept = next(index.glob("damaged-*"))
    assert (kept / "passage.vec.rows-20-21").stat().st_size == 64 * 4  # the lost commit's vector, kept


def test_commits_folded_into_the_damaged_file_are_replayed_from_its_records(index: Path) -> None:
    """Damage no query met: closing the last connection folded the WAL (the commit after the
    snapshot) into the damaged file. Its passage proves itself (its CRC, and its vector's
    chunk checksum in passage.vec), so it is replayed."""
    _damage(index / "index.sqlite", "flip bytes")
    folding = sqlite3.connect(index / "index.sqlite")
    folding.execute("SELECT COUNT(*) FROM meta").fetchall()
    folding.close()
    assert not (index / "index.sqlite-wal").exists()
    assert run_cli("check", "--index", str(index), env=ENV).exit_code == 1
    repaired = run_cli("check", "--repair", "--index", str(index), env=ENV)
    assert repaired.exit_code == 0, repaired.output
    line = " ".join(repaired.output.split())
    assert ("replayed 1 passage(s), 0 triple(s), 0 deletion(s), 0 extraction mark(s) from the damaged database's "
            "records") in line and "nothing lost" in line, line
    assert _ids(index, "Late Commit crash")[0] == "p-late"
    assert _ids(index, "Lake number 7 valley 7")[0] == "p-7"


def test_without_a_snapshot_a_damaged_database_is_still_refused_in_one_line(index: Path) -> None:
    shutil.rmtree(index / "snapshots")
    _damage(index / "index.sqlite", "zero")
    line = _the_error(run_cli("check", "--repair", "--index", str(index), env=ENV))
    assert "no good snapshot to restore (`gear snapshot` takes one)" in line


def test_a_damaged_snapshot_is_passed_over(index: Path) -> None:
    newest = snapshots(index)[0]
    with newest.database.open("r+b") as handle:
        handle.write(b"\0" * 100)
    assert newest_good(index) is None
    _damage(index / "index.sqlite", "zero")
    assert "no good snapshot" in _the_error(run_cli("check", "--repair", "--index", str(index), env=ENV))


def test_snapshots_are_consistent_online_and_only_the_newest_are_kept(tmp_path: Path) -> None:
    store = EmbeddedStore.open(tmp_path / "ix", HashingEmbedder(64))
    try:
        taken = []
        for passage in FIRST[:4]:
            store.passages.add([passage])  # the store stays open: commits in its WAL
            taken.append(take(tmp_path / "ix", keep=2))
        assert take(tmp_path / "ix", keep=2, only_if_changed=True) is None
        dead = tmp_path / "ix" / "snapshots" / ".tmp-999999999-1"  # a writer killed mid-snapshot
        dead.mkdir()
        take(tmp_path / "ix", keep=2)
        assert not dead.exists()
        assert [s.generation for s in snapshots(tmp_path / "ix")] == [4, 4]
        assert taken[-1].rows["passage"] == 4 and taken[-1].bytes == taken[-1].database.stat().st_size
        store.passages.add([FIRST[4]])
    finally:
        store.close()
    copy = EmbeddedStore.open(snapshots(tmp_path / "ix")[0].path, HashingEmbedder(64), create=False, verify=False)
    try:
        assert copy.passages.count() == 4  # the commit it names, whole
    finally:
        copy.close()


def test_the_servers_timer_snapshots_only_when_the_index_changed(tmp_path: Path) -> None:
    store = EmbeddedStore.open(tmp_path / "ix", HashingEmbedder(64))
    try:
        store.passages.add(FIRST[:2])
        timer = SnapshotTimer(GearSettings(index_dir=tmp_path / "ix", snapshot_every=3600))
        assert "snapshot of commit 1" in timer.tick()
        assert timer.tick() is None
        store.passages.add(FIRST[2:3])
        assert "snapshot of commit 2" in timer.tick()
        timer.start()
        timer.stop()
        assert timer.taken == 2 and timer.last_error is None
        shutil.rmtree(tmp_path / "ix" / "snapshots")
        (tmp_path / "ix" / "snapshots").write_text("not a folder")
        assert timer.tick() is None and "snapshots" in timer.last_error  # logged, the timer goes on
    finally:
        store.close()


class _RecordingSnapshots:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict]] = []

    def get_repository(self, **kwargs):  # noqa: ANN003, ANN201
        self.calls.append(("get_repository", kwargs))
        return {kwargs["name"]: {"type": "fs"}}

    def create(self, **kwargs):  # noqa: ANN003, ANN201 - the client's keyword API
        self.calls.append(("create", kwargs))
        return {"snapshot": {"snapshot": kwargs["snapshot"], "state": "SUCCESS"}}

    def get(self, **kwargs):  # noqa: ANN003, ANN201
        self.calls.append(("get", kwargs))
        return {"snapshots": [{"snapshot": f"gear-snapshot-{i}", "state": "SUCCESS", "start_time_in_millis": i}
                              for i in range(5)]}

    def delete(self, **kwargs):  # noqa: ANN003, ANN201
        self.calls.append(("delete", kwargs))
        return {"acknowledged": True}


def test_elasticsearch_snapshots_go_to_the_repository_and_keep_the_newest() -> None:
    from types import SimpleNamespace

    from gear_agent.store.elasticsearch.snapshot import take_es_snapshot

    client = SimpleNamespace(snapshot=_RecordingSnapshots())
    settings = GearSettings(backend="elasticsearch", es_url="http://localhost:9200", snapshot_keep=2,
                            es_snapshot_repository="backups")
    line = take_es_snapshot(settings, client)
    assert client.snapshot.calls[0] == ("get_repository", {"name": "backups"})  # registered already
    create = client.snapshot.calls[1][1]
    assert create["repository"] == "backups"
    assert create["indices"] == "gear-passages,gear-triples,gear-changes,gear-nodes,gear-nodes-meta"
    assert create["wait_for_completion"] is True and create["partial"] is False
    assert [c[1]["snapshot"] for c in client.snapshot.calls if c[0] == "delete"] == [
        "gear-snapshot-2", "gear-snapshot-1", "gear-snapshot-0"]
    assert "removed 3 older" in line
    client.snapshot.calls.clear()  # without a repository set: PREFIX-snapshots
    take_es_snapshot(GearSettings(backend="elasticsearch", es_url="http://x:9200"), client)
    assert client.snapshot.calls[1][1]["repository"] == "gear-snapshots"


def test_gear_serve_snapshots_on_its_timer_while_it_is_up(tmp_path: Path) -> None:
    """GEAR_SNAPSHOT_EVERY: the app's lifespan runs the timer (started with the app, stopped
    with it)."""
    import time

    from fastapi.testclient import TestClient
    from langchain_core.runnables import RunnableLambda

    from gear_agent.serve.app import create_app

    store = EmbeddedStore.open(tmp_path / "ix", HashingEmbedder(64))
    store.passages.add(FIRST[:2])
    store.close()
    settings = GearSettings(index_dir=tmp_path / "ix", snapshot_every=0.05, embedding_model="hashing-64")
    app = create_app(RunnableLambda(lambda x: x), settings, playground=False)
    with TestClient(app, base_url="http://127.0.0.1") as client:  # an allowed host
        assert client.get("/health").status_code == 200
        deadline = time.monotonic() + 30
        while not snapshots(tmp_path / "ix") and time.monotonic() < deadline:
            time.sleep(0.05)
    assert [s.generation for s in snapshots(tmp_path / "ix")] == [1]  # once: the index did not change after
    assert app.state.snapshots.taken == 1 and app.state.snapshots.last_error is None


def test_snapshot_restore_on_the_embedded_index_points_at_check_repair(tmp_path: Path) -> None:
    line = one_line_error(run_cli("snapshot", "--restore", "--index", str(tmp_path / "ix"), env=ENV))
    assert "gear check --repair" in line
