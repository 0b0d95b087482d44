"""0 tracebacks, honest one-liners: each failure the damage and fault trials found, as the
user meets it (``gear`` exits 2 with one ``error:`` line, or the API raises the project's
error), and what it says."""

from __future__ import annotations

import errno
import json
import os
import shutil
import sqlite3
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import httpx
import numpy as np
import pytest
from support.cli import one_line_error, run_cli
from support.fakes import CountingEmbedder

from gear_agent.embedding.base import EmbeddingServiceError
from gear_agent.store.base import StoreError
from gear_agent.store.embedded.errors import translate
from gear_agent.store.embedded.store import EmbeddedStore
from gear_agent.types import Passage

ENV = {"GEAR_EMBEDDING_MODEL": "hashing-64"}


def run(*args: str, env: dict[str, str] | None = None):
    return run_cli(*args, env={**ENV, **(env or {})})


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.json"
    path.write_text(json.dumps([{"title": "Bled", "text": "Lake Bled lies in the Julian Alps."},
                                {"title": "Ohrid", "text": "Lake Ohrid lies between two countries."}]))
    return path


def test_check_after_a_kill_in_the_first_batch(tmp_path: Path) -> None:
    """Was ``ZeroDivisionError`` (dimension 0: no commit had recorded it)."""
    store = EmbeddedStore.open(tmp_path / "ix", CountingEmbedder())
    store.passage_parts.vectors.file.append(0, np.ones((3, 64), dtype=np.float32))  # written, never committed
    store.close()
    result = run("check", "--index", str(tmp_path / "ix"))
    assert result.exit_code == 0 and "Traceback" not in result.output
    assert "no commit yet" in result.output


def test_nan_in_a_corpus_field_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    """Was ``Out of range float values are not JSON compliant``, leaving a half-made index."""
    path = tmp_path / "corpus.json"
    path.write_text('[{"title": "a", "text": "fine"}, {"title": "b", "text": "bad", "score": NaN}]')
    line = one_line_error(run("index", str(path), "--index", str(tmp_path / "ix")))
    assert "corpus.json[1]" in line and "NaN" in line
    assert not (tmp_path / "ix").exists()


def test_an_embedding_endpoint_that_is_down(corpus: Path, tmp_path: Path) -> None:
    """Was ``APIConnectionError`` with a traceback."""
    env = {"GEAR_EMBEDDING_MODEL": "remote-embed", "GEAR_EMBEDDING_BASE_URL": "http://127.0.0.1:9/v1"}
    line = one_line_error(run("index", str(corpus), "--index", str(tmp_path / "ix"), env=env))
    assert "http://127.0.0.1:9/v1" in line and "cannot be reached" in line


class _MixedLengths(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        data = [{"object": "embedding", "index": i, "embedding": [0.1] * (8 if i % 2 else 7)}
                for i in range(len(body["input"]))]
        payload = json.dumps({"object": "list", "data": data, "model": "m",
                              "usage": {"prompt_tokens": 1, "total_tokens": 1}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        return None


def test_vectors_of_mixed_lengths_from_the_endpoint() -> None:
    from gear_agent.embedding.openai_endpoint import OpenAIEndpointEmbedder

    server = HTTPServer(("127.0.0.1", 0), _MixedLengths)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        embedder = OpenAIEndpointEmbedder("m", f"http://127.0.0.1:{server.server_port}/v1")
        with pytest.raises(EmbeddingServiceError, match=r"mixed lengths \(7, 8\)"):
            embedder.embed(["a", "b", "c"])
    finally:
        server.shutdown()


def test_a_corpus_path_that_is_a_device_is_not_read(tmp_path: Path) -> None:
    """Was read without limit: ``MemoryError`` at 5.4 GB for a symlink to /dev/urandom."""
    link = tmp_path / "corpus.json"
    link.symlink_to("/dev/urandom")
    line = one_line_error(run("index", str(link), "--index", str(tmp_path / "ix")))
    assert "not a regular file" in line


def test_inputs_are_read_with_a_size_limit(tmp_path: Path) -> None:
    from gear_agent.ingest.corpus import CorpusFormatError, read_limited

    path = tmp_path / "big.json"
    path.write_bytes(b"[" + b" " * 2000 + b"]")
    with pytest.raises(CorpusFormatError, match="larger than"):
        read_limited(path, limit=1000)


def _read_only_mount(path: Path) -> list[str] | None:
    """A command prefix that runs with ``path`` mounted read-only (root: a private mount
    namespace), or None when this machine cannot."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return None
    probe = subprocess.run(["unshare", "-m", "sh", "-c", f"mount --bind {path} {path} && "
                            f"mount -o remount,ro,bind {path}"], capture_output=True)
    return None if probe.returncode else ["unshare", "-m", "sh", "-c"]


def test_a_read_only_database_says_read_only(tmp_path: Path, corpus: Path) -> None:
    """Was "cannot be read"."""
    store = EmbeddedStore.open(tmp_path / "ix", CountingEmbedder())
    store.passages.add([Passage("p-1", "t", "text", "s")])
    store.close()
    db = sqlite3.connect(f"file:{tmp_path / 'ix' / 'index.sqlite'}?mode=ro", uri=True)
    try:
        with pytest.raises(sqlite3.OperationalError) as caught:
            db.execute("INSERT INTO meta(key, value) VALUES ('x', 1)")
    finally:
        db.close()
    assert "read-only" in str(translate(caught.value, tmp_path / "ix" / "index.sqlite"))
    target = tmp_path / "ix" / "index.sqlite"
    prefix = _read_only_mount(target)
    if prefix is None:
        pytest.skip("cannot mount a file read-only here (needs root and unshare)")
    gear = shutil.which("gear")
    command = (f"mount --bind {target} {target} && mount -o remount,ro,bind {target} && "
               f"GEAR_EMBEDDING_MODEL=hashing-64 {gear} index {corpus} --index {tmp_path / 'ix'}")
    done = subprocess.run([*prefix, command], capture_output=True, text=True, env={**os.environ, **ENV})
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "is read-only" in done.stderr and "cannot be read" not in done.stderr


def test_a_full_disk_says_full(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Was "cannot be read"."""
    store = EmbeddedStore.open(tmp_path / "ix", CountingEmbedder())

    def full(*args: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("gear_agent.store.embedded.vectors.os.pwrite", full)
    with pytest.raises(StoreError, match="is full.*nothing of this write was stored"):
        store.passages.add([Passage("p-1", "t", "text", "s")])
    monkeypatch.undo()
    assert store.passages.count() == 0
    sqlite_full = sqlite3.OperationalError("database or disk is full")
    assert "is full" in str(translate(sqlite_full, tmp_path / "ix" / "index.sqlite"))


def test_an_index_path_that_is_a_file(tmp_path: Path) -> None:
    """Was ``/etc/passwd/CURRENT``: the message named a file inside a file."""
    line = one_line_error(run("search", "anything", "--index", "/etc/passwd"))
    assert "/etc/passwd is a file, not an index folder" in line and "CURRENT" not in line


def test_an_llm_body_that_is_not_json() -> None:
    """Was ``UnicodeDecodeError: 'utf-16-be' codec can't decode ...``."""
    from langchain_openai import ChatOpenAI

    from gear_agent.llm.client import LLMClient
    from gear_agent.llm.errors import LLMCallError
    from gear_agent.llm.retry import RetryPolicy

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=b"\x00<html>gateway error</html>",
                              headers={"content-type": "application/json"})

    model = ChatOpenAI(model="m", api_key="x", base_url="http://llm.test/v1", max_retries=0,
                       http_client=httpx.Client(transport=httpx.MockTransport(handler)))
    client = LLMClient(model, retry=RetryPolicy(max_retries=0), sleep=lambda _s: None)
    with pytest.raises(LLMCallError, match="a body that is not JSON") as caught:
        client.invoke("hi", node="read")
    assert "utf-16" not in str(caught.value)


def test_gear_index_refuses_a_database_that_fails_sqlites_check(tmp_path: Path, corpus: Path) -> None:
    """Was: passages added to an index.sqlite failing integrity_check, exit 0."""
    assert run("index", str(corpus), "--index", str(tmp_path / "ix")).exit_code == 0
    database = tmp_path / "ix" / "index.sqlite"
    db = sqlite3.connect(database)
    (page,) = db.execute("SELECT pageno FROM dbstat WHERE name='passages_source'").fetchone()
    size = db.execute("PRAGMA page_size").fetchone()[0]
    db.close()
    data = bytearray(database.read_bytes())
    start = (page - 1) * size  # the source index page's header: the records stay readable
    data[start : start + 8] = bytes(b ^ 0xFF for b in data[start : start + 8])
    database.write_bytes(bytes(data))
    more = tmp_path / "more.json"
    more.write_text(json.dumps([{"title": "Bohinj", "text": "Lake Bohinj lies in the Julian Alps."}]))
    line = one_line_error(run("index", str(more), "--index", str(tmp_path / "ix")))
    assert "fails SQLite's integrity check" in line and "nothing was added" in line
