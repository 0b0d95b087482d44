"""`gear snapshot`: a consistent snapshot of the index, taken while it is in use."""

from __future__ import annotations

from typing import Annotated

import typer

from gear_agent.cli.common import IndexOpt, load_settings, reports_errors, results


@reports_errors
def snapshot(
    index_dir: IndexOpt = None,
    keep: Annotated[int | None, typer.Option(
        "--keep", min=1, help="Snapshots to keep, the newest (GEAR_SNAPSHOT_KEEP; default 3).")] = None,
    restore: Annotated[bool, typer.Option(
        "--restore", help="Put the newest good snapshot back instead (Elasticsearch; the indices as "
        "they are now are snapshotted first). The embedded index: gear check --repair.")] = False,
) -> None:
    """Snapshot the index now, while it is served or written (embedded: index.sqlite copied
    with SQLite's online backup into INDEX/snapshots/; Elasticsearch: into
    GEAR_ES_SNAPSHOT_REPOSITORY, default PREFIX-snapshots, registered as an fs repository
    under the cluster's path.repo when absent). `gear check --repair` restores the newest
    good one of an embedded index, `gear snapshot --restore` of an Elasticsearch one."""
    from gear_agent.errors import GearError
    from gear_agent.store.backends import backend

    settings = load_settings(index_dir, snapshot_keep=keep)
    row = backend(settings.backend)
    if restore:
        if row.restore is None:
            raise GearError(f"the {row.name} index is restored by gear check --repair (from its newest "
                            "good snapshot, when its database is damaged)")
        results.print(row.restore(settings), highlight=False, soft_wrap=True)
        return
    results.print(row.snapshot(settings, False), highlight=False, soft_wrap=True)
