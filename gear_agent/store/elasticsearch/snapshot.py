"""Snapshots of an Elasticsearch index (``gear snapshot`` with ``GEAR_BACKEND=elasticsearch``),
and their restore (``gear snapshot --restore``).

Elasticsearch takes consistent online snapshots itself, into a *snapshot repository*.
``gear snapshot`` uses ``GEAR_ES_SNAPSHOT_REPOSITORY`` (default ``{prefix}-snapshots``) and,
when the cluster has no repository of that name, registers one of type ``fs`` whose
``location`` is that name, which Elasticsearch resolves inside the first folder of the
nodes' ``path.repo`` (a cluster without ``path.repo`` refuses: the message says to add one,
or to register the repository, S3 or other, yourself). It then asks for
``{prefix}-snapshot-{UTC time}`` of the index's indices (passages, triples, the change log,
SiReRAG's nodes), waits for it, and deletes the snapshots of this prefix older than the
newest ``GEAR_SNAPSHOT_KEEP``.

:func:`restore_es_snapshot` puts the newest good snapshot back: first it snapshots the
indices as they are now (``{prefix}-before-restore-{UTC time}``, partial when shards are
missing; never removed by the rotation), so nothing is lost that it cannot prove
superseded, then closes the existing indices (Elasticsearch restores only over a closed
index) and restores the snapshot's, and says, in one line, the documents each index had
before and has after, and which commits it could not bring back: the change log's
generation before (when it was readable) against the restored one, with what the passage and
triple indices that were readable held of those commits and the deletions they made (undone
where the snapshot holds what they deleted).

``gear check`` on Elasticsearch offers the newest good snapshot when the passage or triple
index is missing or not gear-agent's, or the prefix's health is red
(:func:`offer_es_snapshot`), and ``gear check --repair`` then restores it as above, as it
restores a damaged ``index.sqlite`` from its snapshot on the embedded backend.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from gear_agent.store.base import StoreError
from gear_agent.store.check_report import CheckReport
from gear_agent.store.elasticsearch.client import (
    import_elasticsearch,
    make_client,
    translate_errors,
)
from gear_agent.store.elasticsearch.mappings import index_names

if TYPE_CHECKING:
    from gear_agent.config import BackendSettings


def snapshot_name(prefix: str, kind: str = "snapshot") -> str:
    """``{prefix}-{kind}-{UTC time to the millisecond}`` (lower case, as Elasticsearch
    requires; two snapshots in one second get two names).

    Example:
        >>> snapshot_name("gear").startswith("gear-snapshot-")
        True
    """
    now = time.time()
    stamp = time.strftime("%Y%m%dt%H%M%S", time.gmtime(now)) + f"{int(now * 1000) % 1000:03d}z"
    return f"{prefix}-{kind}-{stamp}".lower()


def repository_of(settings: BackendSettings) -> str:
    """``GEAR_ES_SNAPSHOT_REPOSITORY``, or ``{prefix}-snapshots``.

    Example:
        >>> from gear_agent.config import BackendSettings
        >>> repository_of(BackendSettings(backend="elasticsearch", es_index_prefix="team"))
        'team-snapshots'
    """
    return settings.es_snapshot_repository or f"{settings.es_index_prefix}-snapshots"


def indices_of(prefix: str) -> list[str]:
    """The indices an index of ``prefix`` may have (those absent are skipped)."""
    names = index_names(prefix)
    return [names.passages, names.triples, f"{prefix}-changes", f"{prefix}-nodes", f"{prefix}-nodes-meta"]


def ensure_repository(client: Any, repository: str) -> bool:
    """Register ``repository`` as an ``fs`` repository at ``location: repository`` (inside
    the nodes' ``path.repo``) unless the cluster has it; returns whether it was registered now.

    Raises:
        StoreError: the cluster refused (no ``path.repo``, a folder it cannot write).
    """
    es = import_elasticsearch()
    try:
        client.snapshot.get_repository(name=repository)
        return False
    except es.NotFoundError:
        pass
    try:
        with translate_errors(f"registering snapshot repository {repository} (type fs)"):
            client.snapshot.create_repository(name=repository, repository={"type": "fs", "settings": {"location": repository}})
    except StoreError as err:
        hint = ("; add a folder to path.repo in the nodes' elasticsearch.yml, or register the repository "
                f"yourself (PUT _snapshot/{repository}) and set GEAR_ES_SNAPSHOT_REPOSITORY")
        raise StoreError(f"{err}{hint if 'path.repo' in str(err) else ''}") from err
    return True


def take_es_snapshot(settings: BackendSettings, client: Any = None) -> str:
    """Snapshot the index's indices into :func:`repository_of` (registered when absent) and
    keep the newest ``GEAR_SNAPSHOT_KEEP`` of this prefix; returns one line.

    Raises:
        StoreError: the cluster refused (the message says why).
    """
    client = client if client is not None else make_client(settings)
    repository = repository_of(settings)
    registered = ensure_repository(client, repository)
    prefix = settings.es_index_prefix
    name = snapshot_name(prefix)
    started = time.perf_counter()
    taken = _snapshot(client, repository, name, indices_of(prefix), partial=False)
    ours = _snapshots(client, repository, prefix)
    removed = []
    for old in ours[settings.snapshot_keep:]:
        with translate_errors(f"deleting snapshot {old['snapshot']} from repository {repository}"):
            client.snapshot.delete(repository=repository, snapshot=old["snapshot"])
        removed.append(old["snapshot"])
    return (f"snapshot {name} of {', '.join(taken) or 'no index'} in repository {repository}"
            + (" (registered now, type fs, under path.repo)" if registered else "")
            + f" ({time.perf_counter() - started:.2f} s)"
            + (f"; removed {len(removed)} older" if removed else ""))


def restore_es_snapshot(settings: BackendSettings, client: Any = None) -> str:
    """Put the newest good snapshot of this prefix back (see the module docstring); returns
    one line: the snapshot restored, the copy taken before, each index's documents before
    and after.

    Raises:
        StoreError: no snapshot of this prefix, or the cluster refused.
    """
    client = client if client is not None else make_client(settings)
    repository = repository_of(settings)
    prefix = settings.es_index_prefix
    ours = _snapshots(client, repository, prefix)
    if not ours:
        raise StoreError(f"no snapshot of {prefix} in repository {repository}: take one with gear snapshot")
    newest = ours[0]
    indices = list(newest.get("indices") or indices_of(prefix))
    before = _counts(client, indices)
    names = index_names(prefix)
    feed = f"{prefix}-changes"
    generation_before = _published(client, feed)
    written = {kind: _per_generation(client, index) for kind, index in
               (("passage", names.passages), ("triple", names.triples))}
    deleted = _per_generation(client, feed, {"term": {"kind": "deleted"}})
    keep = snapshot_name(prefix, "before-restore")
    _snapshot(client, repository, keep, [i for i in indices if before.get(i) is not None], partial=True)
    present = [i for i in indices if before.get(i) is not None]
    if present:
        with translate_errors(f"closing {', '.join(present)} to restore them"):
            client.indices.close(index=",".join(present), wait_for_active_shards=0)
    with translate_errors(f"restoring snapshot {newest['snapshot']} from repository {repository}"):
        answer = client.snapshot.restore(repository=repository, snapshot=newest["snapshot"],
                                         indices=",".join(indices), include_global_state=False,
                                         wait_for_completion=True)
    shards = (answer.get("snapshot") or {}).get("shards") or {}
    if shards.get("failed"):
        raise StoreError(f"restoring snapshot {newest['snapshot']}: {shards['failed']} shard(s) failed; "
                         f"the state before is in snapshot {keep}")
    with translate_errors("waiting for the restored indices"):
        client.cluster.health(index=",".join(indices), wait_for_status="yellow", timeout="60s")
    after = _counts(client, indices)
    changes = ", ".join(f"{i}: {_shown(before.get(i))} -> {_shown(after.get(i))}" for i in indices
                        if before.get(i) is not None or after.get(i) is not None)
    lost = _lost(generation_before, _published(client, feed), written, deleted)
    return (f"restored snapshot {newest['snapshot']} from repository {repository} ({changes}); {lost}; "
            f"the indices as they were are kept in snapshot {keep}")


OFFERED_FOR = ("passage index", "triple index")
"""``gear check`` items of the primary data (missing, not gear-agent's, unreadable) for which
a snapshot is offered; also the ``cluster`` item when the prefix's health is red."""
GENERATIONS_READ = 10_000
"""The newest generations whose documents are counted before a restore (what it loses)."""


def offer_es_snapshot(settings: BackendSettings, report: CheckReport) -> CheckReport:
    """When the passage or triple index failed (:data:`OFFERED_FOR`) or the prefix's health
    is red, and the repository holds a good snapshot of the prefix, say so on those items and
    let ``gear check --repair`` restore it (``report.restorable_from``); returns ``report``.
    Takes nothing and registers nothing."""
    red = f"health of {settings.es_index_prefix}-* red"
    failing = [item for item in report.items if not item.ok
               and (item.name in OFFERED_FOR or (item.name == "cluster" and red in item.detail))]
    if not failing:
        return report
    es = import_elasticsearch()
    repository = repository_of(settings)
    client = make_client(settings)
    try:
        ours = _snapshots(client, repository, settings.es_index_prefix)
    except StoreError as err:
        if not isinstance(err.__cause__, es.NotFoundError):  # a repository that does not exist: nothing to offer
            raise
        return report
    finally:
        client.close()
    if not ours:
        return report
    taken = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ours[0].get("start_time_in_millis", 0) / 1000))
    report.restorable_from = f"snapshot {ours[0]['snapshot']} in repository {repository} (taken {taken})"
    for item in failing:
        item.detail += f"; --repair restores it from {report.restorable_from}"
    return report


def _published(client: Any, feed: str) -> int | None:
    """The generation the change log publishes (None: absent or unreadable)."""
    es = import_elasticsearch()
    try:
        return int(client.get(index=feed, id="generation")["_source"]["generation"])
    except (es.ApiError, KeyError, TypeError, ValueError):
        return None


def _per_generation(client: Any, index: str, query: dict[str, Any] | None = None) -> dict[int, int] | None:
    """Documents per ``generation`` in ``index`` (the newest :data:`GENERATIONS_READ`), or None
    when it is absent or unreadable."""
    es = import_elasticsearch()
    body: dict[str, Any] = {"size": 0, "aggs": {"g": {"terms": {
        "field": "generation", "size": GENERATIONS_READ, "order": {"_key": "desc"}}}}}
    if query is not None:
        body["query"] = query
    try:
        buckets = client.search(index=index, **body)["aggregations"]["g"]["buckets"]
    except (es.ApiError, KeyError, TypeError):
        return None
    return {int(b["key"]): int(b["doc_count"]) for b in buckets}


def _lost(before: int | None, after: int | None, written: dict[str, dict[int, int] | None],
          deleted: dict[int, int] | None) -> str:
    """What a restore from commit ``after`` lost of the state at commit ``before``, in words."""
    if after is None:
        return "the restored indices hold no change log, so the commits lost cannot be named"
    if before is None:
        return (f"now at commit {after}; the commits after it cannot be named (the change log was "
                "missing or unreadable before the restore)")
    if before <= after:
        return f"nothing lost (commit {after}, the last one published)"
    span = str(before) if before == after + 1 else f"{after + 1}-{before}"
    held = [f"{sum(n for g, n in counts.items() if g > after):,} {kind}(s) they wrote"
            if counts is not None else f"the {kind}s they wrote (that index was unreadable)"
            for kind, counts in written.items()]
    if deleted is not None:
        held.append(f"{sum(n for g, n in deleted.items() if g > after):,} deletion(s) they made (undone "
                    "where the snapshot holds what they deleted)")
    return (f"lost commit(s) {span} after the snapshot's commit {after} ({', '.join(held)}): "
            "index what they added again")


def _snapshot(client: Any, repository: str, name: str, indices: list[str], *, partial: bool) -> list[str]:
    """Take snapshot ``name`` of those of ``indices`` that exist; returns the indices taken."""
    with translate_errors(f"snapshot {name} into repository {repository}"):
        answer = client.snapshot.create(repository=repository, snapshot=name, indices=",".join(indices),
                                        ignore_unavailable=True, include_global_state=False,
                                        partial=partial, wait_for_completion=True)
    snapshot = answer.get("snapshot") or {}
    state = snapshot.get("state")
    if state != "SUCCESS" and not (partial and state == "PARTIAL"):
        raise StoreError(f"snapshot {name} into repository {repository} ended {state or 'without a state'}; "
                         "the older snapshots were kept")
    return list(snapshot.get("indices") or indices)


def _snapshots(client: Any, repository: str, prefix: str) -> list[dict[str, Any]]:
    """The good snapshots of ``prefix`` in ``repository``, newest first."""
    with translate_errors(f"listing the snapshots of {prefix} in repository {repository}"):
        found = client.snapshot.get(repository=repository, snapshot=f"{prefix}-snapshot-*",
                                    ignore_unavailable=True)
    return sorted((s for s in found.get("snapshots", []) if s.get("state") == "SUCCESS"),
                  key=lambda s: (s.get("start_time_in_millis", 0), s.get("snapshot", "")), reverse=True)


def _counts(client: Any, indices: list[str]) -> dict[str, int | None]:
    """Documents per index (None: absent; -1: present but not countable, e.g. red)."""
    es = import_elasticsearch()
    out: dict[str, int | None] = {}
    for index in indices:
        try:
            out[index] = int(client.count(index=index)["count"])
        except es.NotFoundError:
            out[index] = None
        except es.ApiError:
            out[index] = -1
    return out


def _shown(count: int | None) -> str:
    return "absent" if count is None else "unreadable" if count < 0 else f"{count:,}"
