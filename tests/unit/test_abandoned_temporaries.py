"""Maintenance removes the temporaries of writers that are gone, never a live process's:
a server saving its PPR graph cache while `gear index` maintains the same index kept its
file (the maintenance once removed it mid-write, and the save failed)."""

from __future__ import annotations

import os
import subprocess
import sys

from support.tiny_corpus import build_store

from gear_agent.store.check import check_index
from gear_agent.store.derived_files import abandoned_temporaries


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
