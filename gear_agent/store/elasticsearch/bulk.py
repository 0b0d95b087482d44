"""Bulk writes that retry only what the cluster rejected, and lose nothing silently.

Actions go out in batches through the raw ``_bulk`` API. An item answered 429
(``es_rejected_execution_exception``: a full write queue) or 503 is sent again,
alone with the other rejected items, after an exponential backoff; a whole
request answered 429/503 is sent again the same way. Every other failure is
recorded per document in :class:`BulkOutcome` and the caller raises
:class:`BulkWriteError` once the rest has been written.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import TYPE_CHECKING, Any

from gear_agent.store.base import StoreError
from gear_agent.store.elasticsearch.client import (
    error_reason,
    import_elasticsearch,
    translate_errors,
)
from gear_agent.store.elasticsearch.queries import BulkAction

if TYPE_CHECKING:  # pragma: no cover - typing only
    from elasticsearch import Elasticsearch

RETRY_STATUSES = frozenset({429, 503})


@dataclass(frozen=True)
class BulkFailure:
    """One document the cluster did not take, and why."""

    id: str
    index: str
    op: str
    status: int
    error_type: str
    reason: str

    def __str__(self) -> str:
        return (
            f"{self.op} {self.index}/{self.id}: HTTP {self.status} {self.error_type}: {self.reason}"
        )


@dataclass
class BulkOutcome:
    """What a bulk run did, per document id.

    Attributes:
        done: Written (created, updated or deleted), in the order sent.
        conflicts: ``create`` answered 409: the id was already stored (a no-op).
        missing: ``update``/``delete`` answered 404: no such document.
        failures: Everything else, one entry per document.
        retries: How many times rejected items (or whole requests) were re-sent.
        aborted: Why the run stopped early (a request failed for good: unreachable
            cluster, refused credentials, a malformed request); the actions after
            the failed batch were not sent. ``None`` when every action was sent.
    """

    done: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    failures: list[BulkFailure] = field(default_factory=list)
    retries: int = 0
    aborted: str | None = None

    @property
    def ok(self) -> bool:
        return not self.failures and self.aborted is None


class BulkWriteError(StoreError):
    """Some documents were not written; ``failures`` lists each, ``outcome`` the rest."""

    def __init__(self, what: str, outcome: BulkOutcome, result: Any = None) -> None:
        shown = "; ".join(str(f) for f in outcome.failures[:5])
        more = len(outcome.failures) - 5
        stopped = (
            f"; stopped early, later documents not sent: {outcome.aborted}"
            if (outcome.aborted)
            else ""
        )
        super().__init__(
            f"{what}: {len(outcome.failures)} document(s) failed, {len(outcome.done)} written"
            f" ({shown}{f'; and {more} more' if more > 0 else ''}){stopped}"
        )
        self.outcome = outcome
        self.failures = outcome.failures
        #: What a successful call would have returned, for the documents that were written.
        self.result = result


def _batches(actions: Iterable[BulkAction], size: int) -> Iterator[list[BulkAction]]:
    iterator = iter(actions)
    while batch := list(islice(iterator, size)):
        yield batch


class BulkWriter:
    """Sends bulk actions in batches with retries of rejected items only.

    Args:
        client: An ``elasticsearch.Elasticsearch`` client.
        batch_size: Actions per ``_bulk`` request.
        max_retries: Re-sends of rejected items before they count as failures.
        initial_backoff_s: Wait before the first re-send; doubles each time.
        max_backoff_s: Longest wait between re-sends.
        sleep: How to wait; inject a fake in tests.
    """

    def __init__(
        self,
        client: Elasticsearch,
        *,
        batch_size: int = 500,
        max_retries: int = 5,
        initial_backoff_s: float = 0.5,
        max_backoff_s: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be at least 0, got {max_retries}")
        self.client = client
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.initial_backoff_s = initial_backoff_s
        self.max_backoff_s = max_backoff_s
        self.sleep = sleep

    def backoff(self, attempt: int) -> float:
        """Seconds to wait before re-send number ``attempt`` (0-based)."""
        return min(self.max_backoff_s, self.initial_backoff_s * (2**attempt))

    def run(self, actions: Iterable[BulkAction]) -> BulkOutcome:
        """Send the actions; return what happened to each one. Never raises for a document.

        A request that fails for good stops the run: its documents are recorded
        as failures and ``outcome.aborted`` says why.
        """
        outcome = BulkOutcome()
        for batch in _batches(actions, self.batch_size):
            if not self._send_batch(batch, outcome):
                break
        return outcome

    def _send_batch(self, batch: Sequence[BulkAction], outcome: BulkOutcome) -> bool:
        """Send one batch until nothing is rejected; False when its request failed for good."""
        es = import_elasticsearch()
        pending = list(batch)
        attempt = 0
        while pending:
            operations = [line for action in pending for line in action.lines()]
            rejected: list[tuple[BulkAction, int, str, str]] = []
            try:
                with translate_errors(f"bulk write of {len(pending)} document(s)"):
                    try:
                        response = self.client.bulk(operations=operations)
                    except es.ApiError as err:
                        status = getattr(getattr(err, "meta", None), "status", None)
                        if status not in RETRY_STATUSES:
                            raise
                        rejected = [(a, status, "rejected_request", error_reason(err)) for a in pending]
                        response = None
            except StoreError as err:
                # The request itself failed for good: every document in it failed.
                outcome.failures.extend(
                    BulkFailure(a.id, a.index, a.op, 0, "request_failed", str(err)) for a in pending
                )
                outcome.aborted = str(err)
                return False
            if response is not None:
                rejected = self._read_items(pending, response["items"], outcome)
            if not rejected:
                return True
            if attempt >= self.max_retries:
                outcome.failures.extend(
                    BulkFailure(
                        a.id,
                        a.index,
                        a.op,
                        status,
                        error_type,
                        f"still rejected after {self.max_retries} retries: {reason}",
                    )
                    for a, status, error_type, reason in rejected
                )
                return True
            self.sleep(self.backoff(attempt))
            attempt += 1
            outcome.retries += 1
            pending = [a for a, *_ in rejected]

    @staticmethod
    def _read_items(
        sent: Sequence[BulkAction], items: Sequence[dict[str, Any]], outcome: BulkOutcome
    ) -> list[tuple[BulkAction, int, str, str]]:
        """Sort each item's answer into the outcome; return the rejected ones to re-send."""
        if len(items) != len(sent):
            raise StoreError(
                f"bulk response has {len(items)} items for {len(sent)} actions; cannot tell "
                "which documents were written"
            )
        rejected = []
        for action, item in zip(sent, items):
            result = next(iter(item.values()))
            status = int(result.get("status", 0))
            error = result.get("error") or {}
            error_type = error.get("type", "") if isinstance(error, dict) else str(error)
            reason = error.get("reason", "") if isinstance(error, dict) else ""
            if 200 <= status < 300:
                outcome.done.append(action.id)
            elif status == 409 and action.op == "create":
                outcome.conflicts.append(action.id)
            elif status == 404 and action.op in ("update", "delete"):
                outcome.missing.append(action.id)
            elif status in RETRY_STATUSES:
                rejected.append((action, status, error_type, reason))
            else:
                outcome.failures.append(
                    BulkFailure(action.id, action.index, action.op, status, error_type, reason)
                )
        return rejected
