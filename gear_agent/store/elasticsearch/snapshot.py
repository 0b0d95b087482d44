"""Snapshots of an Elasticsearch index (``gear snapshot`` with ``GEAR_BACKEND=elasticsearch``).

Elasticsearch takes consistent online snapshots itself, into a *snapshot repository* the
cluster's operator registers (an ``fs`` repository needs its folder listed in the nodes'
``path.repo``; S3 and the others need their plugin), so this module only asks for one:
``PUT _snapshot/{repository}/{prefix}-{UTC time}`` of the index's indices (passages,
triples, SiReRAG nodes), waiting for it to finish, then deletes the snapshots of this
prefix older than the newest ``GEAR_SNAPSHOT_KEEP``. Restoring is Elasticsearch's own
``POST _snapshot/{repository}/{snapshot}/_restore`` (docs/elasticsearch.md).

Not measured against a live cluster in this project's tests (the fake cluster of
``tests/conformance/es_fake.py`` has no snapshot API); the requests are checked against a
recording client.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from gear_agent.store.base import StoreError
from gear_agent.store.elasticsearch.client import make_client, translate_errors
from gear_agent.store.elasticsearch.mappings import index_names

if TYPE_CHECKING:
    from gear_agent.config import GearSettings


def snapshot_name(prefix: str) -> str:
    """``{prefix}-snapshot-{UTC time}`` (lower case, as Elasticsearch requires).

    Example:
        >>> snapshot_name("gear").startswith("gear-snapshot-")
        True
    """
    return f"{prefix}-snapshot-{time.strftime('%Y%m%dt%H%M%Sz', time.gmtime())}".lower()


def take_es_snapshot(settings: GearSettings, client: Any = None) -> str:
    """Snapshot the index's indices into ``GEAR_ES_SNAPSHOT_REPOSITORY`` and keep the newest
    ``GEAR_SNAPSHOT_KEEP`` of this prefix; returns one line.

    Raises:
        StoreError: no repository configured, or the cluster refused (the message says why).
    """
    repository = settings.es_snapshot_repository
    if not repository:
        raise StoreError("set GEAR_ES_SNAPSHOT_REPOSITORY to a snapshot repository registered on the cluster "
                         "(PUT _snapshot/NAME; an 'fs' repository needs its folder in path.repo)")
    client = client if client is not None else make_client(settings)
    prefix = settings.es_index_prefix
    names = index_names(prefix)
    indices = [names.passages, names.triples, f"{prefix}-nodes"]
    name = snapshot_name(prefix)
    started = time.perf_counter()
    with translate_errors(f"snapshot {name} into repository {repository}"):
        answer = client.snapshot.create(repository=repository, snapshot=name, indices=",".join(indices),
                                        ignore_unavailable=True, include_global_state=False,
                                        wait_for_completion=True)
    state = (answer.get("snapshot") or {}).get("state")
    if state != "SUCCESS":
        raise StoreError(f"snapshot {name} into repository {repository} ended {state or 'without a state'}; "
                         "the older snapshots were kept")
    with translate_errors(f"listing the snapshots of {prefix} in repository {repository}"):
        found = client.snapshot.get(repository=repository, snapshot=f"{prefix}-snapshot-*")
    ours = sorted((s for s in found.get("snapshots", []) if s.get("state") == "SUCCESS"),
                  key=lambda s: (s.get("start_time_in_millis", 0), s.get("snapshot", "")), reverse=True)
    removed = []
    for old in ours[settings.snapshot_keep:]:
        with translate_errors(f"deleting snapshot {old['snapshot']} from repository {repository}"):
            client.snapshot.delete(repository=repository, snapshot=old["snapshot"])
        removed.append(old["snapshot"])
    return (f"snapshot {name} of {', '.join(indices[:2])} (and {indices[2]} if present) in repository "
            f"{repository} ({time.perf_counter() - started:.2f} s)"
            + (f"; removed {len(removed)} older" if removed else ""))
