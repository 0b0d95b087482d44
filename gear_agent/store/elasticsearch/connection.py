"""One connection to the cluster, shared by the collections of an Elasticsearch store.

:class:`Connection` owns the client's requests that every collection makes the same way:
searches (refreshing first what a bulk load left unrefreshed), reads by id (``_mget``),
walks over every hit (``search_after``, optionally on a point in time), bulk writes with
their refresh, the bulk-load settings and the clock that orders writes. The store
(:mod:`gear_agent.store.elasticsearch.store`) and its node collection
(:mod:`gear_agent.store.elasticsearch.nodes`) both talk to the cluster through it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np

from gear_agent.store.base import StoreError
from gear_agent.store.elasticsearch import queries as q
from gear_agent.store.elasticsearch.bulk import BulkFailure, BulkOutcome, BulkWriter
from gear_agent.store.elasticsearch.client import error_cause, missing_index, translate_errors
from gear_agent.store.elasticsearch.mappings import VECTOR_FIELD

if TYPE_CHECKING:  # pragma: no cover - typing only
    from elasticsearch import Elasticsearch

MGET_CHUNK = 1_000
"""Ids per ``_mget`` request."""


def unique(ids: Iterable[str]) -> list[str]:
    """``ids`` without repeats, in order."""
    return list(dict.fromkeys(ids))


def body(response: Any) -> dict[str, Any]:
    """The JSON body of a client response (``ObjectApiResponse.body``)."""
    return getattr(response, "body", response)


def chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    """``items`` ``size`` at a time."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def stacked_vectors(found: dict[str, dict[str, Any]], ids: Sequence[str], what: str, dimension: int) -> np.ndarray:
    """The ``vector`` fields of the documents ``found`` (``{id: _source}``), one row per id in
    ``ids`` (``(0, dimension)`` for none).

    Raises:
        KeyError: some ids were not found (``not stored {what}: ...``).
    """
    missing = [i for i in ids if i not in found]
    if missing:
        raise KeyError(f"not stored {what}: {', '.join(missing[:5])}")
    if not ids:
        return np.zeros((0, dimension), dtype=np.float32)
    return np.asarray([found[i][VECTOR_FIELD] for i in ids], dtype=np.float32)


class Connection:
    """The requests of one store's collections to its cluster.

    Args:
        client: The ``elasticsearch.Elasticsearch`` client.
        writer: Runs bulk actions with retries.
        page_size: Hits per page when walking an index (``search_after``).
        pin: The filter that hides documents of commits later than the one a snapshot reads
            (None: no filter); applied to every walk.
    """

    def __init__(self, client: Elasticsearch, writer: BulkWriter, page_size: int,
                 pin: Callable[[], dict[str, Any] | None]) -> None:
        self.client = client
        self.writer = writer
        self.page_size = page_size
        self.pin = pin
        self.loading: set[str] | None = None
        """Inside :meth:`bulk_settings`: the indices written and not yet refreshed."""
        self._last_ns = 0

    def settle(self) -> None:
        """Inside :meth:`bulk_settings`: refresh what was written since the last refresh, so the
        search about to run sees it (a build's searches are few; its writes are many)."""
        if self.loading:
            dirty = sorted(self.loading)
            self.loading.clear()
            self.refresh(*dirty)

    def search(self, what: str, index: str | None, request: dict[str, Any]) -> dict[str, Any]:
        """One ``_search`` of ``index`` (None: a point-in-time search, which names none);
        ``what`` words the error."""
        self.settle()
        with translate_errors(what):
            if index is None:  # a point-in-time search names no index
                return body(self.client.search(**request))
            return body(self.client.search(index=index, **request))

    def refresh(self, *indices: str) -> None:
        with translate_errors(f"refreshing {', '.join(indices)}"):
            self.client.indices.refresh(index=",".join(indices))

    def mget(
        self, index: str, ids: Sequence[str], fields: Sequence[str] | None = None
    ) -> dict[str, dict[str, Any]]:
        """Found documents by id: ``{id: _source}``, real-time (no refresh needed).

        ``fields`` picks the ``_source`` fields to return: ``None`` is all but the
        vector, ``[]`` none (an existence check).
        """
        if fields is None:
            source: dict[str, Any] = {"source_excludes": [VECTOR_FIELD]}
        elif fields:
            source = {"source_includes": list(fields)}
        else:
            source = {"source": False}
        found: dict[str, dict[str, Any]] = {}
        for chunk in chunks(unique(ids), MGET_CHUNK):
            with translate_errors(f"reading {len(chunk)} document(s) from {index!r}"):
                response = body(self.client.mget(index=index, ids=list(chunk), **source))
            for doc in response["docs"]:
                if "error" in doc:
                    what = f"reading {len(chunk)} document(s) from {index!r}"
                    raise missing_index(what, doc["error"]) or StoreError(
                        f"{what}: {doc.get('_id')!r} failed: {error_cause(doc['error'])}"
                    )
                if doc.get("found"):
                    found[doc["_id"]] = doc.get("_source") or {}
        return found

    def walk(
        self,
        index: str,
        query: dict[str, Any],
        sort: Sequence[tuple[str, str]],
        source: bool | dict[str, list[str]] = False,
        *,
        snapshot: bool = False,
    ) -> Iterator[dict[str, Any]]:
        """Every hit of ``query``, page by page with ``search_after``.

        With ``snapshot`` the pages read one point in time, so documents added
        or deleted meanwhile do not shift the walk; the point in time is closed
        when the walk ends or is abandoned.
        """
        pit: str | None = None
        query = q.both(query, self.pin())
        self.settle()
        if snapshot:
            with translate_errors(f"opening a point in time on {index!r}"):
                pit = body(self.client.open_point_in_time(index=index, keep_alive="2m"))["id"]
        try:
            after: list[Any] | None = None
            while True:
                request = q.page_request(query, sort, source=source, search_after=after, pit=pit,
                                         size=self.page_size)
                response = self.search(
                    f"reading {index!r}", None if pit is not None else index, request
                )
                pit = response.get("pit_id", pit)
                hits = response["hits"]["hits"]
                yield from hits
                if len(hits) < self.page_size:
                    return
                after = hits[-1]["sort"]
        finally:
            if pit is not None:
                with translate_errors("closing a point in time"):
                    self.client.close_point_in_time(id=pit)

    def write(
        self, actions: Iterable[Any], refresh: Sequence[str], failures: list[BulkFailure]
    ) -> BulkOutcome:
        """Run bulk actions, refresh, and add per-document failures found before sending."""
        outcome = self.writer.run(actions)
        outcome.failures[:0] = failures
        if self.loading is not None:
            self.loading.update(refresh)  # refreshed once, when the bulk load ends
        elif outcome.done or outcome.retries or outcome.failures:
            self.refresh(*refresh)
        return outcome

    @contextmanager
    def bulk_settings(self, names: Iterable[str]) -> Iterator[None]:
        """Elasticsearch's settings for a bulk load on the indices ``names`` while the block
        runs (no refresh, no replicas; writes are refreshed once at the end), then their own
        values back (:meth:`ElasticsearchStore.bulk_load`)."""
        indices = list(names)
        keys = ("refresh_interval", "number_of_replicas")
        with translate_errors(f"reading the settings of {', '.join(indices)}"):
            current = body(self.client.indices.get_settings(index=",".join(indices)))
        saved = {
            name: {key: ((current.get(name) or {}).get("settings", {}).get("index") or {}).get(key) for key in keys}
            for name in indices
        }
        with translate_errors(f"setting {', '.join(indices)} up for a bulk load"):
            self.client.indices.put_settings(
                index=",".join(indices), settings={"index": {"refresh_interval": "-1", "number_of_replicas": 0}}
            )
        self.loading = set()
        try:
            yield
        finally:
            written, self.loading = self.loading, None
            for name, values in saved.items():
                with translate_errors(f"restoring the settings of {name!r} after a bulk load"):
                    self.client.indices.put_settings(index=name, settings={"index": values})
            if written:
                self.refresh(*sorted(written))

    def next_ns(self) -> int:
        """A strictly increasing clock, so later add calls sort after earlier ones."""
        self._last_ns = max(time.time_ns(), self._last_ns + 1)
        return self._last_ns
