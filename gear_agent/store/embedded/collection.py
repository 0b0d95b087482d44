"""One collection of the embedded store (passages or triples) as an object that owns its parts.

A :class:`RecordCollection` owns its vector file (:class:`~gear_agent.store.embedded.vectors.CheckedVectors`),
its BM25 postings per tokenizer (:class:`~gear_agent.store.embedded.postings.Postings`), its ANN
parts (:class:`~gear_agent.store.ann.AnnIndex`), its dead rows and its id cache, and offers
them through methods: add, remove, search, verify, rebuild. The store
(:class:`~gear_agent.store.embedded.store.EmbeddedStore`) composes two of them and the
SiReRAG node collection; nothing reaches into another object's fields.

What a collection looks like at one commit is a :class:`View` (rows, live count, dead
mask, opened ANN parts), immutable, so a query that pinned a commit keeps its view while
other threads move on to newer ones.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from gear_agent.store import ann as ann_mod
from gear_agent.store.base import IndexCorruptError
from gear_agent.store.bm25 import top_k
from gear_agent.store.changes import Stamp
from gear_agent.store.embedded.db import INDEX_ID_KEY, Database, chunked, marks
from gear_agent.store.embedded.postings import Postings
from gear_agent.store.embedded.records import (
    meta_rows,
    metadata_json,
    passage_crc,
    passage_text,
    triple_crc,
    triple_text,
)
from gear_agent.store.embedded.vectors import REBUILD_ROWS, CheckedVectors, Progress
from gear_agent.store.threads import matvec
from gear_agent.text.tokenizer import normalise_entity
from gear_agent.types import Collection, Passage, Triple

EXACT_SUBSET_MAX = 50_000
"""A filter matching at most this many rows is searched exactly over just those rows."""
_CACHE_MAX = 400_000

Embed = Callable[[list[str], list[str]], np.ndarray]
"""``embed(texts, what)``: checked vectors for the texts (``what`` names each in errors)."""


@dataclass(frozen=True)
class View:
    """A collection as of one commit.

    Attributes:
        generation: The commit.
        rows: Committed vector rows (live and dead).
        count: Live records.
        dead: True for the rows of deleted records (length ``rows``).
        ann: The ANN parts listed at this commit, opened.
        ann_text: The part list as recorded (to tell whether a later commit changed it).
    """

    generation: int
    rows: int
    count: int
    dead: np.ndarray
    ann: ann_mod.AnnIndex
    ann_text: str | None

    def live_rows(self) -> np.ndarray:
        return np.flatnonzero(~self.dead)

    def is_live(self, row: int) -> bool:
        return 0 <= row < self.rows and not self.dead[row]


class RecordCollection:
    """What passages and triples have in common: vectors, postings, ANN, dead rows, ids.

    Args:
        db: The index's database.
        root: The index folder.
        dimension: The vectors' dimension.
        tokenizer_of: The BM25 tokenizer by name.
    """

    name: ClassVar[Collection]
    table: ClassVar[str]
    text_columns: ClassVar[str]

    def __init__(self, db: Database, root: Path, dimension: int,
                 tokenizer_of: Callable[[str], Callable[[str], list[str]]],
                 ann_policy: ann_mod.AnnPolicy = ann_mod.DEFAULT_POLICY) -> None:
        self.db, self.root, self.dimension = db, Path(root), dimension
        self.ann_policy = ann_policy
        self.vectors = CheckedVectors(db, root, self.name, dimension)
        self._tokenizer_of = tokenizer_of
        self._postings: dict[str, Postings] = {}
        self._id_of: dict[int, str] = {}
        self._row_of: dict[str, int] = {}
        self._lock = threading.Lock()

    # ---- state ----------------------------------------------------------------------
    def load_view(self, generation: int, meta: dict[str, Any], previous: View | None, verify: bool) -> View:
        """The collection as of the commit this thread reads (``meta``: its meta rows).

        With ``verify``, every vector chunk not vouched for by its writer's mark is
        verified first (:meth:`CheckedVectors.ensure_verified`).
        """
        rows = int(meta.get(f"rows:{self.name}", 0))
        count = int(meta.get(f"count:{self.name}", 0))
        dead_rows = np.fromiter((r for (r,) in self.db.rows(
            "SELECT row FROM dead WHERE collection=? ORDER BY row", (self.name,))), dtype=np.int64)
        dead = np.zeros(rows, dtype=bool)
        dead[dead_rows[(dead_rows >= 0) & (dead_rows < rows)]] = True
        text = meta.get(f"ann:{self.name}")
        if previous is not None and previous.ann_text == text and not previous.ann.problems:
            index = previous.ann
        else:
            index = ann_mod.AnnIndex(self.root, self.name, self.ann_policy.shallow_expansion)
            index.load(ann_mod.parse_parts(text), index_id=str(meta.get(INDEX_ID_KEY) or ""))
        if verify:
            self.vectors.ensure_verified(rows)
        return View(generation, rows, count, dead, index, text)

    # ---- ids ------------------------------------------------------------------------
    def _remember(self, pairs: Iterable[tuple[str, int]]) -> None:
        if self.db.writing_here():  # rows of an uncommitted write may be rolled back
            return
        with self._lock:
            if len(self._id_of) > _CACHE_MAX:
                self._id_of.clear()
                self._row_of.clear()
            for rid, row in pairs:
                self._id_of[row] = rid
                self._row_of[rid] = row

    def ids_of_rows(self, rows: Sequence[int]) -> list[str]:
        """Ids of ``rows`` (rows never change their record; unknown rows are left out)."""
        known = self._id_of
        wanted = [int(r) for r in rows]
        missing = [r for r in wanted if r not in known]
        found: dict[int, str] = {}
        for chunk in chunked(missing):
            pairs = self.db.rows(f"SELECT id, row FROM {self.table} WHERE row IN ({marks(chunk)})", list(chunk))
            found.update((row, rid) for rid, row in pairs)
            self._remember(pairs)
        out = []
        for r in wanted:
            rid = found.get(r) or known.get(r)
            if rid is not None:
                out.append(rid)
        return out

    def rows_of_ids(self, view: View | None, ids: Sequence[str]) -> dict[str, int]:
        """Rows of the records ``ids`` that are live in ``view`` (None: inside a write,
        as the transaction sees them)."""
        found: dict[str, int] = {}
        missing = []
        known = self._row_of if view is not None else {}
        for i in dict.fromkeys(ids):
            row = known.get(i)
            if row is not None and view is not None and view.is_live(row):
                found[i] = row
            else:
                missing.append(i)
        for chunk in chunked(missing):
            pairs = self.db.rows(f"SELECT id, row FROM {self.table} WHERE id IN ({marks(chunk)})", list(chunk))
            found.update(pairs)
            self._remember(pairs)
        return found

    # ---- search ---------------------------------------------------------------------
    def matrix(self, view: View) -> np.ndarray:
        """The committed vectors of ``view``, memory-mapped."""
        return self.vectors.view(view.rows)

    def exact(self, view: View, rows: np.ndarray, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact top ``k`` of ``rows`` by cosine; a row whose score is not finite is never ranked."""
        if len(rows) == 0 or k <= 0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        scores = matvec(self.matrix(view)[rows], query)
        finite = np.isfinite(scores)
        if not finite.all():
            rows, scores = rows[finite], scores[finite]
        chosen, values = top_k(scores, k)
        return rows[chosen], values

    def vector_search(self, view: View, query: np.ndarray, k: int,
                      subset: np.ndarray | None, shallow: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Top ``k`` rows by cosine (among ``subset`` when given): exact below the ANN size,
        else ANN candidates re-scored exactly, rows past the parts searched exactly.
        ``shallow`` (for a ``k`` of one or a few): the ANN parts are searched with their
        narrow beam (:class:`~gear_agent.store.ann.AnnPolicy`)."""
        n, dead, live = view.rows, view.dead, view.count
        if n == 0 or k <= 0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        index = view.ann
        use_ann = index.covered > 0 and live >= self.ann_policy.min_rows and k * ann_mod.OVERSAMPLE * 2 < live
        if subset is not None and (len(subset) <= EXACT_SUBSET_MAX or not use_ann):
            return self.exact(view, subset, query, k)
        if not use_ann:
            if dead.any():
                return self.exact(view, np.flatnonzero(~dead), query, k)
            return self.exact(view, np.arange(n), query, k)
        share = live / max(len(subset), 1) if subset is not None else 1.0
        count = max(self.ann_policy.shallow_candidates, k) if shallow else ann_mod.candidate_count(k, share)
        candidates = np.unique(np.concatenate([index.candidates(query, count, shallow), np.arange(index.covered, n)]))
        candidates = candidates[(candidates >= 0) & (candidates < n)]
        candidates = candidates[~dead[candidates]]
        if subset is not None:
            candidates = candidates[np.isin(candidates, subset)]
        rows, values = self.exact(view, candidates, query, k)
        if subset is not None and len(rows) < min(k, len(subset)):
            return self.exact(view, subset, query, k)
        return rows, values

    def postings(self, tokenizer: str) -> Postings:
        """The BM25 postings of this collection under ``tokenizer``."""
        found = self._postings.get(tokenizer)
        if found is None:
            found = self._postings.setdefault(
                tokenizer, Postings(self.db, self.name, tokenizer, self._tokenizer_of(tokenizer)))
        return found

    def bm25_scores(self, view: View, query: str, tokenizer: str, allowed: np.ndarray | None) -> np.ndarray:
        """BM25 score of every row of ``view`` (dead rows and rows not ``allowed``: 0).

        Raises:
            SegmentCorruptError: a segment fails its checksum (rebuild the postings).
        """
        return self.postings(tokenizer).scores(query, view.rows, view.dead, allowed)

    # ---- writes (inside the store's transaction) -------------------------------------
    def texts(self, rows_from: int, rows_to: int) -> dict[int, str]:
        """The embedded and indexed text of the live rows in ``rows_from..rows_to``."""
        return {r[0]: self.text_of(r[1:]) for r in self.db.rows(
            f"SELECT row, {self.text_columns} FROM {self.table} WHERE row >= ? AND row < ? ORDER BY row",
            (rows_from, rows_to))}

    def text_of(self, values: Sequence[Any]) -> str:
        raise NotImplementedError

    def index_text(self, rows: Sequence[int], texts: Sequence[str], tokenizers: Sequence[str],
                   dead_rows: Callable[[], np.ndarray]) -> None:
        for name in tokenizers:
            self.postings(name).add(rows, texts, dead_rows)

    def kill(self, rows: Sequence[int], ids: Sequence[str], texts: Sequence[str],
             tokenizers: Sequence[str], generation: int) -> None:
        """Mark deleted records' rows dead (recording the commit and their ids: the change
        feed), take their texts out of the BM25 statistics, and count them out."""
        for name in tokenizers:
            self.postings(name).remove(texts)
        self.db.run_many("INSERT OR REPLACE INTO dead(collection, row, generation, id) VALUES (?, ?, ?, ?)",
                         [(self.name, int(r), generation, i) for r, i in zip(rows, ids)])
        self.db.add_meta(f"count:{self.name}", -len(rows))

    def rebuild_postings(self, tokenizer: str) -> None:
        """Index every live row's text under ``tokenizer`` again."""
        rows = self.db.rows(f"SELECT row, {self.text_columns} FROM {self.table} ORDER BY row")
        if not all(isinstance(r[0], int) and all(isinstance(v, str) for v in r[1:]) for r in rows):
            raise IndexCorruptError(  # a damaged page can hand back values of another column
                f"{self.root}: the {self.name} table cannot be read to rebuild BM25 (damaged records); "
                "run `gear check`")
        self.postings(tokenizer).rebuild((r[0], self.text_of(r[1:])) for r in rows)

    def update_ann(self, view: View, stamp: Stamp | None = None,
                   progress: ann_mod.AnnProgress | None = None) -> list[str]:
        """Build the next ANN piece the plan asks for (records the new list); the files
        written (none when the parts are up to date). One piece per call: the caller commits
        each, so an interrupted build keeps them (:func:`~gear_agent.store.ann.plan_parts`)."""
        plan = ann_mod.plan_parts(view.ann.parts, view.rows, self.ann_policy, self.name)
        if plan is None:
            return []
        kept, start, stop = plan
        part = ann_mod.build_part(self.root, self.name, self.matrix(view), start, stop,
                                  progress, stamp, total=view.rows)
        self.db.set_meta(f"ann:{self.name}", ann_mod.dump_parts([*kept, part]))
        return [part.file]

    def drop_unusable_ann(self, view: View) -> bool:
        """(In a transaction.) List only the parts of ``view`` that load: those from the first
        one that does not (missing, failing its checksum, of another index) are dropped, for
        :meth:`update_ann` to build again. Whether any were."""
        if not view.ann.problems:
            return False
        self.db.set_meta(f"ann:{self.name}", ann_mod.dump_parts(view.ann.parts))
        return True

    def listed_ann_files(self) -> set[str]:
        return {p.file for p in ann_mod.parse_parts(self.db.meta(f"ann:{self.name}"))}

    def repair_vectors(self, embed: Embed, progress: Progress | None = None) -> list[str]:
        """Re-embed what fails in the vector file from the stored texts: the whole file when
        it is missing or shorter than its rows, else each chunk that fails its checksum
        (dead rows get zero vectors: they are never ranked). Returns what was done."""
        rows = self.vectors.committed_rows()
        if rows == 0:
            return []
        if self.vectors.file.stored_rows() < rows:
            self.vectors.rebuild_file(rows, self._blocks(rows, embed), progress)
            return [f"re-embedded all {rows:,} {self.name} vectors ({self.vectors.path.name} was "
                    "missing or truncated)"]
        done = []
        for start, stop in self.vectors.bad_chunks(rows):
            block = next(self._blocks(stop, embed, start=start, step=stop - start))
            self.vectors.rewrite_chunk(start, stop, block)
            done.append(f"re-embedded {self.name} rows {start}..{stop}")
        return done

    def _blocks(self, rows: int, embed: Embed, start: int = 0, step: int = REBUILD_ROWS) -> Iterator[np.ndarray]:
        for lo in range(start, rows, step):
            hi = min(rows, lo + step)
            texts = self.texts(lo, hi)
            block = np.zeros((hi - lo, self.dimension), dtype=np.float32)
            if texts:
                vectors = embed(list(texts.values()), [f"{self.name} row {r}" for r in texts])
                block[np.asarray(list(texts), dtype=np.int64) - lo] = vectors
            yield block


class PassageCollection(RecordCollection):
    """The passages: records with metadata rows, extraction marks and sources."""

    name: ClassVar[Collection] = "passage"
    table: ClassVar[str] = "passages"
    text_columns: ClassVar[str] = "title, text"

    def text_of(self, values: Sequence[Any]) -> str:
        return passage_text(values[0], values[1])

    def add(self, new: Sequence[Passage], vectors: np.ndarray, tokenizers: Sequence[str],
            dead_rows: Callable[[], np.ndarray], extracted: Sequence[bool] | None = None) -> None:
        """Store ``new`` with their vectors (extraction marks default to not extracted)."""
        rows = self.vectors.append(vectors)
        records, meta = [], []
        for i, (row, p) in enumerate(zip(rows, new)):
            meta_json = metadata_json(p.metadata)
            done = int(bool(extracted[i])) if extracted is not None else 0
            records.append((row, p.id, p.title, p.text, p.source, meta_json, done, passage_crc(p, meta_json)))
            meta.extend(meta_rows(row, p.metadata))
        self.db.run_many("INSERT INTO passages(row, id, title, text, source, metadata, extracted, crc) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", records)
        self.db.run_many("INSERT INTO passage_meta(key, value, row) VALUES (?, ?, ?)", meta)
        self.db.add_meta("count:passage", len(new))
        if extracted is not None:
            self.db.add_meta("extracted", sum(map(bool, extracted)))
        self.index_text(list(rows), [p.content for p in new], tokenizers, dead_rows)

    def doomed(self, ids: Sequence[str]) -> dict[str, tuple[int, str, int]]:
        """Stored passages among ``ids``: id -> (row, text, extracted)."""
        found: dict[str, tuple[int, str, int]] = {}
        for chunk in chunked(list(dict.fromkeys(ids))):
            for row, pid, title, text, extracted in self.db.rows(
                f"SELECT row, id, title, text, extracted FROM passages WHERE id IN ({marks(chunk)})", list(chunk)
            ):
                found[pid] = (row, passage_text(title, text), extracted)
        return found

    def delete_rows(self, rows: Sequence[int]) -> None:
        for chunk in chunked(list(rows)):
            self.db.run(f"DELETE FROM passages WHERE row IN ({marks(chunk)})", list(chunk))
            self.db.run(f"DELETE FROM passage_meta WHERE row IN ({marks(chunk)})", list(chunk))

    def mark_extracted(self, ids: Sequence[str]) -> None:
        changed = 0
        for chunk in chunked(list(dict.fromkeys(ids))):
            changed += self.db.run(
                f"UPDATE passages SET extracted = 1 WHERE extracted = 0 AND id IN ({marks(chunk)})", list(chunk))
        if changed:
            self.db.add_meta("extracted", changed)

    def ids_of_source(self, source: str) -> list[str]:
        """Passages whose source is exactly ``source``."""
        return [pid for (pid,) in self.db.rows("SELECT id FROM passages WHERE source = ? ORDER BY row", (source,))]

    def sources_like(self, source: str) -> list[str]:
        """Stored sources that end with ``source``'s base name (for a "did you mean")."""
        name = Path(source).name
        if not name:
            return []
        pattern = "%" + name.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        return [s for (s,) in self.db.rows(
            "SELECT DISTINCT source FROM passages WHERE source LIKE ? ESCAPE '\\' ORDER BY source LIMIT 5",
            (pattern,))]


class TripleCollection(RecordCollection):
    """The triples: records with their passage's row and their head and tail entity ids."""

    name: ClassVar[Collection] = "triple"
    table: ClassVar[str] = "triples"
    text_columns: ClassVar[str] = "subject, predicate, object"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._ends: dict[int, tuple[int, int]] = {}
        self._by_entity: tuple[int, dict[int, np.ndarray]] = (-1, {})
        self._by_passage: tuple[int, dict[str, list[tuple[int, str]]]] = (-1, {})

    def text_of(self, values: Sequence[Any]) -> str:
        return triple_text(values[0], values[1], values[2])

    def _entity_ids(self, names: Sequence[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        unique = list(dict.fromkeys(names))
        for chunk in chunked(unique):
            found.update(self.db.rows(f"SELECT name, id FROM entities WHERE name IN ({marks(chunk)})", list(chunk)))
        new = [name for name in unique if name not in found]
        if new:  # one statement for the batch, then their ids (assigned in this order)
            self.db.run_many("INSERT INTO entities(name) VALUES (?)", [(name,) for name in new])
            for chunk in chunked(new):
                found.update(self.db.rows(f"SELECT name, id FROM entities WHERE name IN ({marks(chunk)})", list(chunk)))
        return found

    def add(self, new: Sequence[Triple], vectors: np.ndarray, passage_rows: dict[str, int],
            tokenizers: Sequence[str], dead_rows: Callable[[], np.ndarray]) -> None:
        heads = [normalise_entity(t.subject) for t in new]
        tails = [normalise_entity(t.object) for t in new]
        entity = self._entity_ids([*heads, *tails])
        rows = self.vectors.append(vectors)
        self.db.run_many(
            "INSERT INTO triples(row, id, subject, predicate, object, passage_row, head, tail, crc) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(row, t.id, t.subject, t.predicate, t.object, passage_rows[t.passage_id], entity[h], entity[tl],
              triple_crc(t)) for row, t, h, tl in zip(rows, new, heads, tails)],
        )
        self.db.add_meta("count:triple", len(new))
        self.index_text(list(rows), [t.text for t in new], tokenizers, dead_rows)

    def of_passage_rows(self, passage_rows: Sequence[int]) -> list[tuple[int, str, str]]:
        """(row, id, text) of the triples of the passages at ``passage_rows``."""
        found = []
        for chunk in chunked(list(passage_rows)):
            for row, tid, s, p, o in self.db.rows(
                f"SELECT row, id, subject, predicate, object FROM triples WHERE passage_row IN ({marks(chunk)})",
                list(chunk),
            ):
                found.append((row, tid, triple_text(s, p, o)))
        return found

    def delete_rows(self, rows: Sequence[int]) -> None:
        for chunk in chunked(list(rows)):
            self.db.run(f"DELETE FROM triples WHERE row IN ({marks(chunk)})", list(chunk))

    # ---- the entity graph -------------------------------------------------------------
    def _remember_ends(self, rows: Iterable[tuple[int, int, int]]) -> None:
        if self.db.writing_here():
            return
        with self._lock:
            if len(self._ends) > _CACHE_MAX:
                self._ends.clear()
            for row, head, tail in rows:
                self._ends[row] = (head, tail)

    def of_passage(self, view: View, passage_id: str) -> list[str]:
        """Ids of a passage's triples in extraction order (cached per commit with their
        rows and entity ends: what a walk from them asks next)."""
        generation, cache = self._by_passage
        if generation == view.generation and not self.db.writing_here():
            cached = cache.get(passage_id)
            if cached is not None:
                return [tid for _, tid in cached]
        found = self.db.rows(
            "SELECT t.row, t.id, t.head, t.tail FROM triples t JOIN passages p ON p.row = t.passage_row "
            "WHERE p.id = ? ORDER BY t.row", (passage_id,))
        if not self.db.writing_here():
            self._remember([(tid, row) for row, tid, _, _ in found])
            self._remember_ends((row, head, tail) for row, _, head, tail in found)
            with self._lock:
                generation, cache = self._by_passage
                if generation < view.generation or len(cache) > 100_000:
                    self._by_passage = generation, cache = view.generation, {}
                if generation == view.generation:
                    cache[passage_id] = [(row, tid) for row, tid, _, _ in found]
        return [tid for _, tid, _, _ in found]

    def ends_of(self, view: View, triple_id: str) -> tuple[int, tuple[int, int]] | None:
        """(row, (head, tail)) of a live triple, or None."""
        row = self._row_of.get(triple_id)
        ends = self._ends.get(row) if row is not None and view.is_live(row) else None
        if ends is not None:
            return row, ends  # type: ignore[return-value]
        found = self.db.one("SELECT row, head, tail FROM triples WHERE id = ?", (triple_id,))
        if found is None:
            return None
        self._remember_ends([(found[0], found[1], found[2])])
        self._remember([(triple_id, found[0])])
        return found[0], (found[1], found[2])

    def rows_of_entities(self, view: View, entities: Sequence[int]) -> np.ndarray:
        """Rows of the live triples with any of ``entities`` as head or tail (one query for
        the entities not cached for this commit)."""
        generation, cache = self._by_entity
        if generation != view.generation or self.db.writing_here():
            cache = {}
        missing = [e for e in entities if e not in cache]
        if missing:
            pairs = np.array(self.db.rows(
                f"SELECT head, row FROM triples WHERE head IN ({marks(missing)}) "
                f"UNION ALL SELECT tail, row FROM triples WHERE tail IN ({marks(missing)})", [*missing, *missing],
            ), dtype=np.int64).reshape(-1, 2)
            fresh = {e: np.unique(pairs[pairs[:, 0] == e, 1]) for e in missing}
            if not self.db.writing_here():
                with self._lock:
                    if self._by_entity[0] < view.generation or len(self._by_entity[1]) > 100_000:
                        self._by_entity = (view.generation, {})
                    if self._by_entity[0] == view.generation:
                        self._by_entity[1].update(fresh)
            cache = {**cache, **fresh}
        found = [cache[e] for e in entities]
        return found[0] if len(found) == 1 else np.unique(np.concatenate(found))
