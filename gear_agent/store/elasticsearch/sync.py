"""Re-syncing a source on Elasticsearch as one commit for readers, and the passages of many
sources in one request.

Elasticsearch has no transaction across documents, so a sync (:meth:`Passages.replace`:
delete a source's old passages, add its new ones) is made atomic *for readers* with the
change feed's generations (:mod:`gear_agent.store.elasticsearch.changes`). Holding the writer lock, at
generation ``G + 1`` (``G`` published):

1. **earlier syncs are settled**: documents retired by a published generation at least
   :data:`PURGE_AFTER_S` ago are deleted (no search shows them, and a search that read the
   generation before they were retired has ended);
2. a **sync intent** is written in the changes index: ``G + 1``, the ids it adds (those not
   stored yet) and the ids it retires (two documents of kind ``sync``);
3. the new passages are written stamped ``generation: G + 1`` (readers filter
   ``generation <= G``: unseen);
4. the old passages and their triples are marked ``retired: G + 1`` (readers hide
   ``retired <= G``: still seen) with the time (``retired_at``), and their deletion records
   are written at ``G + 1``;
5. the intent is deleted (the sync is done: whatever happens now, ``G + 1`` shows it whole);
6. ``G + 1`` is **published**: one document written, after which every search shows the new
   passages and hides the old, at once (:func:`~gear_agent.store.elasticsearch.changes.visible_at`).

A sync that fails (an exception) or whose process is killed between steps 2 and 5 is
**rolled back**: at once by the failing writer, or, if it died, by the next writer, which
takes its lock over and, before it writes or publishes anything, deletes the passages (and
their triples) the unfinished sync wrote at its unpublished generation and undoes its
retirements and their deletion records (:meth:`AtomicSync._roll_back_syncs`). Those
passages are the writes of an aborted transaction that no reader ever saw, and the source's
next sync writes them again. So an interrupted sync leaves the old version, whole; a sync
that reached step 5 is published whole by the next writer. Plain adds of a dead writer are
published as before.

The retired documents are deleted by a later sync (step 1), not at once: a search reads the
published generation, then searches, so one that read ``G`` just before the publish still
shows the old passages, which must still be there. Until then they take space and nothing
else (every search, count and walk hides them).

So a reader polling during a sync sees the old version or the new, never both, never
neither. Reads by id (``_mget``) are real-time and see documents whatever their generation.

Example:
    >>> store.passages.replace(stale_ids, new_passages)  # doctest: +SKIP
    AddResult(added=[...], existing=[])
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Sequence
from typing import Any, cast

from gear_agent.store.collections import Passages
from gear_agent.store.elasticsearch import queries as q
from gear_agent.store.elasticsearch.bulk import BulkWriteError
from gear_agent.store.elasticsearch.changes import RETIRED_FIELD
from gear_agent.store.elasticsearch.queries import BulkAction
from gear_agent.types import AddResult, Passage

SOURCES_PER_QUERY = 1_000
"""Sources per ``terms`` query when listing the passages of many sources."""
PURGE_AFTER_S = 120.0
"""How long retired documents are kept after they were retired: longer than a search, or
a question asked inside :meth:`Store.snapshot`, takes."""
RETIRED_AT_FIELD = "retired_at"
"""When a document was retired (seconds since the epoch)."""


def retire_action(index: str, doc_id: str, generation: int, at: float = 0.0) -> BulkAction:
    """The partial update that hides ``doc_id`` from readers once ``generation`` is published.

    >>> retire_action("gear-passages", "p-1", 8).body
    {'doc': {'retired': 8, 'retired_at': 0.0}}
    """
    return q.update_action(index, doc_id, {RETIRED_FIELD: generation, RETIRED_AT_FIELD: at})


def _chunks(items: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class AtomicSync:
    """The Elasticsearch store's sync by source (mixed into
    :class:`~gear_agent.store.elasticsearch.store.ElasticsearchStore`, whose parts it uses;
    its passages collection's ``replace`` and ``ids_of_sources`` call these).

    Attributes:
        purge_after_s: See :data:`PURGE_AFTER_S` (0 in tests that check the deletion).
    """

    purge_after_s: float = PURGE_AFTER_S

    def replace_atomically(  # type: ignore[misc]
        self: Any, remove: Sequence[str], add: Sequence[Passage]
    ) -> AddResult:
        """Delete ``remove`` (with their triples) and add ``add`` as one commit for readers
        (see the module docstring). On an index without a change feed (made before it and
        opened read-only) there are no generations: the old way, add then delete.

        Raises:
            BulkWriteError: a write failed. The sync is rolled back (the old version stays
                whole); if the roll-back fails too, the next writer rolls it back.
        """
        feed = self._feed
        if feed is None:
            return Passages.replace(self.passages, remove, add)  # the default: add, then delete
        with self._commit() as generation:  # a store with a feed stamps every commit
            at = cast(int, generation)
            self._settle_retired(feed.published())
            stored = self.connection.mget(self.indices.passages, [p.id for p in add], [])
            added = [i for i in dict.fromkeys(p.id for p in add) if i not in stored]
            intent = self._begin_sync(at, added, list(remove)) if added or remove else []
            try:
                result = self.passages.add(add)
                self._retire(remove, at)
                self._end_sync(intent)
            except BaseException:
                self._roll_back(at, added, list(remove))
                self._end_sync(intent)
                raise
        return result  # published when the commit ends: the new passages appear, the old go

    def passage_ids_of_sources(  # type: ignore[misc]
        self: Any, sources: Sequence[str]
    ) -> dict[str, list[str]]:
        """:meth:`Passages.ids_of_source` of every source in ``sources``, by ``terms``
        queries of :data:`SOURCES_PER_QUERY` sources (one walk each, not one per source)."""
        found: dict[str, list[str]] = {s: [] for s in sources}
        wanted = list(found)
        for chunk in _chunks(wanted, SOURCES_PER_QUERY):
            hits = self.connection.walk(self.indices.passages, q.terms("source", list(chunk)), q.BY_ID,
                              {"includes": ["source"]}, snapshot=True)
            for hit in hits:
                found[(hit.get("_source") or {}).get("source", "")].append(hit["_id"])
        return found

    # ---- the sync intent -----------------------------------------------------------------
    def _begin_sync(  # type: ignore[misc]
        self: Any, generation: int, added: list[str], retired: list[str]
    ) -> list[str]:
        """Write the intent of a sync at ``generation`` (step 2); returns its documents' ids."""
        token = f"sync:{generation}:{uuid.uuid4().hex}"
        docs = {f"{token}:{part}": {"kind": "sync", "generation": generation, "collection": part,
                                    "doc_id": ids} for part, ids in (("added", added), ("retired", retired))}
        self._write_intent([q.index_action(self.changes_index, i, d) for i, d in docs.items()], "writing")
        return list(docs)

    def _end_sync(self: Any, intent: Sequence[str]) -> None:  # type: ignore[misc]
        """The sync is done (step 5): its intent is deleted."""
        if intent:
            self._write_intent([q.delete_action(self.changes_index, i) for i in intent], "deleting")

    def _write_intent(self: Any, actions: list[Any], what: str) -> None:  # type: ignore[misc]
        outcome = self._write(actions, [self.changes_index], [])
        if not outcome.ok:
            raise BulkWriteError(f"{what} a sync intent in {self.changes_index!r}", outcome)

    def _roll_back_syncs(self: Any, published: int) -> None:  # type: ignore[misc]
        """Roll back every sync whose intent is still there (see the module docstring): the
        passages it wrote at its unpublished generation (and their triples) are deleted, its
        retirements and their deletion records undone. An intent of a generation already
        published (its roll-back failed, then the commit was published) is only deleted:
        readers have seen what it wrote, which the source's next sync replaces."""
        self.connection.refresh(self.changes_index)  # a dead bulk load's intent too
        hits = self.connection.search(f"reading the sync intents in {self.changes_index!r}", self.changes_index,
                                      {"query": q.term("kind", "sync"), "size": 10_000})["hits"]["hits"]
        for hit in hits:
            source = hit["_source"]
            generation, ids = int(source["generation"]), list(source.get("doc_id") or [])
            if generation > published:
                self._roll_back(generation, *((ids, []) if source["collection"] == "added" else ([], ids)))
        if hits:
            self._write_intent([q.delete_action(self.changes_index, h["_id"]) for h in hits], "deleting")

    def _roll_back(  # type: ignore[misc]
        self: Any, generation: int, added: list[str], retired: list[str]
    ) -> None:
        """Undo a sync at the unpublished ``generation`` (its intent's ids)."""
        if added:
            self._delete_unpublished(added, generation)
        if retired:
            self._unretire(retired, generation)

    def _delete_unpublished(self: Any, passage_ids: list[str], generation: int) -> None:  # type: ignore[misc]
        """Delete the passages of ``passage_ids`` written at the unpublished ``generation``
        and their triples written then (no deletion records: no reader ever saw them)."""
        stored = self.connection.mget(self.indices.passages, passage_ids, ["generation"])
        ids = [i for i, doc in stored.items() if doc.get("generation") == generation]
        triples = self._triples_of(ids, q.term("generation", generation))
        self.nodes.forget_passages(ids)
        for index, doc_ids in ((self.indices.triples, triples), (self.indices.passages, ids)):
            outcome = self._write((q.delete_action(index, i) for i in doc_ids), [index], [])
            if not outcome.ok:
                raise BulkWriteError(f"rolling back {len(doc_ids)} unpublished write(s) in {index!r}", outcome)

    def _unretire(self: Any, passage_ids: list[str], generation: int) -> None:  # type: ignore[misc]
        """Undo the retirement by the unpublished ``generation`` of these passages and their
        triples, and delete the deletion records it wrote for them (also those of documents
        the sync died before marking)."""
        passages = {i: d.get(RETIRED_FIELD) for i, d in
                    self.connection.mget(self.indices.passages, passage_ids, [RETIRED_FIELD]).items()}
        triples = {hit["_id"]: (hit.get("_source") or {}).get(RETIRED_FIELD) for chunk in
                   _chunks(list(passages), SOURCES_PER_QUERY) for hit in self.connection.walk(
                       self.indices.triples, q.terms("passage_id", list(chunk)), q.BY_ID,
                       {"includes": [RETIRED_FIELD]})}
        for collection, index, docs in (("passage", self.indices.passages, passages),
                                         ("triple", self.indices.triples, triples)):
            records = self.connection.mget(self.changes_index, [f"{collection}:{i}" for i in docs], ["generation"])
            actions: list[Any] = [q.update_action(index, i, {RETIRED_FIELD: None, RETIRED_AT_FIELD: None})
                                  for i, retired in docs.items() if retired == generation]
            actions += [q.delete_action(self.changes_index, rid) for rid, record in records.items()
                        if record.get("generation") == generation]
            outcome = self._write(actions, [index, self.changes_index], [])
            if not outcome.ok:
                raise BulkWriteError(f"undoing the unpublished retirement of {len(actions)} document(s) "
                                     f"in {index!r}", outcome)

    def _triples_of(self: Any, passage_ids: Sequence[str], where: dict[str, Any]) -> list[str]:  # type: ignore[misc]
        """The ids of the triples of ``passage_ids`` that match ``where``."""
        found: list[str] = []
        for chunk in _chunks(passage_ids, SOURCES_PER_QUERY):
            query = {"bool": {"filter": [q.terms("passage_id", list(chunk)), where]}}
            found += [hit["_id"] for hit in self.connection.walk(self.indices.triples, query, q.BY_ID)]
        return found

    # ---- steps ------------------------------------------------------------------------
    def _retire(  # type: ignore[misc]
        self: Any, passage_ids: Sequence[str], generation: int
    ) -> tuple[list[str], list[str]]:
        """Mark the stored passages of ``passage_ids`` and their triples retired by
        ``generation`` (deletion records first, as every delete writes them); returns the
        passage and triple ids marked."""
        passages_index, triples_index = self.indices.passages, self.indices.triples
        stored = self.connection.mget(passages_index, passage_ids, ["generation"])
        ids = [pid for pid in dict.fromkeys(passage_ids) if pid in stored]
        if not ids:
            return [], []
        self._changing()
        triples: dict[str, int] = {}
        for chunk in _chunks(ids, SOURCES_PER_QUERY):
            for hit in self.connection.walk(triples_index, q.terms("passage_id", list(chunk)), q.BY_ID,
                                  {"includes": ["generation"]}):
                triples[hit["_id"]] = (hit.get("_source") or {}).get("generation", 0)
        self._record_deleted("triple", triples, generation)
        self._record_deleted("passage", {pid: stored[pid].get("generation", 0) for pid in ids}, generation)
        for index, doc_ids in ((triples_index, list(triples)), (passages_index, ids)):
            now = time.time()
            outcome = self._write((retire_action(index, i, generation, now) for i in doc_ids), [index], [])
            if not outcome.ok:
                raise BulkWriteError(f"retiring {len(doc_ids)} document(s) in {index!r} (nothing "
                                     "was published; the next sync settles it)", outcome)
        return ids, list(triples)

    def _purge(  # type: ignore[misc]
        self: Any, passage_ids: Sequence[str], triple_ids: Sequence[str]
    ) -> None:
        """Delete documents retired by a published generation long enough ago: superseded,
        and hidden from every reader, so no generation is needed (triples first, as every
        delete)."""
        if not passage_ids and not triple_ids:
            return
        for index, doc_ids in ((self.indices.triples, triple_ids), (self.indices.passages, passage_ids)):
            if index == self.indices.passages:
                self.nodes.forget_passages(list(passage_ids))
            outcome = self._write((q.delete_action(index, i) for i in doc_ids), [index], [])
            if not outcome.ok:
                raise BulkWriteError(f"deleting {len(doc_ids)} retired document(s) from {index!r} "
                                     "(hidden already; the next sync deletes them)", outcome)

    def _settle_retired(self: Any, published: int) -> None:  # type: ignore[misc]
        """Delete what published syncs retired long enough ago (step 1 of the module
        docstring). Retirements not published yet are left alone: those of an unfinished
        sync were rolled back (:meth:`_roll_back_syncs`), the others are published whole."""
        done: dict[str, list[str]] = {"passage": [], "triple": []}
        due = time.time() - self.purge_after_s
        for collection, index in (("passage", self.indices.passages), ("triple", self.indices.triples)):
            for hit in self.connection.walk(index, {"range": {RETIRED_FIELD: {"lte": published}}}, q.BY_ID,
                                  {"includes": [RETIRED_FIELD, RETIRED_AT_FIELD]}):
                if float((hit.get("_source") or {}).get(RETIRED_AT_FIELD) or 0.0) <= due:
                    done[collection].append(hit["_id"])
        self._purge(done["passage"], done["triple"])
