"""`gear sirerag build|info`: SiReRAG's pool of tree nodes beside the passages (the logic is
:mod:`gear_agent.sirerag`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from gear_agent.cli.common import IndexOpt, console, load_settings, reports_errors, results
from gear_agent.cli.usage import CONTEXT, GearCommand, GearGroup

if TYPE_CHECKING:
    from gear_agent.config import GearSettings
    from gear_agent.sirerag import BuildReport
    from gear_agent.store import Store

app = typer.Typer(
    help="SiReRAG: build similarity and relatedness trees into the index (retriever `sirerag`).",
    cls=GearGroup, context_settings=CONTEXT, no_args_is_help=True,
)


def sirerag_settings(settings: GearSettings, **options: int | None) -> GearSettings:
    """``settings`` with the SiReRAG options given on the command line (``min_propositions=2``
    sets ``sirerag_min_propositions``); options left as None keep the setting."""
    given = {f"sirerag_{name}": value for name, value in options.items() if value is not None}
    return settings.model_copy(update=given) if given else settings


def check_mode(mode: str) -> str:
    """``mode`` when it is a build mode, else one line listing them."""
    from gear_agent.errors import UnknownNameError
    from gear_agent.sirerag import BUILD_MODES

    if mode not in BUILD_MODES:
        raise UnknownNameError(f"unknown SiReRAG mode {mode!r}; known: {', '.join(BUILD_MODES)}")
    return mode


def run_build(store: Store, mode: str, settings: GearSettings) -> BuildReport:
    """Build the pool in ``mode`` over an index's store with ``settings``' SiReRAG section
    (full mode: also its chat model and prompts)."""
    from gear_agent.sirerag import build_ablation

    if check_mode(mode) == "ablation":
        return build_ablation(store, settings)
    from gear_agent.llm.client import LLMClient
    from gear_agent.sirerag.build import build_full

    llm = LLMClient.from_settings(settings)
    return build_full(store, llm, settings, prompts_dir=settings.prompts_dir)


def print_report(report: BuildReport, counts: bool = True) -> None:
    """Nodes per level, and (``counts``) what was reused or rebuilt and the tokens spent."""

    table = Table(title=f"SiReRAG pool ({report.mode})")
    for column in ("tree", "kind", "level", "nodes"):
        table.add_column(column, justify="right" if column in ("level", "nodes") else "left")
    for tree, kind, level, n in report.level_rows():
        table.add_row(tree, kind, str(level), f"{n:,}")
    results.print(table)
    if not counts:
        return
    results.print(
        f"propositions {report.propositions:,}; nodes added {report.nodes_added:,}, kept "
        f"{report.nodes_kept:,}, deleted {report.nodes_deleted:,}"
        + (f"; clusters summarised {report.clusters_summarised:,}, reused {report.clusters_reused:,}"
           if report.mode == "full" else "")
        + (f"; passages extracted {report.extracted_passages:,} ({report.extraction_failures:,} failed)"
           if report.mode == "full" else "")
        + (f"; tokens {report.input_tokens:,} in, {report.output_tokens:,} out, "
           f"{report.cached_replies:,} cached replies" if report.mode == "full" else ""),
        highlight=False,
    )
    for note in report.notes:
        console.print(f"[yellow]{note}[/]", highlight=False)


@app.command("build", cls=GearCommand)
@reports_errors
def build(
    mode: Annotated[str, typer.Option(metavar="ablation|full", help=(
        "Mode: ablation (the stored triples as propositions, aggregates by shared entity, no LLM, "
        "no summaries) or full (LLM propositions and both trees' recursive summaries)."))] = "ablation",
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Full mode: print the token and cost estimate and stop (calls no model).")] = False,
    min_propositions: Annotated[int | None, typer.Option(min=1, metavar="N", help="Propositions an entity needs to make an aggregate (GEAR_SIRERAG_MIN_PROPOSITIONS; default: 2).")] = None,
    min_passages: Annotated[int | None, typer.Option(min=1, metavar="N", help="Distinct passages an aggregate must span (GEAR_SIRERAG_MIN_PASSAGES; default: 1).")] = None,
    seed: Annotated[int | None, typer.Option(metavar="N", help="Seed of the clustering (full mode) (GEAR_SIRERAG_SEED; default: 0).")] = None,
    concurrency: Annotated[int | None, typer.Option(min=1, metavar="N", help="LLM calls in flight (full mode) (GEAR_SIRERAG_CONCURRENCY; default: 4).")] = None,
    index_dir: IndexOpt = None,
) -> None:
    """Build (or bring up to date) the SiReRAG pool of the index; prints nodes per level."""
    from gear_agent.cli.checks import require_index, require_llm
    from gear_agent.open_index import OpenIndex

    check_mode(mode)
    settings = load_settings(index_dir, sirerag_min_propositions=min_propositions,
                             sirerag_min_passages=min_passages, sirerag_seed=seed,
                             sirerag_concurrency=concurrency)
    require_index(settings)
    if mode == "full" and dry_run:
        from gear_agent.cli.checks import open_store_without_model
        from gear_agent.sirerag.cost import estimate_build_cost

        store = open_store_without_model(settings)
        estimate = estimate_build_cost(store, settings)
        results.print(estimate.describe(), highlight=False)
        return
    if dry_run:
        console.print("ablation mode calls no LLM: nothing to estimate (it embeds the aggregates only)")
        return
    if mode == "full":
        require_llm(settings)
    index = OpenIndex.open(settings)
    print_report(run_build(index.store, mode, index.settings))


@app.command("info", cls=GearCommand)
@reports_errors
def info(
    index_dir: IndexOpt = None,
) -> None:
    """Nodes per tree, kind and level (loads no model)."""
    from gear_agent.cli.checks import open_store_without_model
    from gear_agent.sirerag import BuildReport
    from gear_agent.sirerag.build import GENERATION_KEY
    from gear_agent.store.backends import node_store_of

    store = open_store_without_model(load_settings(index_dir))
    nodes = node_store_of(store)
    report = BuildReport(nodes.get_meta("mode") or "none", levels=nodes.levels())
    print_report(report, counts=False)
    built_at = nodes.get_meta(GENERATION_KEY)
    if built_at is None:
        return
    from gear_agent.sirerag.freshness import SiReRAGPool

    pool = SiReRAGPool(store, persist=False)
    update = pool.update(store)  # in memory: what a query would see now
    placed = len({p for ps in pool.placed.values() for p in ps})
    console.print(f"the last build reflects commit {built_at}; the index is at commit {store.generation()}"
                  + (f"; {placed:,} passages added since are placed under {len(pool.placed):,} nodes"
                     if placed else "")
                  + (f"; {update.unplaced:,} added passages fit no node" if update.unplaced else "")
                  + (f"; {len(pool.refresh):,} nodes are marked for refresh (`gear sirerag build`)"
                     if pool.refresh else ""), highlight=False)
