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
) -> None:
    """Snapshot the index now, while it is served or written (embedded: index.sqlite copied
    with SQLite's online backup into INDEX/snapshots/; Elasticsearch: into
    GEAR_ES_SNAPSHOT_REPOSITORY). `gear check --repair` restores the newest good one."""
    from gear_agent.store.backends import backend

    settings = load_settings(index_dir, snapshot_keep=keep)
    results.print(backend(settings.backend).snapshot(settings, False), highlight=False, soft_wrap=True)
