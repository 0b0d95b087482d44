"""BM25 postings persisted in SQLite as immutable segments, scored by Lucene's formula.

Each write adds one *segment*: for the rows it added, a term -> (row, tf, document length)
postings list in compressed-row form, stored as a few blobs with their checksum. Segments
are merged (eight of a level into one of the next, dropping deleted rows) so a query
reads a few segments and each posting is rewritten a few times, not once per commit:
Lucene's design, in SQLite's transactions. Per term, the vocabulary table keeps the
document frequency of live rows; the meta table keeps the live document count and total
length, so idf and the average length are those of the live collection at query time and
scores are exactly :mod:`gear_agent.store.bm25`'s (``idf * tf / (tf + k1 (1 - b + b dl /
avgdl))``). Nothing is rebuilt at open; a segment whose checksum fails is rebuilt from
the stored text.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from gear_agent.store.bm25 import K1, B, lucene_idf
from gear_agent.store.derived_files import bytes_checksum
from gear_agent.store.embedded.db import Database

MERGE_FACTOR = 8
_CHUNK = 900


@dataclass(frozen=True)
class Segment:
    """Postings of some rows: ``rows[offsets[i]:offsets[i+1]]`` hold term ``term_ids[i]``."""

    term_ids: np.ndarray  # int64, ascending
    offsets: np.ndarray  # int64, len(term_ids) + 1
    rows: np.ndarray  # int32
    tfs: np.ndarray  # int32
    lens: np.ndarray  # int32, the document length of each posting's row

    @property
    def postings(self) -> int:
        return len(self.rows)

    def blobs(self) -> tuple[bytes, bytes, bytes, bytes, bytes]:
        return (
            self.term_ids.astype("<i8").tobytes(), self.offsets.astype("<i8").tobytes(),
            self.rows.astype("<i4").tobytes(), self.tfs.astype("<i4").tobytes(),
            self.lens.astype("<i4").tobytes(),
        )

    @staticmethod
    def checksum_of(blobs: Sequence[bytes]) -> str:
        return bytes_checksum(b"".join(blobs))

    @classmethod
    def from_blobs(cls, blobs: Sequence[bytes]) -> Segment:
        t, o, r, f, n = blobs
        return cls(
            np.frombuffer(t, "<i8"), np.frombuffer(o, "<i8"), np.frombuffer(r, "<i4"),
            np.frombuffer(f, "<i4"), np.frombuffer(n, "<i4"),
        )

    @classmethod
    def from_postings(
        cls, terms: np.ndarray, rows: np.ndarray, tfs: np.ndarray, lens: np.ndarray
    ) -> Segment:
        """A segment from flat postings (any order)."""
        order = np.lexsort((rows, terms))
        terms, rows, tfs, lens = terms[order], rows[order], tfs[order], lens[order]
        unique, starts = np.unique(terms, return_index=True)
        offsets = np.append(starts, len(terms)).astype(np.int64)
        return cls(unique.astype(np.int64), offsets, rows.astype(np.int32),
                   tfs.astype(np.int32), lens.astype(np.int32))

    def flat(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        terms = np.repeat(self.term_ids, np.diff(self.offsets))
        return terms, self.rows, self.tfs, self.lens


def segment_of(rows: Sequence[int], documents: Sequence[Counter[int]]) -> Segment:
    """The segment of ``documents`` (term id -> tf counts), the i-th stored at ``rows[i]``."""
    terms, out_rows, tfs, lens = [], [], [], []
    for row, counts in zip(rows, documents):
        length = sum(counts.values())
        for term, tf in counts.items():
            terms.append(term)
            out_rows.append(row)
            tfs.append(tf)
            lens.append(length)
    return Segment.from_postings(
        np.asarray(terms, dtype=np.int64), np.asarray(out_rows, dtype=np.int32),
        np.asarray(tfs, dtype=np.int32), np.asarray(lens, dtype=np.int32),
    )


def merge(segments: Sequence[Segment], dead: np.ndarray | None) -> Segment:
    """One segment holding the postings of ``segments`` whose rows are not ``dead``."""
    parts = [s.flat() for s in segments]
    terms, rows, tfs, lens = (np.concatenate([p[i] for p in parts]) for i in range(4))
    if dead is not None and len(dead):
        keep = ~np.isin(rows, dead)
        terms, rows, tfs, lens = terms[keep], rows[keep], tfs[keep], lens[keep]
    return Segment.from_postings(terms, rows, tfs, lens)


class Postings:
    """The persisted BM25 index of one collection under one tokenizer.

    Args:
        db: The store's database (writes run inside the caller's transaction; reads see
            the calling thread's commit).
        collection: ``passage`` or ``triple``.
        tokenizer: Tokenizer name; its postings are kept apart from other tokenizers'.
        tokenize: The tokenizer.
    """

    def __init__(
        self, db: Database, collection: str, tokenizer: str,
        tokenize: Callable[[str], list[str]],
    ) -> None:
        self.db, self.collection, self.tokenizer, self.tokenize = db, collection, tokenizer, tokenize
        self._segments: dict[int, Segment] = {}
        self._lock = threading.Lock()
        self._norms: tuple[float, dict[tuple[int, int], np.ndarray]] = (-1.0, {})
        """(average length, its norms by (segment, term position)): swapped whole, so that
        threads reading commits of different average lengths never take each other's."""
        self._docs_key = f"bm25:{collection}:{tokenizer}:docs"
        self._length_key = f"bm25:{collection}:{tokenizer}:length"

    # ---- writes (inside the caller's transaction) -----------------------------------
    def _lookup(self, terms: Sequence[str], found: dict[str, int]) -> None:
        for start in range(0, len(terms), _CHUNK):
            chunk = terms[start : start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            for term, tid in self.db.rows(
                f"SELECT term, id FROM terms WHERE collection=? AND tokenizer=? AND term IN ({marks})",
                (self.collection, self.tokenizer, *chunk),
            ):
                found[term] = tid

    def _term_ids(self, terms: Iterable[str]) -> dict[str, int]:
        terms = list(terms)
        found: dict[str, int] = {}
        self._lookup(terms, found)
        new = [term for term in terms if term not in found]
        if new:  # one statement for the batch, then their ids (assigned in this order)
            self.db.run_many(
                "INSERT INTO terms(collection, tokenizer, term, df) VALUES (?, ?, ?, 0)",
                [(self.collection, self.tokenizer, term) for term in new],
            )
            self._lookup(new, found)
        return found

    def _stats_add(self, docs: int, length: int) -> None:
        for key, delta in ((self._docs_key, docs), (self._length_key, length)):
            self.db.add_meta(key, delta)

    def add(self, rows: Sequence[int], texts: Sequence[str], dead: Callable[[], np.ndarray]) -> None:
        """Index ``texts`` stored at ``rows`` as a new segment, then merge as the policy says."""
        if not rows:
            return
        token_lists = [self.tokenize(t) for t in texts]
        ids = self._term_ids(dict.fromkeys(t for tokens in token_lists for t in tokens))
        documents = [Counter(ids[t] for t in tokens) for tokens in token_lists]
        df = Counter(term for counts in documents for term in counts)
        self.db.run_many("UPDATE terms SET df = df + ? WHERE id = ?", [(n, t) for t, n in df.items()])
        self._stats_add(len(rows), sum(len(t) for t in token_lists))
        self._insert(segment_of(rows, documents), level=0)
        self._merge_levels(dead)

    def remove(self, texts: Sequence[str]) -> None:
        """Take deleted rows' texts out of the statistics (their postings go at the next merge)."""
        if not texts:
            return
        token_lists = [self.tokenize(t) for t in texts]
        df = Counter(t for tokens in token_lists for t in set(tokens))
        ids = self._term_ids(df)
        self.db.run_many("UPDATE terms SET df = df - ? WHERE id = ?", [(n, ids[t]) for t, n in df.items()])
        self._stats_add(-len(texts), -sum(len(t) for t in token_lists))

    def _insert(self, segment: Segment, level: int) -> int:
        blobs = segment.blobs()
        return self.db.insert(
            "INSERT INTO segments(collection, tokenizer, level, postings, term_ids, offsets, rows, "
            "tfs, lens, checksum) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (self.collection, self.tokenizer, level, segment.postings, *blobs, Segment.checksum_of(blobs)),
        )

    def _merge_levels(self, dead: Callable[[], np.ndarray]) -> None:
        level = 0
        while True:
            ids = [sid for (sid,) in self.db.rows(
                "SELECT id FROM segments WHERE collection=? AND tokenizer=? AND level=? ORDER BY id",
                (self.collection, self.tokenizer, level),
            )]
            if len(ids) < MERGE_FACTOR:
                return
            merged = merge([self._load(sid) for sid in ids], dead())
            self.db.run(f"DELETE FROM segments WHERE id IN ({','.join('?' * len(ids))})", ids)
            with self._lock:
                for sid in ids:
                    self._segments.pop(sid, None)
            self._insert(merged, level + 1)
            level += 1

    def rebuild(self, rows_and_texts: Iterable[tuple[int, str]]) -> None:
        """Drop this tokenizer's postings and index every live row again (one segment)."""
        self.db.run("DELETE FROM segments WHERE collection=? AND tokenizer=?", (self.collection, self.tokenizer))
        self.db.run("DELETE FROM terms WHERE collection=? AND tokenizer=?", (self.collection, self.tokenizer))
        self.db.run("DELETE FROM meta WHERE key IN (?, ?)", (self._docs_key, self._length_key))
        self._stats_add(0, 0)
        with self._lock:
            self._segments.clear()
        rows, texts = [], []
        for row, text in rows_and_texts:
            rows.append(row)
            texts.append(text)
            if len(rows) >= 50_000:
                self.add(rows, texts, lambda: np.empty(0, dtype=np.int64))
                rows, texts = [], []
        self.add(rows, texts, lambda: np.empty(0, dtype=np.int64))

    # ---- reads ----------------------------------------------------------------------
    def exists(self) -> bool:
        """Whether this tokenizer's postings were ever built for the collection."""
        return self.db.one("SELECT 1 FROM meta WHERE key=?", (self._docs_key,)) is not None

    def _load(self, sid: int) -> Segment:
        segment = self._segments.get(sid)
        if segment is None:
            row = self.db.one(
                "SELECT term_ids, offsets, rows, tfs, lens, checksum FROM segments WHERE id=?", (sid,)
            )
            if row is None:
                raise KeyError(sid)
            blobs, checksum = row[:5], row[5]
            if not all(isinstance(b, bytes) for b in blobs) or Segment.checksum_of(blobs) != checksum:
                raise SegmentCorruptError(f"BM25 segment {sid} of {self.collection} fails its checksum")
            segment = Segment.from_blobs(blobs)
            if not self.db.writing_here():  # a writer's segment may still be rolled back
                with self._lock:
                    self._segments[sid] = segment
        return segment

    def _live_ids(self) -> list[int]:
        ids = [sid for (sid,) in self.db.rows(
            "SELECT id FROM segments WHERE collection=? AND tokenizer=? ORDER BY id",
            (self.collection, self.tokenizer),
        )]
        if len(self._segments) > 2 * len(ids) + 16:  # merged-away segments (ids are never reused)
            with self._lock:
                for gone in set(self._segments) - set(ids):
                    del self._segments[gone]
        return ids

    def segments(self) -> list[Segment]:
        """The live segments, loaded once and kept while they exist."""
        return [self._load(sid) for sid in self._live_ids()]

    def _norm(self, sid: int, segment: Segment, position: int, avg_len: float) -> np.ndarray:
        """``tf / (tf + k1 (1 - b + b dl / avgdl))`` of the postings of one term of a segment.

        Kept per (segment, term) while the average length stays the same (until a commit
        changes it), so a query multiplies it by the idf instead of recomputing it for every
        posting of common terms: the same float64 operations, the same scores. Segment ids
        are never reused, so an entry of a merged-away segment is only unused."""
        cached_avg, norms = self._norms
        if avg_len != cached_avg or len(norms) > 200_000:
            norms = {}
            self._norms = (avg_len, norms)
        key = (sid, position)
        norm = norms.get(key)
        if norm is None:
            lo, hi = segment.offsets[position], segment.offsets[position + 1]
            tf = segment.tfs[lo:hi].astype(np.float64)
            dl = segment.lens[lo:hi].astype(np.float64)
            norm = norms[key] = tf / (tf + K1 * (1.0 - B + B * dl / max(avg_len, 1e-9)))
        return norm

    def stats(self) -> tuple[int, float]:
        """Live documents and their total length."""
        values = dict(self.db.rows(
            "SELECT key, value FROM meta WHERE key IN (?, ?)", (self._docs_key, self._length_key)
        ))
        return int(values.get(self._docs_key, 0)), float(values.get(self._length_key, 0))

    def scores(
        self, query: str, n_rows: int, dead: np.ndarray | None, allowed: np.ndarray | None
    ) -> np.ndarray:
        """BM25 score of every row for ``query`` (zero where no term matches).

        ``dead`` and ``allowed`` are boolean masks over rows (or None): dead rows never
        score, and with ``allowed`` only allowed rows do.
        """
        counts = Counter(self.tokenize(query))
        scores = np.zeros(n_rows, dtype=np.float64)
        if not counts or n_rows == 0:
            return scores
        n_docs, total = self.stats()
        if n_docs <= 0:
            return scores
        avg_len = total / n_docs
        terms = list(counts)
        found = {}
        for start in range(0, len(terms), _CHUNK):
            chunk = terms[start : start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            for term, tid, df in self.db.rows(
                f"SELECT term, id, df FROM terms WHERE collection=? AND tokenizer=? AND term IN ({marks})",
                (self.collection, self.tokenizer, *chunk),
            ):
                if df > 0:
                    found[tid] = (counts[term], float(lucene_idf(np.float64(df), n_docs)))
        if not found:
            return scores
        wanted = np.asarray(sorted(found), dtype=np.int64)
        all_rows, all_weights = [], []
        for sid in self._live_ids():
            segment = self._load(sid)
            if len(segment.term_ids) == 0:
                continue
            positions = np.searchsorted(segment.term_ids, wanted)
            positions = np.minimum(positions, len(segment.term_ids) - 1)
            for tid, pos in zip(wanted, positions):
                if segment.term_ids[pos] != tid:
                    continue
                lo, hi = segment.offsets[pos], segment.offsets[pos + 1]
                boost, idf = found[int(tid)]
                all_rows.append(segment.rows[lo:hi])
                all_weights.append(boost * idf * self._norm(sid, segment, int(pos), avg_len))
        if not all_rows:
            return scores
        rows = np.concatenate(all_rows)
        weights = np.concatenate(all_weights)
        inside = rows < n_rows
        rows, weights = rows[inside], weights[inside]
        scores += np.bincount(rows, weights=weights, minlength=n_rows)[:n_rows]
        if dead is not None:
            scores[dead[:n_rows]] = 0.0
        if allowed is not None:
            scores[~allowed[:n_rows]] = 0.0
        return scores


class SegmentCorruptError(RuntimeError):
    """A stored segment's bytes do not match its checksum (rebuilt from the text)."""
