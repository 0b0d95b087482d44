"""`gear check`: the integrity of the index, like SQLite's ``PRAGMA integrity_check`` (the
embedded index's files, or an Elasticsearch index's documents: ``store/es_check.py``)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from gear_agent.cli.common import IndexOpt, load_settings, reports_errors, results


@reports_errors
def check(
    index_dir: IndexOpt = None,
    repair: Annotated[bool, typer.Option("--repair", help="Rebuild damaged derived parts; re-embed damaged vectors.")] = False,
) -> None:
    """Check every part of the index (records, vectors, BM25, ANN, PPR graph cache); exit 1 when damaged."""
    from gear_agent.store.check import check_index

    settings = load_settings(index_dir)
    if settings.backend == "elasticsearch":
        _check_elasticsearch(settings, repair)
        return
    report = check_index(settings.index_dir)
    _print(report)
    if repair and not report.ok:
        from gear_agent.embedding import make_embedder
        from gear_agent.store.check import repair as repair_index
        from gear_agent.store.embedded import EmbeddedStore

        store = EmbeddedStore.open(settings.index_dir, make_embedder(settings), create=False,
                                   tokenizer=settings.bm25_tokenizer, verify=False)
        for line in repair_index(store, report):
            results.print(f"repaired: {line}")
        if any(item.name == "PPR graph cache" and not item.ok for item in report.items):
            from gear_agent.expansion.ppr_graph import load_or_build
            from gear_agent.store.derived_files import PPR_GRAPH_FILE

            load_or_build(store, store.embedder, settings.ppr_synonym_threshold,
                          settings.index_dir / PPR_GRAPH_FILE)
            results.print("repaired: rebuilt the PPR graph cache from the store")
        report = check_index(settings.index_dir)
        _print(report)
    if not report.ok:
        results.print("[bold red]damaged:[/] " + "; ".join(f"{i.name}: {i.detail}" for i in report.items if not i.ok),
                      highlight=False, soft_wrap=True)
        raise typer.Exit(1)
    results.print("ok")


def _check_elasticsearch(settings, repair: bool) -> None:  # noqa: ANN001 - GearSettings
    """The Elasticsearch index of GEAR_ES_INDEX_PREFIX; ``--repair`` rebuilds the PPR graph
    cache (the only derived part; the cluster owns its indices)."""
    from gear_agent.store.es_check import check_elasticsearch
    from gear_agent.store.es_client import ElasticsearchSettings

    es_settings = ElasticsearchSettings.from_gear(settings)
    report = check_elasticsearch(es_settings)
    _print(report)
    damaged = [i for i in report.items if not i.ok]
    if repair and any(i.name == "PPR graph cache" for i in damaged):
        from gear_agent.embedding import make_embedder
        from gear_agent.expansion.ppr_graph import load_or_build
        from gear_agent.store import open_store
        from gear_agent.store.derived_files import PPR_GRAPH_FILE

        with open_store(settings, make_embedder(settings), create=False) as store:
            load_or_build(store, store.embedder, settings.ppr_synonym_threshold,
                          store.derived_dir / PPR_GRAPH_FILE)
        results.print("repaired: rebuilt the PPR graph cache from the index")
        report = check_elasticsearch(es_settings)
        _print(report)
        damaged = [i for i in report.items if not i.ok]
    if damaged:
        results.print("[bold red]damaged:[/] " + "; ".join(f"{i.name}: {i.detail}" for i in damaged),
                      highlight=False, soft_wrap=True)
        raise typer.Exit(1)
    results.print("ok")


def _print(report) -> None:
    table = Table(title=f"check of {report.root}")
    table.add_column("part")
    table.add_column("state")
    table.add_column("detail")
    for item in report.items:
        state = "[green]ok[/]" if item.ok else ("[yellow]rebuildable[/]" if item.derived else "[bold red]DAMAGED[/]")
        table.add_row(item.name, state, item.detail)
    results.print(table)
