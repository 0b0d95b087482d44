"""Maintenance removes the temporaries of writers that are gone, never a live process's:
a server saving its PPR graph cache while `gear index` maintains the same index kept its
file (the maintenance once removed it mid-write, and the save failed)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

from support.tiny_corpus import build_store

from gear_agent.store.derived_files import abandoned_temporaries, write_atomically
from gear_agent.store.embedded.check import check_index


def test_a_live_writers_temporary_is_kept_and_a_dead_ones_removed(tmp_path) -> None:
    store = build_store(tmp_path / "index")
    root = store.root
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    try:
        writing = root / f".tmp-ppr-graph.npz-{live.pid}"
        ours = root / f".tmp-ppr-graph.npz-{os.getpid()}"  # another thread of this process
        ours.write_bytes(b"half a graph")
        left = root / f".tmp-ppr-graph.npz-{int(gone.stdout)}"
        writing.write_bytes(b"half a graph")
        left.write_bytes(b"half a graph")
        assert abandoned_temporaries(root) == [left]
        item = next(i for i in check_index(root).items if i.name == "temporary files")
        assert item.ok and item.detail.startswith("1 left by an interrupted write")
        store.maintain()
        assert writing.exists() and ours.exists() and not left.exists()
    finally:
        live.kill()
        live.wait()
        store.close()
    assert abandoned_temporaries(root) == [writing]  # its writer is gone now


def test_a_temporary_locked_by_a_live_writer_is_kept_whatever_pid_it_names(tmp_path) -> None:
    """A writer whose pid this process cannot see (another PID namespace: a container
    sharing the folder) holds its temporary's lock; the cleanup keeps the file until the
    writer is gone."""
    store = build_store(tmp_path / "index")
    root = store.root
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    temporary = root / f".tmp-ppr-graph.json-{int(gone.stdout)}-0badf00d"  # a pid not alive here
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, sys, time\n"
         f"f = open({str(temporary)!r}, 'wb'); fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True)\n"
         "sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert abandoned_temporaries(root) == []
        store.maintain()
        assert temporary.exists()
    finally:
        holder.stdin.close()
        holder.wait()
    assert abandoned_temporaries(root) == [temporary]  # its writer is gone now
    store.maintain()
    assert not temporary.exists()
    store.close()


def test_two_threads_saving_one_file_each_write_their_own_temporary(tmp_path) -> None:
    """Seen with two `gear eval` runs over one index: "Could not cache the PPR graph ...
    .tmp-ppr-graph.json-NNNN: No such file or directory": two saves of one process shared
    a temporary, and the first to finish renamed it from under the other."""
    target = tmp_path / "ppr-graph.json"
    start = threading.Barrier(4)
    errors: list[BaseException] = []

    def slow_write(path) -> None:  # noqa: ANN001 - a Path
        with path.open("wb") as out:
            out.write(b"half")
            time.sleep(0.05)
            out.write(b" and the rest")

    def save() -> None:
        try:
            start.wait()
            write_atomically(target, slow_write)
        except BaseException as exc:  # handed to the test below
            errors.append(exc)

    threads = [threading.Thread(target=save) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert target.read_bytes() == b"half and the rest"
    assert list(tmp_path.glob(".tmp-*")) == []
