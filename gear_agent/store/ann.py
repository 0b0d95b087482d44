"""Approximate nearest neighbours for large collections: usearch HNSW parts, memory-mapped.

Why usearch (``benchmarks/ann_candidates.py``, docs/storage.md): its saved index opens as
a memory-mapped *view* in milliseconds with no copy in RAM, it quantises to int8 (a
quarter of the float32 size on disk), adds incrementally, and its recall and latency on
our vectors matched faiss and hnswlib.

A collection's ANN is a short list of *parts*, each an HNSW index over a contiguous range
of vector rows, saved as ``{collection}-{start}-{stop}.usearch`` through
:mod:`gear_agent.store.derived_files` and listed with its checksum in the store's meta
table. Rows after the last part (the *tail*, at most :attr:`AnnPolicy.tail_max` after maintenance)
are searched exactly. Every candidate is re-scored with the exact float32 vector, so
quantisation only affects which rows are candidates, never the scores. A part that is
missing or fails its checksum is left out with a warning (its rows are then searched
exactly) and rebuilt at the next maintenance. Below :attr:`AnnPolicy.min_rows` rows exact
search is fast enough and no ANN is built.

Large ranges are built in *pieces*: no part holds more than :meth:`AnnPolicy.pieces_of`
its collection's rows, and maintenance commits each part as it finishes (its own commit, recording the
store stamp it was built at), reporting ``progress(stage, rows covered, rows)``. An
interrupted build (a crash, Ctrl-C) keeps the pieces already committed, and the next
maintenance builds only the rest; a full piece is never folded again. A part is built by
one thread, so a resumed build writes the same files, byte for byte, as one that ran
through.
"""

from __future__ import annotations

import json
import logging
import mmap
import os
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gear_agent.store.changes import Stamp
from gear_agent.store.derived_files import verify, write_atomically

logger = logging.getLogger(__name__)

AnnProgress = Callable[[str, int, int], None]
"""``progress(stage, rows covered, rows)`` while parts are built (stage ``"{collection} ANN"``)."""

@dataclass(frozen=True)
class AnnPolicy:
    """When a collection gets ANN parts (the one place of these defaults; a store takes
    its policy as ``EmbeddedStore.open(..., ann=AnnPolicy(...))``).

    Attributes:
        min_rows: Collections smaller than this are searched exactly and get no parts
            (a few ms at 384 dimensions, one thread).
        tail_max: Rows past the ANN parts that maintenance leaves to exact search.
        shallow_expansion: Beam width of a *shallow* search, one that wants only the
            nearest row of each part, not a ranked list (the negated query of
            :meth:`~gear_agent.store.collections.Collection.lowest_similarity`). At 150k passages /
            1.35M triples (``benchmarks/shallow_search.py``) it answers a little above
            the true lowest cosine for a quarter of a full search's time; docs/storage.md
            has the table.
        shallow_candidates: Candidates a shallow search takes from each part.
        piece_rows: Most rows of one passage part. A longer range is built as several
            parts (pieces), each committed as it finishes, so an interrupted build keeps
            them. 2^18: a million passages make four pieces of minutes each on one core,
            and a search visits one part per piece (``benchmarks/ann_pieces.py``).
        triple_piece_rows: The same for triple parts: 2^21, larger, since triples are
            built with the cheaper graph and searched at every beam step, where each part
            costs a search; 150k passages' 1.35M triples stay one part, as before pieces.
    """

    min_rows: int = 50_000
    tail_max: int = 4_096
    shallow_expansion: int = 128
    shallow_candidates: int = 20
    piece_rows: int = 262_144
    triple_piece_rows: int = 2_097_152

    def __post_init__(self) -> None:
        for name in ("piece_rows", "triple_piece_rows"):
            if getattr(self, name) < 1:
                raise ValueError(f"AnnPolicy.{name} must be at least 1, got {getattr(self, name)}")

    def pieces_of(self, collection: str) -> int:
        """Most rows of one part of ``collection``.

        Example:
            >>> AnnPolicy().pieces_of("passage"), AnnPolicy().pieces_of("triple")
            (262144, 2097152)
        """
        return self.triple_piece_rows if collection == "triple" else self.piece_rows


DEFAULT_POLICY = AnnPolicy()


@dataclass(frozen=True)
class GraphSettings:
    """HNSW knobs of one collection's parts (usearch's names)."""

    connectivity: int
    expansion_add: int
    expansion_search: int
    """usearch searches with at least the number of candidates asked for."""


GRAPH = {"passage": GraphSettings(16, 64, 640), "triple": GraphSettings(12, 40, 512)}
"""Per collection: triples are many (build time matters most) and already well spread;
passages are ten times fewer and, with the stand-in embedder, crowded (see docs/storage.md),
so they are searched wider."""
LARGE_PART_GRAPH = {"passage": (120_000, GraphSettings(20, 128, 640))}
"""Per collection: (rows, settings) for parts of at least that many rows. An HNSW graph
of fixed connectivity loses recall as it grows: recall@10 of 150k stand-in passages from
200 candidates (``benchmarks/ann_graph_settings.py``, one run, p50 ms in brackets) was
0.926 with 16 / 64 at expansion_search 640 (2.47), 0.962 with 20 / 128 (2.67) and 0.968
with 24 / 128 (3.09); 20 / 128 holds the 0.95 target for 8% more search time where
24 / 128 costs 25%. A denser graph costs every search (+24% dense p50 at 100k, where
16 / 64 already gives 0.966), so it is kept for the parts that need it."""


def graph_settings(collection: str, rows: int) -> GraphSettings:
    """The HNSW settings of a part of ``collection`` holding ``rows`` rows.

    Example:
        >>> graph_settings("passage", 100_000).connectivity, graph_settings("passage", 150_000).connectivity
        (16, 20)
    """
    large = LARGE_PART_GRAPH.get(collection)
    if large is not None and rows >= large[0]:
        return large[1]
    return GRAPH.get(collection, GRAPH["triple"])


OVERSAMPLE = 20
"""Candidates fetched per wanted result, before exact re-scoring."""
MAX_CANDIDATES = 4096
"""Most candidates one search fetches from the ANN parts."""


def candidate_count(k: int, share: float = 1.0) -> int:
    """ANN candidates to fetch for the exact top ``k`` (``share``: live rows per row that
    passes a filter). ``OVERSAMPLE`` per result (at least 200) for the short lists a
    question asks for, where int8 order errors matter most; long lists (a dense prior of
    a thousand passages) are fetched with at most twice their length (at least 1,000),
    since the search's cost grows with the candidates and an order error near the end of
    a long list changes little. Never more than :data:`MAX_CANDIDATES`.

    Example:
        >>> candidate_count(10), candidate_count(50), candidate_count(1000)
        (200, 1000, 2000)
    """
    wanted = max(k * OVERSAMPLE, 200) * share
    return int(min(wanted, max(2 * k, 1000) * share, MAX_CANDIDATES))
SUFFIX = ".usearch"


@dataclass(frozen=True)
class PartInfo:
    """One saved part: the file, the rows ``start..stop`` it holds, its checksum, and the
    stamp of the store state its rows were read from (:meth:`Stamp.as_dict`; None in lists
    written before pieces). Vector rows are append-only, so the part stays exact for every
    later commit of the same index; :meth:`AnnIndex.load` refuses one of another index."""

    file: str
    start: int
    stop: int
    checksum: str
    built_at: dict[str, Any] | None = None

    @property
    def stamp(self) -> Stamp | None:
        return Stamp.from_dict(self.built_at)


def parse_parts(text: str | None) -> list[PartInfo]:
    if not text:
        return []
    return [PartInfo(**entry) for entry in json.loads(text)]


def dump_parts(parts: list[PartInfo]) -> str:
    return json.dumps([asdict(p) for p in parts])


def threads() -> int:
    """Threads for usearch's batch search (parts are built by one thread: see :func:`build_part`)."""
    return max(1, min(os.cpu_count() or 1, 8))


def new_index(dimension: int, graph: GraphSettings | None = None):  # noqa: ANN201 - usearch.index.Index
    """An empty HNSW index (inner product, int8) with ``graph``'s settings (the triples'
    when None: the PPR phrase index uses it too)."""
    from usearch.index import Index

    graph = graph or GRAPH["triple"]
    return Index(ndim=dimension, metric="ip", dtype="i8", connectivity=graph.connectivity,
                 expansion_add=graph.expansion_add, expansion_search=graph.expansion_search)


def mean_row(vectors: np.ndarray, start: int, stop: int, step: int = 65_536) -> np.ndarray:
    """The mean of rows ``start..stop`` (summed in float64, chunk by chunk)."""
    total = np.zeros(vectors.shape[1], dtype=np.float64)
    for lo in range(start, stop, step):
        total += vectors[lo : min(stop, lo + step)].sum(axis=0, dtype=np.float64)
    return (total / max(stop - start, 1)).astype(np.float32)


def build_part(
    root: Path, collection: str, vectors: np.ndarray, start: int, stop: int,
    progress: AnnProgress | None = None, stamp: Stamp | None = None, total: int | None = None,
) -> PartInfo:
    """Build and save the part over rows ``start..stop`` of ``vectors`` (a row-indexed view).

    The part holds the rows minus their mean: for a query ``q``, ``q . (x - mean)`` orders
    the rows exactly as ``q . x`` does (the difference ``q . mean`` is the same for every
    row), but the common component that all embeddings of a corpus share (norm 0.71 for the
    stand-in embedder's passages) no longer crowds the graph and the int8 range. On 20k
    stand-in passages, recall@10 from 300 candidates went from 0.85 to 0.97 with the same
    graph. Queries need nothing: they search with ``q`` as it is.

    Args:
        root: The folder of the part files.
        collection: ``passage`` or ``triple`` (names the file, picks the graph settings).
        vectors: The collection's vectors, row-indexed.
        start: First row of the part.
        stop: Row after its last.
        progress: Called as ``progress("{collection} ANN", rows covered, total)`` after
            each batch of rows is inserted.
        stamp: The store state the rows were read from (recorded in the part's entry).
        total: The rows the whole build covers (``stop`` when None), for ``progress``.
    """
    index = new_index(vectors.shape[1], graph_settings(collection, stop - start))
    mean = mean_row(vectors, start, stop)
    step = 65_536
    total = stop if total is None else total
    for lo in range(start, stop, step):
        hi = min(stop, lo + step)
        index.add(np.arange(lo, hi, dtype=np.uint64), np.ascontiguousarray(vectors[lo:hi] - mean),
                  threads=1)
        if progress is not None:
            progress(f"{collection} ANN", hi, total)
    name = f"{collection}-{start}-{stop}{SUFFIX}"
    checksum = write_atomically(root / name, lambda path: index.save(str(path)))
    return PartInfo(name, start, stop, checksum, None if stamp is None else stamp.as_dict())


class AnnIndex:
    """The opened parts of one collection.

    Example:
        >>> ann = AnnIndex(Path("."), "passage")  # doctest: +SKIP
        >>> ann.load(parts)  # doctest: +SKIP
        >>> ann.candidates(query, 40)  # doctest: +SKIP
    """

    def __init__(self, root: Path, collection: str, shallow_expansion: int = DEFAULT_POLICY.shallow_expansion) -> None:
        self.root, self.collection = Path(root), collection
        self.shallow_expansion = shallow_expansion
        self.parts: list[PartInfo] = []
        self._views: list[object] = []
        self._shallow_views: list[object] | None = None
        self._shallow_lock = threading.Lock()
        self.problems: list[str] = []

    @property
    def covered(self) -> int:
        """Rows ``0..covered`` are in usable parts (contiguous from row 0)."""
        return self.parts[-1].stop if self.parts else 0

    def load(self, parts: list[PartInfo], verify_checksums: bool = True, index_id: str = "") -> None:
        """Open ``parts`` as memory-mapped views; stop at the first bad one (warned): one out
        of order, missing, failing its checksum, or built for another index than ``index_id``
        (when both name one)."""
        self.parts, self._views, self._shallow_views, self.problems = [], [], None, []
        expected_start = 0
        for part in parts:
            path = self.root / part.file
            problem = None
            built = part.stamp
            if part.start != expected_start:
                problem = f"{part.file} does not follow row {expected_start}"
            elif index_id and built is not None and built.index_id and built.index_id != index_id:
                problem = f"{part.file} was built for another index ({built.index_id})"
            elif verify_checksums and not verify(path, part.checksum):
                problem = f"{part.file} is missing or fails its checksum"
            if problem is None:
                try:
                    view = _view(_map(path), graph_settings(self.collection, part.stop - part.start).expansion_search)
                except (ValueError, RuntimeError, OSError) as exc:
                    problem = f"{part.file} cannot be opened ({exc})"
            if problem is not None:
                self.problems.append(problem)
                logger.warning("ANN index %s; searching those rows exactly until it is rebuilt", problem)
                break
            self.parts.append(part)
            self._views.append(view)
            expected_start = part.stop

    def candidates(self, query: np.ndarray, count: int, shallow: bool = False) -> np.ndarray:
        """Rows of up to ``count`` approximate nearest neighbours from each part; with
        ``shallow``, the narrower beam (``shallow_expansion``) for a search that wants
        only the nearest row."""
        found = []
        for view in self._shallow() if shallow else self._views:
            matches = view.search(np.asarray(query, dtype=np.float32), count)  # type: ignore[attr-defined]
            found.append(np.asarray(matches.keys, dtype=np.int64))
        return np.concatenate(found) if found else np.empty(0, dtype=np.int64)

    def _shallow(self) -> list[object]:
        """A second view of each part with the shallow beam, made at the first shallow
        search. usearch reads the beam from the view, so a view per beam keeps concurrent
        searches from changing each other's; it shares the part's one memory map (a view
        of its own file mapping would count the part's pages in RSS twice)."""
        views = self._shallow_views
        if views is None:
            with self._shallow_lock:
                views = self._shallow_views
                if views is None:
                    views = self._shallow_views = [
                        _view(v._gear_map, self.shallow_expansion) for v in self._views]  # type: ignore[attr-defined]
        return views


def _map(path: Path) -> mmap.mmap:
    """``path`` memory-mapped read-only (an empty file raises ValueError)."""
    with path.open("rb") as file:
        return mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)


def _view(mapped: mmap.mmap, expansion_search: int):  # noqa: ANN202 - usearch.index.Index
    """A usearch view of the part in ``mapped``, searching with ``expansion_search``. The
    view keeps the map alive (usearch only borrows its bytes)."""
    from usearch.index import Index

    view = Index.restore(mapped, view=True)
    if view is None:
        raise ValueError("not a usearch index")
    view.expansion_search = expansion_search
    view._gear_map = mapped  # type: ignore[attr-defined]
    return view


def plan_parts(
    parts: list[PartInfo], rows: int, policy: AnnPolicy = DEFAULT_POLICY, collection: str = "passage",
) -> tuple[list[PartInfo], int, int] | None:
    """The next piece maintenance should build: (parts kept, its first row, the row after
    its last), or None when the parts are up to date.

    The new part covers the rows after the kept parts, up to ``rows`` but at most
    :meth:`AnnPolicy.pieces_of` ``collection`` of them; trailing parts are folded into it
    while it would be at least half the size of the one before (so there are O(log n)
    parts below a piece and each row is rebuilt O(log n) times), never a full piece. Asked
    again after each piece is recorded, it gives the next one: the same sequence whether or
    not a build was interrupted between pieces.

    Example:
        >>> policy = AnnPolicy(min_rows=10, tail_max=2, piece_rows=100)
        >>> plan_parts([], 250, policy)
        ([], 0, 100)
        >>> full = PartInfo("p-0-100.usearch", 0, 100, "")
        >>> plan_parts([full], 250, policy)[1:]
        (100, 200)
    """
    if rows < policy.min_rows:
        return None
    piece = policy.pieces_of(collection)
    covered = parts[-1].stop if parts else 0
    if rows - covered <= policy.tail_max and covered > 0:
        return None
    kept = list(parts)
    start = covered
    while kept:
        last = kept[-1]
        size = last.stop - last.start
        if size >= piece or (rows - start) * 2 < size:
            break
        start = kept.pop().start
    return kept, start, min(rows, start + piece)
