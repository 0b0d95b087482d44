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
before and has after.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from gear_agent.store.base import StoreError
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
    return (f"restored snapshot {newest['snapshot']} from repository {repository} ({changes}); "
            f"the indices as they were are kept in snapshot {keep}")


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
