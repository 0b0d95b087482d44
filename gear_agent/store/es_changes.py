"""The Elasticsearch backend's commit generations and change feed: a third, small index.

``{prefix}-changes`` holds one document per write the backend made (``_id`` = its
generation, 1, 2, ...): which passage and triple ids it added or removed. The store's
generation is the number of those documents (one ``_count``, so a reader checks it per
query cheaply); :meth:`ChangeLog.since` reads the documents after a generation. A writer
records its change after its documents are written and refreshed, under the next free
``_id`` (``create`` refuses an ``_id`` another writer took, and the writer takes the next
one), so a reader that sees generation *g* sees every document of the writes up to *g*.
A process killed between its write and its record leaves that write unrecorded (derived
state misses it until it is rebuilt); the embedded backend has no such window.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gear_agent.store.base import StoreError
from gear_agent.store.changes import Changes
from gear_agent.store.es_client import translate_errors

FIELDS = ("passages_added", "passages_removed", "triples_added", "triples_removed")
MAPPINGS: dict[str, Any] = {
    "dynamic": "strict",
    "properties": {
        "generation": {"type": "long"},
        **{name: {"type": "object", "enabled": False} for name in FIELDS},
    },
}
PAGE = 1_000
_RETRIES = 20


def _body(response: Any) -> dict[str, Any]:
    return getattr(response, "body", response)


class ChangeLog:
    """The change feed of one Elasticsearch index pair.

    Example:
        >>> log = ChangeLog(client, "gear-changes")  # doctest: +SKIP
        >>> log.record(passages_added=["p-1"])  # doctest: +SKIP
        1
    """

    def __init__(self, client: Any, index: str) -> None:
        self.client, self.index = client, index

    def ensure(self, create: bool) -> None:
        """Create the index when missing (a store opened without ``create`` reads none)."""
        with translate_errors(f"checking index {self.index!r}"):
            exists = bool(self.client.indices.exists(index=self.index))
        if exists or not create:
            return
        try:
            with translate_errors(f"creating index {self.index!r}"):
                self.client.indices.create(index=self.index, settings={"number_of_shards": 1},
                                           mappings=MAPPINGS)
        except StoreError as err:
            if "resource_already_exists_exception" not in str(err):
                raise

    def generation(self) -> int:
        """How many writes were recorded (0 when the index does not exist yet)."""
        with translate_errors(f"counting {self.index!r}"):
            if not self.client.indices.exists(index=self.index):
                return 0
            return int(_body(self.client.count(index=self.index))["count"])

    def record(self, **ids: Sequence[str]) -> int:
        """Record one write's changes under the next generation; returns it."""
        document = {name: list(ids.get(name, ())) for name in FIELDS}
        for _ in range(_RETRIES):
            generation = self.generation() + 1
            with translate_errors(f"recording a change in {self.index!r}"):
                response = _body(self.client.bulk(operations=[
                    {"create": {"_index": self.index, "_id": str(generation)}},
                    {"generation": generation, **document},
                ], refresh="true"))
            item = response["items"][0]["create"]
            if item.get("status") in (200, 201):
                return generation
            if item.get("status") != 409:
                raise StoreError(f"recording a change in {self.index!r} failed: {item.get('error')}")
        raise StoreError(f"recording a change in {self.index!r}: {_RETRIES} other writers took the "
                         "next generation first; try again")

    def since(self, generation: int) -> Changes:
        """The changes recorded after ``generation``."""
        now = self.generation()
        if generation >= now or generation < 0:
            return Changes(generation, now, complete=0 <= generation <= now)
        merged: dict[str, dict[str, None]] = {name: {} for name in FIELDS}
        after: list[Any] | None = None
        while True:
            request: dict[str, Any] = {
                "query": {"range": {"generation": {"gt": generation}}},
                "sort": [{"generation": "asc"}], "size": PAGE,
            }
            if after is not None:
                request["search_after"] = after
            with translate_errors(f"reading {self.index!r}"):
                hits = _body(self.client.search(index=self.index, **request))["hits"]["hits"]
            for hit in hits:
                for name in FIELDS:
                    merged[name].update(dict.fromkeys(hit["_source"].get(name) or ()))
            if len(hits) < PAGE:
                break
            after = hits[-1]["sort"]
        # every id any of the writes touched: a reader takes a removal as "rebuild", and
        # adding an id it holds is a no-op, so listing too much is safe, too little is not
        return Changes(generation, now, *(tuple(merged[name]) for name in (
            "passages_added", "passages_removed", "triples_added", "triples_removed")))
