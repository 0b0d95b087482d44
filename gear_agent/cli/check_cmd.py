"""`gear check` and `gear migrate`: an index's integrity (like SQLite's ``PRAGMA
integrity_check``: the embedded index's files, or an Elasticsearch index's documents), its
repair, and its format."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from gear_agent.cli.common import IndexOpt, console, load_settings, reports_errors, results


@reports_errors
def check(
    index_dir: IndexOpt = None,
    repair: Annotated[bool, typer.Option(
        "--repair", help="Rebuild what is derived from the texts: re-embed damaged, missing or truncated "
                         "vector files; rebuild BM25, ANN parts, the PPR graph cache, a stale SiReRAG pool "
                         "and Elasticsearch's expansion cache.")] = False,
) -> None:
    """Check every part of the index (records, vectors, BM25, ANN, PPR graph cache, the last
    commit); exit 1 when damaged."""
    from gear_agent.store.backends import backend
    from gear_agent.store.base import StoreError

    settings = load_settings(index_dir)
    row = backend(settings.backend)
    if row.check is None:
        raise StoreError(f"`gear check` cannot check the {row.name} backend")
    report = row.check(settings)
    _print(report)
    if repair and not report.ok:
        report = _restore(settings, row, report)
        for line in _repair(settings, row, report):
            results.print(f"repaired: {line}", highlight=False, soft_wrap=True)
        report = row.check(settings)
        _print(report)
    if not report.ok:
        results.print("[bold red]damaged:[/] " + "; ".join(f"{i.name}: {i.detail}" for i in report.items if not i.ok),
                      highlight=False, soft_wrap=True)
        if not repair and report.repairable:
            console.print("run `gear check --repair` to rebuild it", highlight=False)
        raise typer.Exit(1)
    read_only = getattr(report, "read_only", None)
    results.print(f"ok (read-only: {read_only})" if read_only else "ok", highlight=False)


def _restore(settings, row, report):  # noqa: ANN001, ANN202
    """A backend that restores as a verb of its own (``gear snapshot --restore``: Elasticsearch)
    puts back the snapshot its check offered (``report.restorable_from``), before the rest is
    mended; returns the check of what it restored. The embedded repair restores itself."""
    if not report.restorable_from or row.restore is None:
        return report
    results.print(f"repaired: {row.restore(settings)}", highlight=False, soft_wrap=True)
    return row.check(settings)


def _repair(settings, row, report) -> list[str]:  # noqa: ANN001
    """Mend what ``report`` found that can be mended; what was done, one line each."""
    from gear_agent.cli.progress import ProgressBoard
    from gear_agent.embedding import make_embedder

    embedder = make_embedder(settings)
    with ProgressBoard() as board, board.embedding():
        done = row.repair(settings, report, embedder, board.stage)
        if report.failing("PPR graph cache", "SiReRAG pool"):
            from gear_agent.expansion.ppr_graph import rebuild_cache
            from gear_agent.sirerag.freshness import update_pool
            from gear_agent.store import open_store

            store = open_store(settings, embedder, create=False)
            try:
                if report.failing("PPR graph cache"):
                    rebuild_cache(store, embedder, settings.ppr_synonym_threshold, board.graph_stages())
                    done.append("rebuilt the PPR graph cache (its phrase ANN included) from the store")
                if report.failing("SiReRAG pool"):  # a stamp the index does not know: rebuilt
                    update_pool(store, settings, board.stage)
                    done.append("rebuilt the SiReRAG pool's placements from the store")
            finally:
                store.close()
    return done


@reports_errors
def migrate(index_dir: IndexOpt = None) -> None:
    """Convert an index of the previous format (CURRENT + gen-* folders) into this one, in
    place: records, extraction marks and vectors are copied (nothing is re-embedded) and the
    old files are left untouched (loads no model)."""
    from gear_agent.store.backends import BACKENDS, backend
    from gear_agent.store.base import StoreError

    settings = load_settings(index_dir)
    convert = backend(settings.backend).migrate
    if convert is None:
        names = [name for name, row in BACKENDS.items() if row.migrate is not None]
        raise StoreError(f"`gear migrate` converts {' and '.join(names)} indexes "
                         f"({', '.join(f'GEAR_BACKEND={n}' for n in names)})")
    counts = convert(settings)
    results.print(f"migrated {counts['passages']:,} passages and {counts['triples']:,} triples into "
                  f"{settings.index_dir}/index.sqlite; the old CURRENT and gen-* files were left in place",
                  highlight=False, soft_wrap=True)


def _print(report) -> None:  # noqa: ANN001
    table = Table(title=f"check of {report.root}")
    table.add_column("part")
    table.add_column("state")
    table.add_column("detail")
    for item in report.items:
        state = "[green]ok[/]" if item.ok else ("[yellow]rebuildable[/]" if item.derived else "[bold red]DAMAGED[/]")
        table.add_row(item.name, state, item.detail)
    results.print(table)
