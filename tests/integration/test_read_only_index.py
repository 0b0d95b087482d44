"""An index on a read-only volume (a container's read-only mount, a shared disk) is searched,
checked and served as it is; a write is refused in one line.

The volume is made read-only for real: each command runs in a private mount namespace with
the index folder bind-mounted read-only (root and ``unshare``; skipped otherwise), since
``chmod`` does not stop root. Before, with the ``-wal``/``-shm`` files absent (as after a
clean close or a copy), every command refused it ("SQLite needs to write index.sqlite-shm
beside the database even to read it") and ``gear check`` called it damaged.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gear_agent.embedding.hashing import HashingEmbedder
from gear_agent.store.embedded.store import EmbeddedStore
from gear_agent.types import Passage

CODE = Path(__file__).resolve().parents[2]
ENV = {"GEAR_EMBEDDING_MODEL": "hashing-64", "PYTHONPATH": str(CODE), "COLUMNS": "200"}
PASSAGES = [Passage("p-1", "Bled", "Lake Bled lies in the Julian Alps.", "lakes.json"),
            Passage("p-2", "Ohrid", "Lake Ohrid lies between two countries.", "lakes.json")]


def _mount_works(path: Path) -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    done = subprocess.run(["unshare", "-m", "sh", "-c", f"mount --bind {path} {path} && "
                           f"mount -o remount,ro,bind {path}"], capture_output=True, check=False)
    return done.returncode == 0


def _gear_read_only(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``gear ARGS`` with ``folder`` mounted read-only for that command alone."""
    command = " ".join(["exec", sys.executable, "-m", "gear_agent.cli", *(f"'{a}'" for a in args)])
    return subprocess.run(
        ["unshare", "-m", "sh", "-c",
         f"mount --bind '{folder}' '{folder}' && mount -o remount,ro,bind '{folder}' && {command}"],
        capture_output=True, text=True, env={**os.environ, **ENV}, cwd="/", check=False, timeout=300)


@pytest.fixture
def index(tmp_path: Path) -> Path:
    path = tmp_path / "ix"
    if not _mount_works(tmp_path):
        pytest.skip("cannot mount a folder read-only here (needs root and unshare)")
    store = EmbeddedStore.open(path, HashingEmbedder(64))
    store.passages.add(PASSAGES)
    store.maintain()
    store.close()
    assert not (path / "index.sqlite-wal").exists() and not (path / "index.sqlite-shm").exists()
    return path


def test_a_read_only_index_is_searched_checked_and_refuses_writes_in_one_line(index: Path, tmp_path: Path) -> None:
    for retriever in ("bm25", "dense", "hybrid"):
        done = _gear_read_only(index, "search", "Julian Alps", "--index", str(index), "--retriever", retriever,
                               "--json")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout[done.stdout.index("{"):])["passages"][0]["id"] == "p-1"
    check = _gear_read_only(index, "check", "--index", str(index))
    assert check.returncode == 0, check.stdout + check.stderr
    assert "DAMAGED" not in check.stdout
    assert check.stdout.strip().splitlines()[-1] == "ok (read-only: its folder is on a read-only file system)"
    corpus = tmp_path / "more.json"
    corpus.write_text(json.dumps([{"title": "Prespa", "text": "Lake Prespa is higher than Ohrid."}]))
    write = _gear_read_only(index, "index", str(corpus), "--index", str(index))
    assert write.returncode == 2 and "Traceback" not in write.stderr + write.stdout
    errors = [line for line in (write.stdout + write.stderr).splitlines() if line.startswith("error:")]
    assert errors == [f"error: the index at {index} is read-only (its folder is on a read-only file system): "
                      "it can be searched and served, not written to"]
    assert not (index / "index.sqlite-shm").exists()  # nothing was written beside it
    store = EmbeddedStore.open(index, HashingEmbedder(64))  # untouched and still writable outside the mount
    try:
        assert store.passages.count() == 2
    finally:
        store.close()


def test_a_read_only_copy_with_commits_in_its_wal_says_so_in_one_line(tmp_path: Path) -> None:
    live = tmp_path / "live"
    if not _mount_works(tmp_path):
        pytest.skip("cannot mount a folder read-only here (needs root and unshare)")
    store = EmbeddedStore.open(live, HashingEmbedder(64))
    try:
        store.passages.add(PASSAGES)
        copy = tmp_path / "copy"
        shutil.copytree(live, copy)  # taken while the last commit is still in the WAL
    finally:
        store.close()
    assert (copy / "index.sqlite-wal").stat().st_size > 0
    done = _gear_read_only(copy, "search", "Julian Alps", "--index", str(copy))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    errors = [line for line in (done.stdout + done.stderr).splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "still in index.sqlite-wal" in errors[0], done.stdout + done.stderr
