"""The SQLite half of the embedded store: the schema, and :class:`Database`, which owns the
connections, the transactions, the commit generation and its counter file.

One file, ``index.sqlite``, in WAL mode (readers are never blocked by the writer, a crash
rolls back to the last commit) with ``synchronous=FULL`` (a commit is on disk when it
returns). It holds every record, the ``row`` of each record's vector in the vector files,
the entity ids of each triple, metadata in a key/value table indexed for filters, the
BM25 vocabulary and segments (:mod:`gear_agent.store.embedded.postings`), the vector chunks'
checksums, one row per commit (``commits``: its generation and the row counts it left,
which with the generation of each deletion in ``dead`` is the change feed) and the
manifest (table ``meta``).

Every statement runs through a :class:`Database` method inside
:func:`gear_agent.store.embedded.errors.translated`, so a locked, read-only, full or
damaged database is one line, never a traceback. Each thread reads through its own
connection (a query pins one commit with :meth:`Database.reading`, while other threads
read theirs); the writer's transaction runs on one connection under one lock.

The generation of the last commit is also written, after the commit, to
``index.generation`` beside the database: outside the WAL, so a WAL that lost committed
frames (damaged or deleted before a checkpoint) shows as a database older than the
counter (:meth:`Database.lost_commits`).
"""

from __future__ import annotations

import os
import secrets
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from gear_agent.store.base import IndexCorruptError, StoreError
from gear_agent.store.embedded.errors import translated

DB_FILE = "index.sqlite"
COUNTER_FILE = "index.generation"
WAL_AUTOCHECKPOINT_PAGES = 65_536
"""Checkpoint the WAL into the database file every 256 MiB of WAL (SQLite's default is
4 MiB): a checkpoint writes each page changed since the last one once, however many
commits changed it. The store checkpoints fully at the end of an indexing run
(:meth:`EmbeddedStore.maintain`)."""
FORMAT_VERSION = 3
"""3: commit generations (``commits``, ``dead.generation``/``dead.id``); 2 is upgraded in
place by the first writable open (two added columns, one added table)."""
MMAP_BYTES = 1 << 32
"""SQLite reads the database through a memory map of up to this many bytes (``PRAGMA
mmap_size``) instead of a ``read`` call per 4 KiB page (a cold open to the first query of
a 100k-passage index went from 3.8-4.9 s to 2.0-2.3 s; ``benchmarks/scale.py``). SQLite's
caveat is a process killed by SIGBUS if another process shrinks the file while it is
mapped; nothing in this project shrinks it (no VACUUM; WAL checkpoints truncate only the
WAL file)."""
CACHE_KIB = 65_536
"""SQLite's page cache per connection (``PRAGMA cache_size``), KiB."""
SERVING_MMAP_BYTES = 0
"""The memory map of the read connections a server opens (:meth:`Database.serving`): none.
Each connection maps the file on its own, and the kernel brings in the neighbours of every
page a read touches (16 pages per fault), so a page of 200 passages made each of the
server's read threads resident for about 8 MB of a 40,000-passage index (+17% of the
server's RSS after the first flood of ``/ui/api/documents``: ``benchmarks/load_serve.py
--get-flood``); read through ``pread``, a connection holds only the pages it reads, in its
page cache."""
SERVING_CACHE_KIB = 8_192
"""The page cache of a server's read connections (:meth:`Database.serving`), KiB: the
bound on what each keeps of the pages it has read (``benchmarks/serve_read_cost.py``
measures the queries' cost of both settings)."""
CHUNK = 900
"""Ids per ``IN (...)`` list (SQLite allows 999 parameters by default)."""

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value);
CREATE TABLE IF NOT EXISTS passages(
  row INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, title TEXT NOT NULL, text TEXT NOT NULL,
  source TEXT NOT NULL, metadata TEXT NOT NULL, extracted INTEGER NOT NULL DEFAULT 0,
  crc INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS passages_source ON passages(source);
CREATE INDEX IF NOT EXISTS passages_title ON passages(title);
CREATE INDEX IF NOT EXISTS passages_unextracted ON passages(row) WHERE extracted = 0;
CREATE TABLE IF NOT EXISTS passage_meta(key TEXT NOT NULL, value, row INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS passage_meta_key ON passage_meta(key, value, row);
CREATE INDEX IF NOT EXISTS passage_meta_row ON passage_meta(row);
CREATE TABLE IF NOT EXISTS entities(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS triples(
  row INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, subject TEXT NOT NULL,
  predicate TEXT NOT NULL, object TEXT NOT NULL, passage_row INTEGER NOT NULL,
  head INTEGER NOT NULL, tail INTEGER NOT NULL, crc INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS triples_passage ON triples(passage_row, row);
CREATE INDEX IF NOT EXISTS triples_head ON triples(head, row);
CREATE INDEX IF NOT EXISTS triples_tail ON triples(tail, row);
CREATE TABLE IF NOT EXISTS dead(collection TEXT NOT NULL, row INTEGER NOT NULL,
  generation INTEGER NOT NULL DEFAULT 0, id TEXT,
  PRIMARY KEY(collection, row)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS chunks(collection TEXT NOT NULL, start INTEGER NOT NULL,
  stop INTEGER NOT NULL, checksum TEXT NOT NULL, PRIMARY KEY(collection, start)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS terms(id INTEGER PRIMARY KEY, collection TEXT NOT NULL,
  tokenizer TEXT NOT NULL, term TEXT NOT NULL, df INTEGER NOT NULL,
  UNIQUE(collection, tokenizer, term));
CREATE TABLE IF NOT EXISTS segments(id INTEGER PRIMARY KEY, collection TEXT NOT NULL,
  tokenizer TEXT NOT NULL, level INTEGER NOT NULL, postings INTEGER NOT NULL,
  term_ids BLOB NOT NULL, offsets BLOB NOT NULL, rows BLOB NOT NULL, tfs BLOB NOT NULL,
  lens BLOB NOT NULL, checksum TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS segments_level ON segments(collection, tokenizer, level);
CREATE TABLE IF NOT EXISTS commits(generation INTEGER PRIMARY KEY, passage_rows INTEGER NOT NULL,
  triple_rows INTEGER NOT NULL, node_rows INTEGER NOT NULL, at TEXT NOT NULL, token TEXT);
"""
_UPGRADE_TOKEN = "ALTER TABLE commits ADD COLUMN token TEXT"
"""A random token per commit (what makes a commit's digest unique: :mod:`gear_agent.store.changes`);
added in place to an index made before it (its older commits keep none)."""
INDEX_ID_KEY = "index_id"
"""Meta key of the index's random id, made when it is created (an index made before ids
existed gets one at its next open for writing)."""
_UPGRADE_2 = (
    "ALTER TABLE dead ADD COLUMN generation INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE dead ADD COLUMN id TEXT",
    "CREATE TABLE IF NOT EXISTS commits(generation INTEGER PRIMARY KEY, passage_rows INTEGER NOT NULL, "
    "triple_rows INTEGER NOT NULL, node_rows INTEGER NOT NULL, at TEXT NOT NULL)",
)


def connect(path: Path, timeout_s: float, readonly: bool = False, immutable: bool | None = None,
            mmap_bytes: int = MMAP_BYTES, cache_kib: int = CACHE_KIB) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are begun explicitly), WAL, FULL sync,
    a memory map of ``mmap_bytes`` and a page cache of ``cache_kib``.

    ``readonly`` opens the file with SQLite's ``mode=ro``; ``immutable`` also tells SQLite
    that nothing changes the file while it is open (``immutable=1``: no ``-shm`` is made
    and no lock taken), for a folder nothing can be written to (:func:`read_only_reason`)
    whose WAL is absent or empty, so that the file alone holds every commit (None: decide
    so from the folder)."""
    if immutable is None:
        immutable = readonly and not _folder_writable(Path(path).parent) and _wal_bytes(Path(path).parent) == 0
    with translated(path):
        if readonly:
            uri = f"file:{quote(str(path))}?mode=ro" + ("&immutable=1" if immutable else "")
            db = sqlite3.connect(uri, uri=True, timeout=timeout_s, isolation_level=None, check_same_thread=False)
        else:
            db = sqlite3.connect(path, timeout=timeout_s, isolation_level=None, check_same_thread=False)
        try:
            if not readonly:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute(f"PRAGMA wal_autocheckpoint={WAL_AUTOCHECKPOINT_PAGES}")
            db.execute("PRAGMA synchronous=FULL")
            db.execute("PRAGMA foreign_keys=OFF")
            db.execute(f"PRAGMA cache_size=-{int(cache_kib)}")
            db.execute(f"PRAGMA mmap_size={int(mmap_bytes)}")
        except BaseException:
            db.close()
            raise
    return db


def read_only_reason(root: Path) -> str | None:
    """Why nothing can be written in the index folder ``root`` (a read-only mount, a folder
    or database file this process may not write), or None when it can be written."""
    root = Path(root)
    try:
        if os.statvfs(root).f_flag & os.ST_RDONLY:
            return "its folder is on a read-only file system"
    except OSError:
        return None
    if not os.access(root, os.W_OK):
        return "this process may not write its folder"
    if (root / DB_FILE).exists() and not os.access(root / DB_FILE, os.W_OK):
        return f"this process may not write {DB_FILE}"
    return None


def _folder_writable(root: Path) -> bool:
    """Whether SQLite can make ``index.sqlite-shm`` in ``root`` (a read-only connection
    reads the WAL through it)."""
    try:
        return not os.statvfs(root).f_flag & os.ST_RDONLY and os.access(root, os.W_OK)
    except OSError:
        return False


def _wal_bytes(root: Path) -> int:
    try:
        return (Path(root) / f"{DB_FILE}-wal").stat().st_size
    except FileNotFoundError:
        return 0


def marks(items: Sequence[Any]) -> str:
    """``?,?,...`` for an ``IN`` list of ``items``."""
    return ",".join("?" * len(items))


def chunked(items: Sequence[Any], size: int = CHUNK) -> Iterator[Sequence[Any]]:
    """``items`` in slices of at most ``size`` (for ``IN`` lists)."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def read_counter(root: Path) -> int | None:
    """The generation in ``index.generation``, or None when it is missing or unreadable."""
    try:
        text = (Path(root) / COUNTER_FILE).read_text(encoding="ascii").strip()
        number, check = text.split()
        return int(number) if int(check) == _counter_check(int(number)) else None
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def _counter_check(number: int) -> int:
    import zlib

    return zlib.crc32(str(number).encode("ascii"))


def write_counter(root: Path, generation: int) -> None:
    """Write ``generation`` to ``index.generation`` and flush it (after its commit)."""
    payload = f"{generation} {_counter_check(generation)}".ljust(63).encode("ascii") + b"\n"
    path = Path(root) / COUNTER_FILE
    with translated(path):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.pwrite(fd, payload, 0)
            os.ftruncate(fd, len(payload))
            os.fsync(fd)
        finally:
            os.close(fd)


WAL_AT_DAMAGE = f"{DB_FILE}-wal.at-damage"
"""A copy of the WAL made when SQLite first finds the database damaged: closing the last
connection folds the WAL into the database file (a checkpoint), which would put the commits
it holds into the damaged file and remove the WAL; ``gear check --repair`` replays them from
this copy over the newest snapshot (:mod:`gear_agent.store.embedded.snapshot`)."""


def keep_wal_at_damage(root: Path) -> None:
    """Copy ``index.sqlite-wal`` to :data:`WAL_AT_DAMAGE` unless a copy is already kept (the
    first damage seen is the one to replay over); best effort, never raises."""
    wal, kept = Path(root) / f"{DB_FILE}-wal", Path(root) / WAL_AT_DAMAGE
    try:
        if kept.exists() or not wal.exists() or wal.stat().st_size == 0:
            return
        temporary = kept.with_name(f".tmp-{kept.name}-{os.getpid()}")
        with wal.open("rb") as source, temporary.open("wb") as target:
            while block := source.read(1 << 22):
                target.write(block)
            target.flush()
            os.fsync(target.fileno())
        os.replace(temporary, kept)
    except OSError:
        return


class Database:
    """``index.sqlite`` of one store: per-thread read connections, one writer, generations.

    Args:
        root: The index folder.
        timeout_s: How long a writer waits for another writer's lock.
        readonly: Open the file read-only (``gear check``: nothing is written).

    Example:
        >>> db = Database(Path(tempfile.mkdtemp()), 5.0)  # doctest: +SKIP
        >>> with db.writing():  # doctest: +SKIP
        ...     db.set_meta("k", 1)
        >>> db.generation()  # doctest: +SKIP
        1
    """

    def __init__(self, root: Path, timeout_s: float, readonly: bool = False) -> None:
        self.root = Path(root)
        self.path = self.root / DB_FILE
        self.timeout_s = timeout_s
        self.read_only_reason = read_only_reason(self.root) if self.path.exists() else None
        """Why the index cannot be written (None: it can): it is then opened read-only,
        searched and served, and a write is refused in one line (:meth:`writing`)."""
        self.readonly = readonly or self.read_only_reason is not None
        folder_writable = self.read_only_reason is None or _folder_writable(self.root)
        self._immutable = not folder_writable and _wal_bytes(self.root) == 0
        if not folder_writable and not self._immutable:
            raise StoreError(
                f"the index at {self.root} is read-only ({self.read_only_reason}) and its last commits are "
                f"still in {DB_FILE}-wal, which SQLite cannot read without writing {DB_FILE}-shm beside it: "
                "run any `gear` command on it once where it can be written (it folds the WAL in), then "
                "make it read-only")
        self._writer = connect(self.path, timeout_s, self.readonly, self._immutable)
        self._write_lock = threading.RLock()
        self._tx_thread: int | None = None
        self._tx_depth = 0
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self._reader_memory = (MMAP_BYTES, CACHE_KIB)
        self._closed = False
        self.after_commit: list[Any] = []
        """Called with the new generation after each commit (the store's listeners)."""

    # ---- connections --------------------------------------------------------------
    @contextmanager
    def _guard(self) -> Iterator[None]:
        """:func:`translated`, and a copy of the WAL kept when SQLite finds the database
        damaged (:data:`WAL_AT_DAMAGE`)."""
        try:
            with translated(self.path):
                yield
        except IndexCorruptError:
            keep_wal_at_damage(self.root)
            raise

    def _conn(self) -> sqlite3.Connection:
        """The writer's connection inside this thread's transaction, else this thread's reader."""
        if self._tx_thread == threading.get_ident():
            return self._writer
        reader = getattr(self._local, "conn", None)
        if reader is None:
            if self._closed:
                raise StoreError(f"the index at {self.root} was closed")
            reader = connect(self.path, self.timeout_s, self.readonly, self._immutable, *self._reader_memory)
            with self._readers_lock:
                self._readers.append(reader)
            self._local.conn = reader
        return reader

    def serving(self) -> None:
        """Read connections opened from now on map no memory and keep a smaller page cache
        (:data:`SERVING_MMAP_BYTES`, :data:`SERVING_CACHE_KIB`): for a server, whose read
        threads each hold a connection for weeks; a command's cold start keeps the map."""
        self._reader_memory = (SERVING_MMAP_BYTES, SERVING_CACHE_KIB)

    def in_transaction(self) -> bool:
        """True inside this thread's write transaction or pinned read (:meth:`reading`)."""
        return self._tx_thread == threading.get_ident() or getattr(self._local, "pinned", 0) > 0

    def writing_here(self) -> bool:
        """True inside this thread's write transaction."""
        return self._tx_thread == threading.get_ident()

    # ---- statements ---------------------------------------------------------------
    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Every row of a query."""
        with self._guard():
            return self._conn().execute(sql, params).fetchall()

    def one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        """The first row of a query, or None."""
        with self._guard():
            return self._conn().execute(sql, params).fetchone()

    def batches(self, sql: str, params: Sequence[Any] = (), size: int = 65_536) -> Iterator[list[tuple[Any, ...]]]:
        """The rows of a query, ``size`` at a time (a scan that never holds all of them)."""
        with self._guard():
            cursor = self._conn().execute(sql, params)
        while True:
            with self._guard():
                block = cursor.fetchmany(size)
            if not block:
                return
            yield block

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Execute one statement (in the caller's transaction); returns the rows it changed."""
        with self._guard():
            return self._conn().execute(sql, params).rowcount

    def insert(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Execute an ``INSERT``; returns the new row's id."""
        with self._guard():
            return int(self._conn().execute(sql, params).lastrowid or 0)

    def run_many(self, sql: str, params: Iterable[Sequence[Any]]) -> None:
        with self._guard():
            self._conn().executemany(sql, params)

    def has_table(self, name: str) -> bool:
        return self.one("SELECT 1 FROM sqlite_master WHERE name=?", (name,)) is not None

    def _has_column(self, table: str, column: str) -> bool:
        return any(row[1] == column for row in self.rows(f"PRAGMA table_info({table})"))

    def meta(self, key: str, default: Any = None) -> Any:
        row = self.one("SELECT value FROM meta WHERE key=?", (key,))
        return default if row is None else row[0]

    def meta_like(self, *patterns: str) -> dict[str, Any]:
        """Meta values whose keys match any of the ``LIKE`` patterns."""
        where = " OR ".join("key LIKE ?" for _ in patterns)
        return dict(self.rows(f"SELECT key, value FROM meta WHERE {where}", patterns))

    def set_meta(self, key: str, value: Any) -> None:
        self.run("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                 (key, value))

    def add_meta(self, key: str, delta: int | float) -> None:
        self.run("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET "
                 "value = value + excluded.value", (key, delta))

    def generation(self) -> int:
        """The generation of the last commit this thread's connection sees."""
        return int(self.meta("generation", 0))

    # ---- schema -------------------------------------------------------------------
    def ensure_schema(self) -> None:
        """Create the tables of a new index; upgrade a format-2 index in place (additive)."""
        with self._guard():
            if not self.has_table("segments"):
                self._writer.executescript(f"BEGIN IMMEDIATE;{SCHEMA}COMMIT;")
                return
            if self.has_table("commits") and self._has_column("commits", "token"):
                return
        if self.has_table("commits"):
            try:
                with self.writing(count=False):
                    if not self._has_column("commits", "token"):
                        self.run(_UPGRADE_TOKEN)
            except StoreError:  # a read-only index: read as it is (it makes no commits)
                pass
            return
        with self.writing(count=False):
            if not self.has_table("commits"):
                for statement in (*_UPGRADE_2, _UPGRADE_TOKEN):
                    self.run(statement)
                if self.meta("embedding_model") is not None:
                    self.set_meta("format_version", FORMAT_VERSION)

    # ---- transactions -------------------------------------------------------------
    @contextmanager
    def writing(self, count: bool = True) -> Iterator[None]:
        """One atomic write under SQLite's write lock; nested calls join the outer one.

        On success a transaction that changed something gets the next generation (recorded
        in ``meta`` and ``commits`` inside it, then in the counter file). On an exception
        nothing of it is kept.

        Raises:
            StoreError: another writer held the lock past the timeout, the index is
                read-only, or the disk is full.
        """
        if self.read_only_reason is not None:
            raise StoreError(f"the index at {self.root} is read-only ({self.read_only_reason}): it can be "
                             "searched and served, not written to")
        with self._write_lock:
            if self._tx_thread == threading.get_ident():
                self._tx_depth += 1
                try:
                    yield
                finally:
                    self._tx_depth -= 1
                return
            with self._guard():
                self._writer.execute("BEGIN IMMEDIATE")
            self._tx_thread, self._tx_depth = threading.get_ident(), 1
            generation, changes_before = None, self._writer.total_changes
            try:
                yield
                if count and self._writer.total_changes != changes_before:  # nothing written: no commit
                    generation = self._record_commit()
                with self._guard():
                    self._writer.execute("COMMIT")
            except BaseException:
                if self._writer.in_transaction:
                    with self._guard():
                        self._writer.execute("ROLLBACK")
                raise
            finally:
                self._tx_thread, self._tx_depth = None, 0
        if generation is not None:
            write_counter(self.root, generation)
            for listener in list(self.after_commit):
                listener(generation)

    def _record_commit(self) -> int:
        generation = self.generation() + 1
        rows = self.meta_like("rows:%")
        self.set_meta("generation", generation)
        at = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        self.set_meta("committed_at", at)
        self.run("INSERT OR REPLACE INTO commits(generation, passage_rows, triple_rows, node_rows, at, token) "
                 "VALUES (?, ?, ?, ?, ?, ?)", (generation, int(rows.get("rows:passage", 0)),
                                               int(rows.get("rows:triple", 0)), int(rows.get("rows:node", 0)), at,
                                               secrets.token_hex(8)))
        return generation

    @contextmanager
    def reading(self) -> Iterator[int]:
        """Pin this thread's reads to one commit; yields its generation (re-entrant).

        Inside a write transaction the writer's own (uncommitted) state is read.
        """
        if self._tx_thread == threading.get_ident() or getattr(self._local, "pinned", 0):
            self._local.pinned = getattr(self._local, "pinned", 0) + 1
            try:
                yield self.generation()
            finally:
                self._local.pinned -= 1
            return
        conn = self._conn()
        with self._guard():
            conn.execute("BEGIN")
            try:
                generation = int((conn.execute("SELECT value FROM meta WHERE key='generation'").fetchone()
                                  or (0,))[0])
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        self._local.pinned = 1
        try:
            yield generation
        finally:
            self._local.pinned = 0
            with self._guard():
                conn.execute("COMMIT")

    # ---- the commit counter outside the WAL -----------------------------------------
    def lost_commits(self) -> tuple[int, int] | None:
        """(counted, held) when ``index.generation`` names a later commit than the database
        holds (a WAL that lost committed frames), else None. The counter is read first: it
        is written after each commit, so a commit landing meanwhile cannot look lost."""
        counted = read_counter(self.root)
        held = self.generation()
        return (counted, held) if counted is not None and counted > held else None

    def accept_lost_commits(self) -> int:
        """Set the counter to the database's generation (``gear check --repair``)."""
        held = self.generation()
        write_counter(self.root, held)
        return held

    def checkpoint(self) -> None:
        """Fold the WAL into the database file; skipped while readers hold it."""
        with self._write_lock, self._guard():
            self._writer.execute("PRAGMA busy_timeout=200")
            try:
                self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            finally:
                self._writer.execute(f"PRAGMA busy_timeout={int(self.timeout_s * 1000)}")

    def integrity_errors(self, limit: int = 5, quick: bool = False) -> list[str]:
        """SQLite's ``PRAGMA integrity_check`` findings (empty when the file is sound);
        ``quick``: ``quick_check``, which skips matching the indexes against their tables
        (a tenth of the time: 0.4 s against 3.3 s for a 78 MB database)."""
        pragma = "quick_check" if quick else "integrity_check"
        try:
            found = [r[0] for r in self.rows(f"PRAGMA {pragma}({int(limit)})")]
        except IndexCorruptError as exc:
            return [str(exc)]
        return [] if found == ["ok"] else found

    def close(self) -> None:
        with self._write_lock, self._readers_lock:
            self._closed = True
            for conn in [self._writer, *self._readers]:
                conn.close()
            self._readers.clear()
