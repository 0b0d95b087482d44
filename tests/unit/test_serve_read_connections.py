"""A server's read connections to the embedded index map no memory and keep a small page
cache (``Store.serving``: a memory map makes each read thread resident for the neighbours of
every page it reads); a command's connections keep the map. Reads are the same either way."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from support.tiny_corpus import build_store, make_runtime, pid

from gear_agent.store.embedded import db as db_mod


def on_a_new_thread(store, call):  # noqa: ANN001, ANN202
    with ThreadPoolExecutor(max_workers=1) as thread:  # a thread of its own: a new connection
        return thread.submit(call).result()


def memory(store) -> tuple[int, int]:  # noqa: ANN001
    return on_a_new_thread(store, lambda: (store.db.rows("PRAGMA mmap_size")[0][0],
                                           store.db.rows("PRAGMA cache_size")[0][0]))


def test_connections_opened_after_serving_map_nothing_and_read_the_same(tmp_path: Path) -> None:
    store = build_store(tmp_path / "index")
    try:
        title = "Rainbow Bridge (Folsom)"
        before = on_a_new_thread(store, lambda: store.passages.get([pid(title)]))
        mapped, cache = memory(store)  # SQLite caps the map at its build's limit (2 GiB here)
        assert mapped == min(db_mod.MMAP_BYTES, mapped) > 0 and cache == -db_mod.CACHE_KIB
        store.serving()
        assert memory(store) == (db_mod.SERVING_MMAP_BYTES, -db_mod.SERVING_CACHE_KIB) == (0, -8192)
        assert on_a_new_thread(store, lambda: store.passages.get([pid(title)])) == before != []
    finally:
        store.close()


def test_the_page_server_reads_through_serving_connections(tmp_path: Path) -> None:
    pytest.importorskip("langserve", reason="the serve extra is not installed (pip install gear-agent[serve])")
    from gear_agent.serve.app import create_app

    runtime = make_runtime(tmp_path / "index")
    try:
        create_app(None, runtime.settings, index=runtime)
        assert memory(runtime.store) == (0, -db_mod.SERVING_CACHE_KIB)
    finally:
        runtime.store.close()
