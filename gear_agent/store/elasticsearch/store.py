"""The Elasticsearch backend of :class:`~gear_agent.store.base.Store`.

Passages and triples live in two indices, ``{GEAR_ES_INDEX_PREFIX}-passages``
and ``-triples`` (mappings in :mod:`gear_agent.store.elasticsearch.mappings`); every
request body is built by a pure function in :mod:`gear_agent.store.elasticsearch.queries`;
bulk writes with retries are in :mod:`gear_agent.store.elasticsearch.bulk`; connecting and
the version checks in :mod:`gear_agent.store.elasticsearch.client`.

Supported: the 8.x ``elasticsearch`` client against an 8.x server (8.4 or newer).
Install with ``pip install 'gear-agent[elasticsearch]'``. See docs/elasticsearch.md.

Example:
    >>> settings = ElasticsearchSettings(es_url="http://localhost:9200")
    >>> store = ElasticsearchStore(settings, embedder)  # doctest: +SKIP
    >>> store.passages.bm25_search("capital of France", k=5)  # doctest: +SKIP
    [Hit(id='p-...', score=7.1)]
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from gear_agent.embedding.base import Embedder
from gear_agent.filters import Where, parse_where
from gear_agent.store.base import Store, StoreError, split_new
from gear_agent.store.changes import Changes, Stamp
from gear_agent.store.collections import Passages, Triples
from gear_agent.store.elasticsearch import bm25 as es_bm25
from gear_agent.store.elasticsearch import queries as q
from gear_agent.store.elasticsearch.bulk import BulkFailure, BulkOutcome, BulkWriteError, BulkWriter
from gear_agent.store.elasticsearch.changes import (
    BY_RECORD,
    ChangeFeed,
    added_query,
    changes_mappings,
    deleted_query,
    deletion_record,
    visible_at,
)
from gear_agent.store.elasticsearch.client import (
    ElasticsearchSettings,
    check_server,
    error_cause,
    make_client,
    missing_index,
    translate_errors,
)
from gear_agent.store.elasticsearch.connection import MGET_CHUNK, Connection, stacked_vectors
from gear_agent.store.elasticsearch.connection import body as _body
from gear_agent.store.elasticsearch.connection import chunks as _chunks
from gear_agent.store.elasticsearch.connection import unique as _unique
from gear_agent.store.elasticsearch.graph_cache import DOCUMENT_FIELDS, ExpansionCache
from gear_agent.store.elasticsearch.mappings import (
    FEED_FIELDS,
    TEXT_FIELD,
    VECTOR_FIELD,
    IndexNames,
    check_mapping,
    check_owned,
    feed_mapping,
    index_mappings,
    index_names,
    index_settings,
    passage_document,
    passage_from_source,
    triple_document,
    triple_from_source,
    upgrade_mapping,
)
from gear_agent.store.elasticsearch.nodes import ElasticsearchNodeStore
from gear_agent.store.elasticsearch.passage_vectors import LARGE_SEARCH, PassageVectors
from gear_agent.store.elasticsearch.recent_triples import RecentTriples
from gear_agent.store.elasticsearch.sync import AtomicSync
from gear_agent.store.multi_search import Search, answer_one
from gear_agent.types import AddResult, Collection, Hit, Passage, Triple

if TYPE_CHECKING:  # pragma: no cover - typing only
    from elasticsearch import Elasticsearch


__all__ = ["BulkFailure", "BulkWriteError", "ElasticsearchSettings", "ElasticsearchStore"]

_MAX_FILTER_PASSAGES = 65_536

_TERMS_CHUNK = 1_000
_NO_VECTOR = {"excludes": [VECTOR_FIELD]}
_RECENT_TRIPLES = 4_096
"""Triple documents of recent neighbours searches kept for the reads that follow."""
_CHANGES_KEPT = 4
"""``changes_since`` answers kept (by since and published generation)."""
_TRIPLE_FIELDS = ["id", "subject", "predicate", "object", "passage_id"]
"""The fields of a triple document a :class:`Triple` is made of (no vector)."""
TRIPLE_SCAN_BYTES = 320 * 2**20
"""Up to this many bytes of triple vectors (218,000 triples at 384 dimensions), a triple search
of :meth:`ElasticsearchStore.search_many` without a filter (``ppr``'s seed triples and their
lowest cosine) is an exact scan of the triples kept in the process for graph expansion
(:mod:`gear_agent.store.elasticsearch.graph_cache`, made for it when the index is that small)
rather than two kNN searches in the cluster: at 190,000 triples the scan is about 11 ms of this
process's CPU, the ``_msearch`` 16 ms on a quiet test cluster and several times that, with a
long tail, on a loaded one (docs/elasticsearch.md). Above it the cluster answers: the scan
grows with the index (about 100 ms at 900,000 triples), its HNSW search does not."""
SEED_DOCUMENTS = 64
"""A triple kNN search of :meth:`ElasticsearchStore.search_many` of at most this many hits
(``ppr``'s seed triples: 5) brings its documents along, so the :meth:`ElasticsearchTriples.get`
of the seeds that follows costs no ``_mget``."""


def _search_error(what: str, response: dict[str, Any]) -> StoreError:
    """The error of one search of an ``_msearch`` answer, as :func:`translate_errors` words
    the error of a single search."""
    error = response["error"]
    gone = missing_index(what, error)
    if gone is not None:
        return gone
    cause = error_cause(error)
    return StoreError(f"{what}: Elasticsearch answered HTTP {response.get('status', '?')}, "
                      f"{cause.get('type')}: {cause.get('reason')}")


class ElasticsearchStore(AtomicSync, Store):
    """Passages and triples in Elasticsearch, behind the :class:`Store` interface.

    Opening checks the cluster (reachable, credentials accepted, an 8.x server),
    creates missing indices with explicit mappings, and refuses existing ones
    built with another embedding model (:class:`ModelMismatchError`) or with an
    incompatible mapping (:class:`StoreError`). Every write is refreshed before
    it returns, so it is searchable at once.

    Args:
        settings: URL, credentials, certificate checking and index prefix
            (:class:`~gear_agent.config.ElasticsearchSettings`, the ``GEAR_ES_*`` section;
            a ``GearSettings`` is one).
        embedder: Embeds passages (``Passage.content``) and triples
            (``Triple.text``); its ``name`` and ``dimension`` are recorded in
            each index's mapping ``_meta``.
        client: An ``elasticsearch.Elasticsearch`` to use instead of one built
            from ``settings`` (it is then not closed by :meth:`close`).
        create: Create missing indices (else a missing index is an error).
        bulk_batch_size: Documents per ``_bulk`` request.
        max_retries: Re-sends of items rejected with 429/503.
        initial_backoff_s: First wait before a re-send; doubles each time.
        sleep: The wait function (inject a no-op in tests).
        page_size: Hits per page when walking an index (``search_after``).
        tokenizer: The BM25 tokenizer the indices are made with (``standard``: the standard
            analyzer; ``word``: an analyzer that tokenises as the embedded ``word`` tokenizer),
            recorded in them, and an index made with another is refused. By default the
            settings' ``bm25_tokenizer`` where they carry one (a ``GearSettings``), else
            ``standard``.

    Raises:
        StoreError: missing package, unreachable cluster, refused credentials,
            unsupported server, or an incompatible existing index.
        ModelMismatchError: an index was built with another embedding model.
    """

    backend: ClassVar[str] = "elasticsearch"

    def __init__(
        self,
        settings: ElasticsearchSettings,
        embedder: Embedder,
        client: Elasticsearch | None = None,
        *,
        create: bool = True,
        bulk_batch_size: int = 500,
        max_retries: int = 5,
        initial_backoff_s: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
        page_size: int = q.PAGE_SIZE,
        tokenizer: str | None = None,
    ) -> None:
        self.settings = settings
        self.tokenizer = tokenizer or getattr(settings, "bm25_tokenizer", "standard")
        self.page_size = page_size
        self.embedder = embedder
        self.embedding_model = embedder.name
        self.dimension = int(embedder.dimension)
        self.indices: IndexNames = index_names(settings.es_index_prefix)
        self._owns_client = client is None
        self._client = client if client is not None else make_client(settings)
        self._where = settings.es_url or "the given client"
        self.connection = Connection(
            self._client,
            BulkWriter(self._client, batch_size=bulk_batch_size, max_retries=max_retries,
                       initial_backoff_s=initial_backoff_s, sleep=sleep),
            page_size,
            self._pin,
        )
        self._recent_triples = RecentTriples(_RECENT_TRIPLES)  # kept at one commit (.recent_triples)
        self._changes_read: dict[tuple[int, int], Changes] = {}  # the last few changes_since answers
        self._expansion_cache: ExpansionCache | None = None  # made by the first graph expansion
        self._kept_passages: PassageVectors | None = None  # made by the first large passage search
        self._few_triples: bool | None = None  # whether ppr's seed search may scan the kept triples (one count)
        self.changes_index = f"{settings.es_index_prefix}-changes"
        self._feed: ChangeFeed | None = None  # None: an index made before the feed, opened read-only
        self._pinned = threading.local()  # the generation a snapshot() reads
        self.passages = ElasticsearchPassages(self)
        self.triples = ElasticsearchTriples(self)
        self.nodes = ElasticsearchNodeStore(self)
        """The SiReRAG nodes (``{prefix}-nodes``, made by the first write)."""
        try:
            self.server_version, self.cluster_uuid = check_server(self._client, self._where)
            for collection in ("passage", "triple"):
                self._open_index(collection, create)
            self._open_feed(create, sleep)
        except BaseException:
            self.close()
            raise

    def __repr__(self) -> str:
        return (
            f"ElasticsearchStore({self._where!r}, indices={tuple(self.indices)!r}, "
            f"model={self.embedding_model!r})"
        )

    # ---- start-up ----------------------------------------------------------
    def _open_index(self, collection: Collection, create: bool) -> None:
        """Create the index if it is missing, else check its mapping and model."""
        name = self.indices.of(collection)
        es = self._client
        with translate_errors(f"checking index {name!r}"):
            exists = bool(es.indices.exists(index=name))
        if not exists and not create:
            raise StoreError(
                f"no index {name!r} at {self._where}: build one first with `gear index` "
                "(GEAR_BACKEND=elasticsearch), or check GEAR_ES_INDEX_PREFIX"
            )
        mapping = self._create_or_read(name, None if exists else index_mappings(
            collection, self.embedding_model, self.dimension, self.tokenizer))
        if mapping is None:
            return
        check_mapping(name, mapping, collection, self.embedding_model, self.dimension, self.tokenizer)
        if any(f not in (mapping.get("properties") or {}) for f in FEED_FIELDS):  # made before them
            with translate_errors(f"adding the change feed's field to index {name!r}"):
                es.indices.put_mapping(index=name, **feed_mapping())
        if ((mapping.get("_meta") or {}).get("gear_agent") or {}).get("schema_version") == 1:
            body = upgrade_mapping(collection, self.embedding_model, self.dimension)
            with translate_errors(f"adding the metadata fields to index {name!r}"):
                es.indices.put_mapping(index=name, **body)

    def _open_feed(self, create: bool, sleep: Callable[[float], None]) -> None:
        """Open the change feed (:mod:`gear_agent.store.elasticsearch.changes`), made here when missing
        (``create``; :meth:`_open_index` gave the passage and triple indices its field)."""
        mappings = changes_mappings(self.embedding_model) if create else None
        if not self.ensure_index(self.changes_index, "changes", mappings):
            return
        feed = ChangeFeed(self._client, self.changes_index, sleep=sleep)
        feed.open(self._indexing_total)
        feed.recover = self._roll_back_syncs
        self._feed = feed

    @property
    def derived_dir(self) -> Path:
        """Where caches derived from this index live, outside the cluster:
        ``{cache_dir}/{cluster_uuid}-{index_prefix}`` (the PPR graph)."""
        return Path(self.settings.es_cache_dir) / f"{self.cluster_uuid}-{self.settings.es_index_prefix}"

    def ensure_index(self, name: str, collection: str, mappings: dict[str, Any] | None) -> bool:
        """Whether index ``name`` exists, checked to be gear-agent's for ``collection`` and
        this model (``_meta.gear_agent``); with
        ``mappings``, create it first when it is missing (another process creating it
        meanwhile is fine). For the indices made on first use (SiReRAG nodes).

        Raises:
            StoreError: it exists but was not made by gear-agent for that collection.
            ModelMismatchError: it was made with another embedding model.
        """
        with translate_errors(f"checking index {name!r}"):
            exists = bool(self._client.indices.exists(index=name))
        if not exists and mappings is None:
            return False
        mapping = self._create_or_read(name, None if exists else mappings)
        if mapping is not None:
            check_owned(name, mapping, collection, self.embedding_model)
        return True

    def _create_or_read(self, name: str, mappings: dict[str, Any] | None) -> dict[str, Any] | None:
        """With ``mappings``: create index ``name`` and return None, or, when another process
        created it meanwhile, fall through to reading it. Returns the existing index's
        mapping (the answer is keyed by the concrete index: ``name`` may be an alias)."""
        es = self._client
        if mappings is not None:
            try:
                with translate_errors(f"creating index {name!r}"):
                    es.indices.create(index=name, settings=index_settings(self.tokenizer), mappings=mappings)
                return None
            except StoreError as err:
                if "resource_already_exists_exception" not in str(err):
                    raise
        with translate_errors(f"reading the mapping of index {name!r}"):
            response = _body(es.indices.get_mapping(index=name))
        return next((entry.get("mappings", {}) for entry in response.values()), {})

    # ---- helpers -----------------------------------------------------------
    def embed_rows(self, texts: list[str]) -> tuple[np.ndarray, set[int]]:
        """Vectors for ``texts`` and the rows that cannot be indexed (zero or not finite)."""
        vectors = np.asarray(self.embedder.embed(texts), dtype=np.float32)
        if vectors.shape != (len(texts), self.dimension):
            raise StoreError(
                f"embedder {self.embedding_model!r} returned shape {vectors.shape} for "
                f"{len(texts)} texts; expected ({len(texts)}, {self.dimension})"
            )
        norms = np.linalg.norm(vectors, axis=1)
        bad = {i for i, n in enumerate(norms) if not np.isfinite(n) or n == 0.0}
        return vectors, bad

    def query_vector(self, vector: np.ndarray) -> np.ndarray:
        """``vector`` as a float32 row of this store's dimension (ValueError otherwise)."""
        vector = np.asarray(vector, dtype=np.float32).reshape(-1)
        if vector.shape != (self.dimension,):
            raise ValueError(
                f"query vector has shape {vector.shape}; this store's vectors have "
                f"dimension {self.dimension} ({self.embedding_model})"
            )
        norm = float(np.linalg.norm(vector))
        if not np.isfinite(norm) or norm == 0.0:
            raise ValueError(
                "query vector is zero or not finite; cosine similarity needs a direction"
            )
        return vector

    def _write(
        self, actions: Iterable[Any], refresh: Sequence[str], failures: list[BulkFailure]
    ) -> BulkOutcome:
        """Run bulk actions (:meth:`Connection.write`), forgetting the kept triple documents."""
        self._recent_triples.clear()
        return self.connection.write(actions, refresh, failures)

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """Build in bulk: Elasticsearch's settings for a bulk load while the block runs.

        The passage and triple indices get ``refresh_interval: -1`` and
        ``number_of_replicas: 0`` (:meth:`Connection.bulk_settings`; no periodic refresh, no copy to replicas while
        writing), and writes are not refreshed one by one; when the block ends (also by
        an exception) the indices' own values are put back (an unset one is reset to the
        cluster's default) and every index written is refreshed once, so everything is
        searchable when the block returns. Inside the block, reads by id (``_mget``) see
        what was written, and a search first refreshes the indices written since the last
        refresh (so a build that searches, as SiReRAG's does, sees its own writes).

        Example:
            >>> with store.bulk_load():  # doctest: +SKIP
            ...     add_passages(store, passages, report); import_openie(store, path, report)
        """
        if self.connection.loading is not None:
            yield
            return
        with self._commit():  # one commit, published after the refresh at the end
            with self.connection.bulk_settings(self.indices):
                yield

    # ---- writes ------------------------------------------------------------
    def _record_deleted(self, collection: str, born: dict[str, int], generation: int | None) -> None:
        """Write the deletion records of ``born`` (id -> the generation that wrote it) before
        the documents go, so no reader of the feed misses a removal."""
        if generation is None or not born:
            return
        index = self.changes_index
        records = (deletion_record(collection, doc_id, generation, int(b)) for doc_id, b in born.items())
        outcome = self._write((q.index_action(index, rid, doc) for rid, doc in records), [index], [])
        if not outcome.ok:
            raise BulkWriteError(f"recording {len(born)} deletion(s) in {index!r} (nothing was deleted; "
                                 "retry the delete)", outcome)

    # ---- commits -----------------------------------------------------------
    def generation(self) -> int:
        """The last published commit of the change feed (one real-time ``GET``; inside
        :meth:`snapshot`, the one the snapshot began at). An index made before the feed and
        opened without ``create`` answers as before: the indexing operations the two
        indices' primaries have taken (one ``_stats`` request, the ``monitor`` privilege)."""
        pinned = getattr(self._pinned, "generation", None)
        if pinned is not None:
            return int(pinned)
        if self._feed is not None:
            return self._feed.published()
        return self._indexing_total()

    def _indexing_total(self) -> int:
        """Creates, updates and deletes the passage and triple primaries have taken."""
        with translate_errors("reading the indexing statistics"):
            stats = _body(self._client.indices.stats(index=",".join(self.indices), metric="indexing"))
        indexing = stats["_all"]["primaries"].get("indexing", {})
        return int(indexing.get("index_total", 0)) + int(indexing.get("delete_total", 0))

    def index_id(self) -> str:
        """The two indices' own uuids (Elasticsearch makes one when it creates an index, so
        indices deleted and made again under the same names get others), read once."""
        known = self.__dict__.get("_index_id")
        if known is None:
            with translate_errors("reading the indices' uuids"):
                found = _body(self._client.indices.get_settings(index=",".join(self.indices), name="index.uuid"))
            known = self.__dict__["_index_id"] = ".".join(
                str(found[name]["settings"]["index"]["uuid"]) for name in self.indices)
        return known

    def knows(self, stamp: Stamp) -> bool:
        """Whether ``stamp`` is a commit of these indices that the change feed reaches:
        the same two indices (their uuids: a restored or re-made index has others) at a
        generation from the feed's start up to now. Elasticsearch keeps no commit digest,
        and its published generations only grow, so the uuids and the generation name it."""
        feed = self._feed
        return (stamp.index_id == self.index_id() and feed is not None
                and feed.start <= stamp.generation <= self.generation())

    def changes_since(self, generation: int) -> Changes:
        """What the commits after ``generation`` added and removed, from the change feed
        (:mod:`gear_agent.store.elasticsearch.changes`): the documents stamped with a later generation,
        and the deletion records of documents present at ``generation``. An id deleted and
        then added again is in both lists (apply removals first). Incomplete for a
        generation before the feed began, or on an index without a feed. The last few answers
        are kept by ``(generation, now)``: after a write by another process, the PPR graph, the
        passage vectors and the expansion's triples each ask for the same changes, which were
        read once (the deletion records of 1,000 passages and their 9,000 triples are ten pages).

        Example:
            >>> store.changes_since(store.generation())  # doctest: +SKIP
            Changes(since=7, generation=7, ...)
        """
        now = self.generation()
        feed = self._feed
        if feed is None or generation < feed.start or generation > now:
            return Changes(generation, now, complete=False)
        if generation == now:
            return Changes(generation, now)
        known = self._changes_read.get((generation, now))
        if known is not None:
            return known
        added = added_query(generation, now)
        passages = tuple(h["_id"] for h in self.connection.walk(self.indices.passages, added, q.BY_ID))
        triples = tuple(h["_id"] for h in self.connection.walk(self.indices.triples, added, q.EXTRACTION_ORDER))
        removed: dict[str, list[str]] = {"passage": [], "triple": []}
        records = self.connection.walk(self.changes_index, deleted_query(generation, now), BY_RECORD,
                             {"includes": ["collection", "doc_id"]})
        for hit in records:
            removed[hit["_source"]["collection"]].append(hit["_source"]["doc_id"])
        changes = Changes(generation, now, passages, tuple(removed["passage"]), triples, tuple(removed["triple"]))
        kept = list(self._changes_read.items())[-(_CHANGES_KEPT - 1):]
        self._changes_read = {**dict(kept), (generation, now): changes}
        return changes

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """The generation and the change feed read inside are those of the commit published
        when the block began, however many land meanwhile (per thread, re-entrant); reads by
        id and searches see the latest documents (Elasticsearch pins no commit)."""
        if getattr(self._pinned, "generation", None) is not None:
            yield
            return
        self._pinned.generation = self.generation()
        try:
            yield
        finally:
            self._pinned.generation = None

    def _pin(self) -> dict[str, Any] | None:
        """The filter that hides documents of unpublished commits and retired ones from
        searches (:func:`~gear_agent.store.elasticsearch.changes.visible_at` of :meth:`_seen_generation`)."""
        at = self._seen_generation()
        return None if at is None else visible_at(at)

    def _seen_generation(self) -> int | None:
        """The generation searches show: the snapshot's inside :meth:`snapshot`, else the
        published one (one real-time ``GET``); None (everything) on an index without a feed
        and in the thread writing, so a writer's searches see its own writes."""
        if self._feed is None or self._feed.writing_here:
            return None
        pinned = getattr(self._pinned, "generation", None)
        return int(self._feed.published() if pinned is None else pinned)

    @contextmanager
    def _commit(self) -> Iterator[int | None]:
        """One commit of the change feed around a write: the writer lock held, the generation
        to stamp yielded (None on an index without a feed), published at the end; then the
        listeners are told."""
        feed = self._feed
        try:
            if feed is None:
                yield None
            else:
                with feed.writing() as generation:
                    yield generation
        finally:
            if feed is None or feed.pending is None:
                self._committed(self.generation)

    def _changing(self) -> None:
        """Note that the commit being written changes something (it is published)."""
        if self._feed is not None:
            self._feed.wrote()

    # ---- reads -------------------------------------------------------------
    def _filter(self, collection: Collection, where: Where | None) -> dict[str, Any] | None:
        """The server-side filter of ``where`` for ``collection`` (None: no filter).

        Triples are filtered by their passage: the passages passing ``where`` are looked
        up first (at most 65,536), then their triples by ``passage_id``.
        """
        if where is None:
            return None
        passage_filter = q.where_filter(where)
        if collection == "passage":
            return passage_filter
        self.indices.of(collection)
        ids = [hit["_id"] for hit in self.connection.walk(self.indices.passages, passage_filter, q.BY_ID)]
        if len(ids) > _MAX_FILTER_PASSAGES:
            raise StoreError(
                f"the filter {where} matches {len(ids):,} passages; a triple search can be "
                f"restricted to at most {_MAX_FILTER_PASSAGES:,}: narrow the filter"
            )
        return q.terms("passage_id", ids)

    def _exact_bm25(self, index: str, field: str, query: str, hits: list[dict[str, Any]], k: int) -> list[Hit]:
        """``hits`` scored again with exact document lengths (:mod:`gear_agent.store.elasticsearch.bm25`)."""
        if not hits:
            return []
        with translate_errors(f"BM25 rescoring on {index!r}"):
            terms = es_bm25.query_terms(_body(self._client.indices.analyze(index=index, field=field, text=query)))
            vectors = _body(self._client.mtermvectors(
                index=index, **es_bm25.termvectors_request(field, [h["_id"] for h in hits])))
        return es_bm25.rescore(terms, vectors, field, k, {h["_id"]: h.get("_seq_no", 0) for h in hits})

    def search_many(self, searches: Sequence[Search]) -> list[list[Hit]]:
        """Several searches in one ``_msearch`` (:mod:`gear_agent.store.multi_search`): each the
        search the collection's ``bm25_search``, ``vector_search`` or ``lowest_similarity``
        asks (an exact-BM25 search, rescored, and a kNN search that met a document not seen at
        the generation read are asked again alone, as those methods do). A kNN search's ids
        come from the ``id`` doc values with no stored field read (``stored_fields: _none_``):
        ``ppr``'s dense list is a thousand hits, whose fetch phase took half the search's time.
        A passage search of :data:`LARGE_SEARCH` hits or more without a filter (``ppr``'s dense
        list), and with it the lowest passage similarity, is an exact scan of the passage
        vectors kept in the process (:mod:`gear_agent.store.elasticsearch.passage_vectors`).
        Inside :meth:`snapshot`, a triple kNN search of at most :data:`SEED_DOCUMENTS` hits
        brings its documents (no vectors) and keeps them for the reads by id that follow
        (:meth:`_remember`: ``ppr``'s seed triples), unless the expansion's triples are kept in
        the process already (:meth:`_expansion`; they answer reads by id)."""
        at = self._seen_generation()
        pin = None if at is None else visible_at(at)
        lines: list[Any] = []
        sent: list[int] = []
        found: list[list[Hit] | None] = [None] * len(searches)
        kept = self._passage_vectors(searches)
        triples = self._kept_triples(searches)
        documents = self._keeps_seed_documents(at)
        with_documents: set[int] = set()
        for n, search in enumerate(searches):
            if kept is not None and search.collection == "passage" and search.where is None and search.kind != "bm25":
                vector = self.query_vector(search.vector)
                low = kept.lowest(vector) if search.kind == "lowest" else None
                found[n] = kept.search(vector, search.k) if search.kind == "vector" else (
                    [] if low is None else [Hit("", low)])
                continue
            if triples is not None and search.collection == "triple" and search.where is None and search.kind != "bm25":
                vector = self.query_vector(search.vector)
                low = triples.lowest(vector) if search.kind == "lowest" else None
                found[n] = triples.search(vector, search.k) if search.kind == "vector" else (
                    [] if low is None else [Hit("", low)])
                continue
            if search.k <= 0 or (search.kind == "bm25" and self.settings.es_exact_bm25):
                continue
            flt = self._filter(search.collection, parse_where(search.where))
            if search.kind == "bm25":
                request = q.bm25_request(TEXT_FIELD[search.collection], search.query, search.k, filter=q.both(flt, pin))
            else:
                vector = self.query_vector(search.vector) * (-1 if search.kind == "lowest" else 1)
                request = {**q.knn_request(vector, search.k, filter=flt), "stored_fields": "_none_",
                           "docvalue_fields": ["id"] if pin is None else ["id", "generation", "retired"]}
                del request["source"]
                if documents and search.collection == "triple" and search.kind == "vector" \
                        and search.k <= SEED_DOCUMENTS:
                    del request["stored_fields"]  # (``_none_`` refuses a ``_source``)
                    request["source"] = {"includes": _TRIPLE_FIELDS}
                    with_documents.add(n)
            lines += q.msearch_lines(self.indices.of(search.collection), [request])
            sent.append(n)
        if lines:
            what = f"{len(sent)} searches in one request"
            self.connection.settle()
            with translate_errors(what):
                answer = _body(self._client.msearch(searches=lines))
            for n, response in zip(sent, answer["responses"], strict=True):
                if "error" in response:
                    raise _search_error(what, response)
                hits, kind = response["hits"]["hits"], searches[n].kind
                unseen = at is not None and kind != "bm25" and any(not _visible(h, at) for h in hits)
                if kind == "bm25":
                    found[n] = [Hit(h["_id"], float(h["_score"])) for h in hits]
                elif not unseen:
                    cosines = [Hit(h["fields"]["id"][0], q.score_to_cosine(float(h["_score"]))) for h in hits]
                    found[n] = cosines if kind == "vector" else [Hit("", -c.score) for c in cosines[:1]]
                    if n in with_documents:
                        self._check_recent()
                        self._remember(hits)
        return [hits if hits is not None else answer_one(self, search) for hits, search in zip(found, searches)]

    def _keeps_seed_documents(self, at: int | None) -> bool:
        """Whether :meth:`search_many`'s small triple searches bring their documents: inside a
        snapshot (the kept documents' generation is then known without a request), and when
        the expansion's triples are not kept in the process."""
        cache = self._expansion_cache
        pinned = getattr(self._pinned, "generation", None)
        return at is not None and pinned is not None and (cache is None or cache.stamp is None)

    def _reads_own_writes(self) -> bool:
        """Whether this thread is writing through this store (a bulk load, or a commit):
        its reads must see its own writes, so no copy kept in the process answers them."""
        return self.connection.loading is not None or (self._feed is not None and self._feed.writing_here)

    def _expansion(self, build: bool = True) -> ExpansionCache | None:
        """The triples graph expansion reads, kept in this process at this store's commit
        (:mod:`gear_agent.store.elasticsearch.graph_cache`; made by the first expansion when
        ``build``); None while this thread writes."""
        if self._reads_own_writes():
            return None
        cache = self._expansion_cache
        if cache is None and build:
            cache = self._expansion_cache = ExpansionCache(self.dimension, self._triple_documents, self.derived_dir)
        if cache is None or (cache.stamp is None and not build):
            return None
        with cache.lock:
            return cache.current(self)

    def _passage_vectors(self, searches: Sequence[Search]) -> PassageVectors | None:
        """The passage vectors kept in the process at this store's commit, when ``searches`` hold
        a large passage search without a filter (:data:`LARGE_SEARCH`); None while this thread
        writes."""
        if not any(s.collection == "passage" and s.kind == "vector" and s.where is None and s.k >= LARGE_SEARCH
                   for s in searches):
            return None
        if self._reads_own_writes():
            return None
        if self._kept_passages is None:
            self._kept_passages = PassageVectors(self.dimension, self._passage_documents)
        with self._kept_passages.lock:
            return self._kept_passages.current(self)

    def _kept_triples(self, searches: Sequence[Search]) -> ExpansionCache | None:
        """The triples kept for graph expansion, at this store's commit, when ``searches`` hold
        a triple kNN search without a filter and their vectors are at most
        :data:`TRIPLE_SCAN_BYTES` (made here when the index's triples are that few: one count,
        once per process); None while this thread writes."""
        if not any(s.collection == "triple" and s.kind != "bm25" and s.where is None for s in searches):
            return None
        if self._reads_own_writes():
            return None
        cache = self._expansion_cache
        if cache is None or cache.stamp is None:
            if self._few_triples is None:
                self._few_triples = self.triples.count() * self.dimension * 4 <= TRIPLE_SCAN_BYTES
            if not self._few_triples:
                return None
        cache = self._expansion()
        return cache if cache is not None and cache.vector_bytes() <= TRIPLE_SCAN_BYTES else None

    def _passage_documents(self, ids: Sequence[str] | None) -> Iterator[list[dict[str, Any]]]:
        """Passage ids with their vectors, a page at a time: every passage (one point-in-time
        walk) for None, else those ids (``_mget``)."""
        return self._documents(self.indices.passages, ids, ["id", VECTOR_FIELD], q.BY_ID)

    def _triple_documents(self, ids: Sequence[str] | None) -> Iterator[list[dict[str, Any]]]:
        """Whole triple documents, vectors included, a page at a time: every one in extraction
        order (one point-in-time walk) for None, else those ids (``_mget``)."""
        return self._documents(self.indices.triples, ids, list(DOCUMENT_FIELDS), q.EXTRACTION_ORDER)

    def _documents(self, index: str, ids: Sequence[str] | None, fields: list[str],
                   order: Sequence[tuple[str, str]]) -> Iterator[list[dict[str, Any]]]:
        if ids is None:
            batch: list[dict[str, Any]] = []
            for hit in self.connection.walk(index, q.match_all(), order, {"includes": fields}, snapshot=True):
                batch.append(hit["_source"])
                if len(batch) >= self.page_size:
                    yield batch
                    batch = []
            if batch:
                yield batch
            return
        for chunk in _chunks(ids, MGET_CHUNK):
            found = self.connection.mget(index, chunk, fields)
            yield [found[i] for i in chunk if i in found]

    def _check_recent(self) -> None:
        """Bring the kept triple documents to the store's commit before the search that keeps
        more (:mod:`.recent_triples`: the one freshness rule, over the change feed)."""
        self._recent_triples.current(self)

    def _remember(self, hits: Sequence[dict[str, Any]]) -> None:
        """Keep the triple documents a neighbours search returned (the latest
        ``_RECENT_TRIPLES``: :mod:`.recent_triples`), so reading them again right after costs
        no request."""
        self._recent_triples.remember(hits)

    def _triple_sources(self, ids: Sequence[str], fields: Sequence[str] | None) -> dict[str, dict[str, Any]]:
        """Triple documents by id with ``fields`` (None: all but the vector): kept ones from
        :meth:`ElasticsearchStore._remember` that have them, the rest by ``_mget``."""
        wanted = _TRIPLE_FIELDS if fields is None else fields
        found = {i: doc for i, doc in self._recent_triples.found(ids).items() if all(f in doc for f in wanted)}
        rest = [i for i in ids if i not in found]
        if rest:
            found.update(self.connection.mget(self.indices.triples, rest, fields))
        return found

    def close(self) -> None:
        """Close the client if this store built it; an injected client stays open."""
        if self._owns_client:
            self._client.close()


def _visible(hit: dict[str, Any], at: int) -> bool:
    """Whether a hit with its ``generation`` and ``retired`` doc values is seen at ``at``."""
    fields = hit.get("fields") or {}
    return max(fields.get("generation", [-1])) <= at and min(fields.get("retired", [at + 1])) > at


class _Searchable:
    """Count and search of one index of an :class:`ElasticsearchStore` (what passages and
    triples share)."""

    name: ClassVar[str]

    def __init__(self, store: ElasticsearchStore) -> None:
        self.store = store

    def count(self, where: Any = None) -> int:
        index = self.store.indices.of(self.name)
        flt = q.both(self.store._filter(self.name, parse_where(where)), self.store._pin())
        body = {} if flt is None else {"query": {"bool": {"filter": [flt]}}}
        self.store.connection.settle()
        with translate_errors(f"counting {index!r}"):
            return int(_body(self.store._client.count(index=index, **body))["count"])

    def bm25_search(self, query: str, k: int, where: Any = None) -> list[Hit]:
        """Top ``k`` by BM25 (only matching documents, filtered server-side); ``k`` <= 0 gives ``[]``."""
        index = self.store.indices.of(self.name)
        if k <= 0:
            return []
        flt = q.both(self.store._filter(self.name, parse_where(where)), self.store._pin())
        exact = self.store.settings.es_exact_bm25
        request = q.bm25_request(TEXT_FIELD[self.name], query, es_bm25.candidates(k) if exact else k, filter=flt)
        if exact:
            request["seq_no_primary_term"] = True
        response = self.store.connection.search(f"BM25 search on {index!r}", index, request)
        if not exact:
            return [Hit(h["_id"], float(h["_score"])) for h in response["hits"]["hits"]]
        return self.store._exact_bm25(index, TEXT_FIELD[self.name], query, response["hits"]["hits"], k)

    def vector_search(self, vector: np.ndarray, k: int, where: Any = None) -> list[Hit]:
        """Top ``k`` by cosine; scores are cosines (ES's ``(1 + cos) / 2`` undone). With
        ``where``, a kNN pre-filter: ``k`` hits whenever ``k`` documents pass it.

        The hits bring their ``generation`` and ``retired`` (from doc values) and only when
        one of them is of a later commit or retired is the search asked again with the
        filter (rare: a commit landing during the question); ``ppr`` asks four kNN searches
        per question, one of hundreds of passages, and a filter on each was measurably slower
        on the test cluster (docs/elasticsearch.md)."""
        index = self.store.indices.of(self.name)
        if k <= 0:
            return []
        vector = self.store.query_vector(vector)
        flt = self.store._filter(self.name, parse_where(where))
        at = self.store._seen_generation()
        pin = None if at is None else visible_at(at)
        request = q.knn_request(vector, k, filter=flt)
        if pin is not None:  # from doc values: reading _source would parse every hit's vector
            request["docvalue_fields"] = ["generation", "retired"]
        hits = self.store.connection.search(f"kNN search on {index!r}", index, request)["hits"]["hits"]
        if at is not None and any(not _visible(h, at) for h in hits):
            request = q.knn_request(vector, k, filter=q.both(flt, pin))
            hits = self.store.connection.search(f"kNN search on {index!r}", index, request)["hits"]["hits"]
        return [Hit(h["_id"], q.score_to_cosine(float(h["_score"]))) for h in hits]


class ElasticsearchPassages(_Searchable, Passages):
    """The passages of an :class:`ElasticsearchStore` (``{prefix}-passages``)."""

    def add(self, passages: Sequence[Passage]) -> AddResult:
        """Embed and store the passages not yet stored; the rest are no-ops.

        Raises:
            BulkWriteError: some passages were not stored; ``err.failures`` says
                which and why, ``err.result`` is the :class:`AddResult` of the rest.
        """
        index = self.store.indices.passages
        refused: list[BulkFailure] = []
        with self.store._commit() as generation:
            stored = self.store.connection.mget(index, [p.id for p in passages], [])
            new, existing = split_new(passages, stored)

            def actions() -> Iterator[Any]:
                for chunk in _chunks(new, self.store.connection.writer.batch_size):
                    self.store._changing()  # renews the writer lock while a long write goes on
                    vectors, bad = self.store.embed_rows([p.content for p in chunk])
                    refused.extend(_zero_vector(index, chunk[i].id) for i in bad)
                    for i, passage in enumerate(chunk):
                        if i not in bad:
                            yield q.create_action(
                                index, passage.id, passage_document(passage, vectors[i], generation)
                            )

            outcome = self.store._write(actions(), [index], refused)
        result = AddResult(added=outcome.done, existing=[*existing, *outcome.conflicts])
        if not outcome.ok:
            raise BulkWriteError(f"adding passages to {index!r}", outcome, result)
        return result

    def mark_extracted(self, passage_ids: Sequence[str]) -> None:
        """Set ``extracted`` on these passages; ids that are not stored are ignored.

        The stored ids are looked up first: an ``update`` sent to a deleted index would make
        Elasticsearch auto-create it (``action.auto_create_index`` is on by default) with a
        dynamic mapping, leaving an index gear-agent cannot use; the look-up fails instead.
        """
        index = self.store.indices.passages
        stored = self.store.connection.mget(index, passage_ids, [])
        actions = (
            q.update_action(index, pid, {"extracted": True})
            for pid in _unique(passage_ids)
            if pid in stored
        )
        outcome = self.store._write(actions, [index], [])
        if not outcome.ok:
            raise BulkWriteError(f"marking passages in {index!r}", outcome)

    def remove(self, passage_ids: Sequence[str]) -> list[str]:
        """Delete passages and, first, their triples.

        The triples are found by a ``terms`` query on ``passage_id`` and deleted by id in
        ``_bulk`` requests, like every other write: each document's outcome is known and
        rejections are retried. (``_delete_by_query`` would need the ``reindex`` module,
        which not every cluster has, and reports failures in another shape.) Triples go
        first so that a failure half-way never leaves triples of a deleted passage behind
        as neighbours. Returns the ids that were stored and are now deleted, in the order
        asked.
        """
        with self.store._commit() as generation:
            stored = self.store.connection.mget(self.store.indices.passages, passage_ids, ["generation"])
            ids = [pid for pid in _unique(passage_ids) if pid in stored]
            if not ids:
                return []
            self.store._changing()
            triples = self.store.indices.triples
            for chunk in _chunks(ids, _TERMS_CHUNK):
                found = {hit["_id"]: hit.get("_source", {}).get("generation", 0) for hit in self.store.connection.walk(
                    triples, q.terms("passage_id", chunk), q.BY_ID, {"includes": ["generation"]})}
                self.store._record_deleted("triple", found, generation)
                outcome = self.store._write((q.delete_action(triples, tid) for tid in found), [triples], [])
                if not outcome.ok:
                    raise BulkWriteError(
                        f"deleting the triples of {len(chunk)} passage(s) from {triples!r} (the "
                        "passages were kept; retry the delete)",
                        outcome,
                    )
            self.store.nodes.forget_passages(ids)
            index = self.store.indices.passages
            self.store._record_deleted("passage", {pid: stored[pid].get("generation", 0) for pid in ids}, generation)
            outcome = self.store._write((q.delete_action(index, pid) for pid in ids), [index], [])
        if not outcome.ok:
            raise BulkWriteError(f"deleting passages from {index!r}", outcome, outcome.done)
        done = set(outcome.done)
        return [pid for pid in ids if pid in done]

    def remove_source(self, source: str) -> list[str]:
        """Delete every passage whose ``source`` is exactly ``source`` (and its triples)."""
        return self.remove(self.ids_of_source(source))

    def ids_of_source(self, source: str) -> list[str]:
        hits = self.store.connection.walk(self.store.indices.passages, q.term("source", source), q.BY_ID, snapshot=True)
        return [hit["_id"] for hit in hits]

    def ids_of_sources(self, sources: Sequence[str]) -> dict[str, list[str]]:
        """The passages of many sources, a ``terms`` query per thousand (:mod:`.sync`)."""
        return self.store.passage_ids_of_sources(sources)

    def replace(self, remove: Sequence[str], add: Sequence[Passage]) -> AddResult:
        """One commit for readers: the new passages and the old ones' retirement published
        together (:meth:`~gear_agent.store.elasticsearch.sync.AtomicSync.replace_atomically`)."""
        return self.store.replace_atomically(remove, add)

    def sources(self, under: str | None = None, *, relative: bool = False) -> list[str]:
        """Distinct sources, read from the ``source`` field of every passage (of those under
        ``under``: a term or prefix query; ``relative``: not under ``/``) page by page."""
        if relative:
            found = self.sources_matching({"bool": {"must_not": [{"prefix": {"source": "/"}}]}})
            folder = None if under is None else under.rstrip("/")
            return [s for s in found if folder is None or s in (under, folder) or s.startswith(folder + "/")]
        if under is None:
            query: dict[str, Any] = {"match_all": {}}
        else:
            folder = under.rstrip("/")
            query = {"bool": {"should": [q.term("source", under), q.term("source", folder),
                                         {"prefix": {"source": folder + "/"}}], "minimum_should_match": 1}}
        return self.sources_matching(query)

    def sources_matching(self, query: dict[str, Any]) -> list[str]:
        """Distinct ``source`` values of the passages ``query`` matches, sorted."""
        hits = self.store.connection.walk(self.store.indices.passages, query, q.BY_ID, {"includes": ["source"]}, snapshot=True)
        return sorted({(hit.get("_source") or {}).get("source", "") for hit in hits})

    def filter_ids(self, ids: Sequence[str], where: Any) -> list[str]:
        """The ``ids`` of stored passages passing ``where``, in the order given (server-side)."""
        parsed = parse_where(where)
        if parsed is None:
            return list(ids)
        index = self.store.indices.passages
        passing: set[str] = set()
        for chunk in _chunks(_unique(ids), _TERMS_CHUNK):
            query = {"bool": {"filter": [{"ids": {"values": list(chunk)}}, q.where_filter(parsed)]}}
            request = {"query": query, "size": len(chunk), "source": False, "track_total_hits": False}
            response = self.store.connection.search(f"filtering ids in {index!r}", index, request)
            passing.update(hit["_id"] for hit in response["hits"]["hits"])
        return [i for i in ids if i in passing]

    def get(self, ids: Sequence[str]) -> list[Passage]:
        found = self.store.connection.mget(self.store.indices.passages, ids)
        return [passage_from_source(found[i]) for i in ids if i in found]

    def unextracted(self) -> list[Passage]:
        hits = self.store.connection.walk(
            self.store.indices.passages, q.term("extracted", False), q.BY_ID, _NO_VECTOR, snapshot=True
        )
        return [passage_from_source(hit["_source"]) for hit in hits]

    def iterate(self) -> Iterator[Passage]:
        hits = self.store.connection.walk(self.store.indices.passages, q.match_all(), q.BY_ID, _NO_VECTOR, snapshot=True)
        for hit in hits:
            yield passage_from_source(hit["_source"])

    def vectors(self, ids: Sequence[str]) -> np.ndarray:
        """Stored passage embeddings, one row per id.

        Raises:
            KeyError: some ids are not stored passages.
        """
        found = self.store.connection.mget(self.store.indices.passages, ids, [VECTOR_FIELD]) if ids else {}
        return stacked_vectors(found, ids, "passages", self.store.dimension)


class ElasticsearchTriples(_Searchable, Triples):
    """The triples of an :class:`ElasticsearchStore` (``{prefix}-triples``)."""

    def add(self, triples: Sequence[Triple]) -> AddResult:
        """Embed and store triples; every ``passage_id`` must name a stored passage.

        Raises:
            StoreError: a triple names a passage that is not stored (nothing is written).
            BulkWriteError: some triples were not stored (see :meth:`ElasticsearchPassages.add`).
        """
        index = self.store.indices.triples
        refused: list[BulkFailure] = []
        with self.store._commit() as generation:
            stored = self.store.connection.mget(index, [t.id for t in triples], [])
            new, existing = split_new(triples, stored)
            parents = self.store.connection.mget(self.store.indices.passages, [t.passage_id for t in new], [])
            orphans = sorted({t.passage_id for t in new if t.passage_id not in parents})
            if orphans:
                raise StoreError(
                    f"{len(orphans)} passage id(s) named by triples are not stored: "
                    f"{', '.join(orphans[:5])}{' ...' if len(orphans) > 5 else ''}. "
                    "Add the passages first."
                )
            added_ns = self.store.connection.next_ns()

            def actions() -> Iterator[Any]:
                for start in range(0, len(new), self.store.connection.writer.batch_size):
                    chunk = new[start : start + self.store.connection.writer.batch_size]
                    self.store._changing()
                    vectors, bad = self.store.embed_rows([t.text for t in chunk])
                    refused.extend(_zero_vector(index, chunk[i].id) for i in bad)
                    for i, triple in enumerate(chunk):
                        if i not in bad:
                            doc = triple_document(triple, vectors[i], added_ns, start + i, generation)
                            yield q.create_action(index, triple.id, doc)

            outcome = self.store._write(actions(), [index], refused)
        result = AddResult(added=outcome.done, existing=[*existing, *outcome.conflicts])
        if not outcome.ok:
            raise BulkWriteError(f"adding triples to {index!r}", outcome, result)
        return result

    def get(self, ids: Sequence[str]) -> list[Triple]:
        if (cache := self.store._expansion(build=False)) is not None and all(map(cache.has, ids)):
            return cache.get_triples(ids)
        found = self.store._triple_sources(ids, _TRIPLE_FIELDS)
        return [triple_from_source(found[i]) for i in ids if i in found]

    def vectors(self, ids: Sequence[str]) -> np.ndarray:
        """Stored triple embeddings, one row per id.

        Raises:
            KeyError: some ids are not stored triples.
        """
        if (cache := self.store._expansion(build=False)) is not None and all(map(cache.has, ids)):
            return cache.triple_vectors(ids)
        return stacked_vectors(self.store._triple_sources(ids, [VECTOR_FIELD]), ids, "triples", self.store.dimension)

    def of_passage(self, passage_id: str) -> list[str]:
        hits = self.store.connection.walk(
            self.store.indices.triples, q.term("passage_id", passage_id), q.EXTRACTION_ORDER
        )
        return [hit["_id"] for hit in hits]

    def of_passages(self, passage_ids: Sequence[str]) -> list[list[str]]:
        """:meth:`of_passage` of each passage in one search (a ``terms`` query; more
        pages only past :attr:`page_size` triples). The documents come back whole and are
        kept (:meth:`ElasticsearchStore._remember`), so the :meth:`vectors` and :meth:`get` of
        the beam search that starts from them cost no request."""
        if not passage_ids:
            return []
        if (cache := self.store._expansion()) is not None:
            return cache.triples_of_passages(passage_ids)
        self.store._check_recent()
        of: dict[str, list[str]] = {pid: [] for pid in passage_ids}
        for chunk in _chunks(_unique(passage_ids), _TERMS_CHUNK):
            hits = list(self.store.connection.walk(self.store.indices.triples, q.terms("passage_id", list(chunk)),
                                   q.EXTRACTION_ORDER, True))
            self.store._remember(hits)
            for hit in hits:
                of[hit["_source"]["passage_id"]].append(hit["_id"])
        return [list(of[pid]) for pid in passage_ids]

    def neighbours(
        self, triple_id: str, query_vector: np.ndarray | None = None, limit: int = 100
    ) -> list[str]:
        """Triples sharing a (normalised) head or tail entity with ``triple_id``, itself excluded.

        With ``query_vector``: a kNN search filtered to those triples, the
        ``limit`` most similar first. Without: the first ``limit`` by id.
        An unknown ``triple_id`` has no neighbours.

        The search looks the triple's entities up itself (a ``terms`` lookup), and the hits
        bring their documents back, so the :meth:`get` and :meth:`vectors`
        of a beam search's candidates that follow are answered from them (see
        :meth:`ElasticsearchStore._remember`). It is :meth:`neighbours_many` of one triple: a generation check
        and one ``_msearch``.
        """
        if (cache := self.store._expansion(build=False)) is not None and cache.has(triple_id):
            vector = None if query_vector is None else self.store.query_vector(query_vector)
            return cache.neighbours(triple_id, vector, limit)
        return self.neighbours_many([triple_id], query_vector, limit)[0]

    def neighbours_many(
        self, triple_ids: Sequence[str], query_vector: np.ndarray | None = None, limit: int = 100
    ) -> list[list[str]]:
        """:meth:`neighbours` of each of ``triple_ids`` in one ``_msearch`` request (a beam
        search step's beams at once), after one generation check (see :meth:`ElasticsearchStore._remember`)."""
        if limit <= 0 or not triple_ids:
            return [[] for _ in triple_ids]
        index = self.store.indices.triples
        vector = None if query_vector is None else self.store.query_vector(query_vector)
        if (cache := self.store._expansion()) is not None:
            return [cache.neighbours(t, vector, limit) for t in triple_ids]
        self.store._check_recent()
        pin = self.store._pin()
        requests = [q.neighbours_request(index, t, vector, limit, pin) for t in triple_ids]
        what = f"neighbours of {len(triple_ids)} triple(s) in {index!r}"
        self.store.connection.settle()
        with translate_errors(what):
            answer = _body(self.store._client.msearch(index=index, searches=q.msearch_lines(index, requests)))
        found = []
        for response in answer["responses"]:
            if "error" in response:
                raise _search_error(what, response)
            hits = response["hits"]["hits"]
            self.store._remember(hits)
            found.append([hit["_id"] for hit in hits])
        return found

    def iterate(self) -> Iterator[Triple]:
        """Every triple in the order it was added (the add call, its place in the call), as
        the embedded store reads them: SiReRAG's aggregates join propositions in this order,
        so another order would give other node texts, hence other embeddings."""
        hits = self.store.connection.walk(self.store.indices.triples, q.match_all(), q.EXTRACTION_ORDER, _NO_VECTOR, snapshot=True)
        for hit in hits:
            yield triple_from_source(hit["_source"])



def _zero_vector(index: str, doc_id: str) -> BulkFailure:
    return BulkFailure(
        doc_id,
        index,
        "create",
        0,
        "zero_vector",
        "the embedding is zero or not finite; a cosine dense_vector cannot index it",
    )
