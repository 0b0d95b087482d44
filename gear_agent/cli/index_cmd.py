"""`gear index`, `gear info` and `gear delete`: build, describe and prune an index."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from gear_agent.cli.common import IndexOpt, console, load_settings, reports_errors, results


@reports_errors
def index(
    corpus: Annotated[Path, typer.Argument(
        metavar="CORPUS", help="HippoRAG corpus .json ([{title, text}]), .jsonl, a document (.pdf, .html, .docx, .md, .txt), or a folder of them.")],
    openie: Annotated[Path | None, typer.Option(
        metavar="FILE", help="Import HippoRAG OpenIE triples from this file.")] = None,
    extract: Annotated[bool, typer.Option(
        "--extract", help="Extract triples with the LLM (GEAR_LLM_MODEL) for passages without any.")] = False,
    prune: Annotated[bool, typer.Option(
        "--prune", help="Also delete the passages of files no longer under the CORPUS folder.")] = False,
    max_cost: Annotated[float | None, typer.Option(
        "--max-cost", metavar="USD", help="With --extract: stop sending passages once the run has cost "
        "this much (GEAR_EXTRACT_MAX_TOKENS caps tokens); the rest resumes on the next run.")] = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Say what a run would add, replace, remove and (with --extract) cost; "
                          "write and send nothing.")] = False,
    index_dir: IndexOpt = None,
    model: Annotated[str | None, typer.Option(
        metavar="NAME", help="Embedding model (GEAR_EMBEDDING_MODEL).")] = None,
) -> None:
    """Bring the index in line with a corpus; then import OpenIE triples or extract them with an LLM.

    Each file is a source that owns its passages: indexing it again keeps its unchanged
    chunks (not embedded or extracted again) and replaces its edited ones, in one commit.
    An interrupted run keeps what it committed. It ends with the PPR graph brought up to
    date and saved beside the index, so the first `ppr` query does not build it. Progress
    bars show each stage with its rate and time left.
    """
    from gear_agent.cli.checks import refuse_damaged_index, require_index
    from gear_agent.cli.progress import ProgressBoard
    from gear_agent.embedding import encoder_tokenizer, make_embedder
    from gear_agent.extraction import ExtractionBudget
    from gear_agent.indexing import IndexReport, cut_warning, import_openie
    from gear_agent.ingest.corpus import count_cut, make_chunker
    from gear_agent.ingest.items import read_items
    from gear_agent.ingest.openie import read_openie
    from gear_agent.llm import LLMClient
    from gear_agent.sources import sync_passages
    from gear_agent.store import open_store

    settings = load_settings(index_dir, embedding_model=model)
    started = time.perf_counter()
    chunker = make_chunker(encoder_tokenizer(settings), settings.chunk_words, settings.chunk_overlap_words)
    read = read_items(corpus, settings.chunk_words, settings.chunk_overlap_words,
                      settings.record_max_words, chunker=chunker)
    if prune and not corpus.is_dir():
        raise typer.BadParameter("--prune needs a folder: it deletes the files no longer in it",
                                 param_hint="--prune")
    if max_cost is not None and not extract:
        raise typer.BadParameter("--max-cost is the budget of an extraction: add --extract",
                                 param_hint="--max-cost")
    budget = ExtractionBudget.of(settings, max_cost) if extract else None
    cut = count_cut(read.passages, chunker) if chunker.counter.name != "words" else 0
    if dry_run:
        _dry_run(settings, read, prune, extract or openie is None)
        return
    # Every input is checked before any embedding or writing: a bad OpenIE file or a
    # missing LLM configuration fails at once and leaves the index as it was.
    triples = read_openie(openie, settings.ground_openie) if openie is not None else None
    llm = LLMClient.from_settings(settings) if extract else None
    require_index(settings, missing_ok=True)  # built by another model: say so before loading
    refuse_damaged_index(settings)  # never add to an index that fails SQLite's own check
    embedder = make_embedder(settings)
    store = open_store(settings, embedder)
    report = IndexReport(passages_cut=cut)
    with ProgressBoard() as board, board.embedding(), store.bulk_load():
        sync_passages(store, read.passages, read.sources, report, board.stage,
                      prune=read.folders if prune else ())
        if triples is not None:
            import_openie(store, triples, report, board.stage)
        if llm is not None:
            from gear_agent.cli.extract_run import run_extraction

            run_extraction(store, settings, report, llm, board.stage, budget=budget)
    _prepare_derived(store, embedder, settings, report)
    total = time.perf_counter() - started
    _print_report(report, total)
    if cut:
        console.print(f"[yellow]note:[/] {escape(cut_warning(cut, chunker))}", highlight=False, soft_wrap=True)
    _print_info(store, settings)


def _prepare_derived(store, embedder, settings, report) -> None:
    """The write path's last step: bring what a default retriever needs up to date now, with
    progress, so that the first query does not build it: the PPR graph and its phrase index,
    saved beside the index (after ``bulk_load``, so Elasticsearch's writes are visible)."""
    from gear_agent.cli.progress import ProgressBoard
    from gear_agent.expansion.ppr_graph import prepare_cache
    from gear_agent.sirerag.freshness import update_pool

    started = time.perf_counter()
    with ProgressBoard() as board, board.embedding():
        prepare_cache(store, embedder, settings.ppr_synonym_threshold, board.graph_stages())
        update_pool(store, settings, board.stage)  # SiReRAG's pool, where the index has one
    report.seconds["PPR graph"] = time.perf_counter() - started


def _dry_run(settings, read, prune: bool, extraction: bool) -> None:
    """What a run would do, from the index as it is (opened without the model; nothing is
    written or sent)."""
    from gear_agent.cli.checks import open_store_without_model
    from gear_agent.extraction import estimate_cost
    from gear_agent.sources import plan_sync
    from gear_agent.store.backends import backend

    passages = read.passages
    row = backend(settings.backend)
    exists = row.manifest is None or row.manifest(settings) is not None
    store = open_store_without_model(settings) if exists else None
    if store is not None:
        plan = plan_sync(store, passages, read.sources, prune=read.folders if prune else ())
        counts = plan.counts()
        results.print(f"dry run: {len(passages)} passages read from {len(read.sources)} sources: "
                      f"{counts.new} new, {counts.replaced} replaced, {counts.removed} removed, "
                      f"{counts.unchanged} unchanged", highlight=False, soft_wrap=True)
        for source, ids in plan.pruned.items():
            results.print(f"would prune {source}  ({len(ids)} passages)", highlight=False, markup=False,
                          soft_wrap=True)
        to_send = [p for s in plan.sources for p in s.new] + plan.loose
    else:
        results.print(f"dry run: {len(passages)} passages read; no index yet, all would be added",
                      highlight=False)
        to_send = passages
    if extraction:
        _print_estimate(settings, estimate_cost(to_send, settings), "would")


def _print_estimate(settings, estimate, verb: str) -> None:
    cost = f"${estimate.usd:.4f}" if estimate.usd is not None else "unknown for this model"
    results.print(
        f"extraction {verb} send {estimate.passages:,} passages: about {estimate.prompt_tokens:,} "
        f"prompt tokens and about {estimate.expected_output_tokens:,} output tokens with "
        f"{settings.llm_model} ({cost}); passages already extracted are not sent again",
        highlight=False, soft_wrap=True,
    )


def _print_report(report, total: float) -> None:
    table = Table(title="this run", show_header=False)
    table.add_row("passages read", f"{report.passages_read:,}")
    table.add_row("passages new (embedded)", f"{report.passages_new:,}")
    table.add_row("passages replaced (edited: embedded)", f"{report.passages_replaced:,}")
    table.add_row("passages removed", f"{report.passages_removed:,}")
    table.add_row("passages unchanged (kept)", f"{report.passages_unchanged:,}")
    if report.sources_pruned:
        table.add_row("sources pruned (gone from the folder)", f"{len(report.sources_pruned):,}")
    if report.openie_docs:
        table.add_row("OpenIE docs", f"{report.openie_docs:,} ({report.openie_docs_unmatched:,} unmatched)")
        table.add_row("malformed triples skipped", f"{report.malformed_triples:,}")
        table.add_row("duplicate triples (same passage)", f"{report.duplicate_triples:,}")
        fate = "left out" if report.ungrounded_left_out else "kept (GEAR_GROUND_OPENIE=true leaves them out)"
        table.add_row("triples not found in their passage", f"{report.ungrounded_triples:,}, {fate}")
    table.add_row("triples added (embedded)", f"{report.triples_added:,}")
    table.add_row("triples already stored", f"{report.triples_existing:,}")
    table.add_row("triples removed (with their passages)", f"{report.triples_removed:,}")
    table.add_row("triples unchanged (kept)", f"{report.triples_unchanged:,}")
    for stage, seconds in report.seconds.items():
        table.add_row(f"time: {stage}", f"{seconds:.1f} s")
    table.add_row("time: total", f"{total:.1f} s")
    results.print(table)
    if report.malformed_examples:
        console.print("malformed examples: " + "; ".join(report.malformed_examples[:3]))


def _print_info(store, settings) -> None:
    from gear_agent.store.backends import backend

    row = backend(settings.backend)
    table = Table(title="index", show_header=False)
    table.add_row("backend", row.name)
    table.add_row("location", row.location(settings))
    table.add_row("embedding model", f"{store.embedding_model} (dimension {store.dimension})")
    passages, triples = store.passages.count(), store.triples.count()
    unextracted = len(store.passages.unextracted())
    table.add_row("passages", f"{passages:,}")
    table.add_row("triples", f"{triples:,}" + _triples_hint(triples, passages))
    table.add_row("passages not yet extracted", f"{unextracted:,}" + _extract_hint(unextracted))
    if row.size_on_disk is not None:
        table.add_row("size on disk", f"{row.size_on_disk(settings) / 1e6:.1f} MB")
    results.print(table)
    _next_step(settings, passages)


def _extract_hint(unextracted: int) -> str:
    return " (run `gear index CORPUS --extract` to extract them)" if unextracted else ""


def _triples_hint(triples: int, passages: int) -> str:
    if triples or not passages:
        return ""
    return (" (graph retrievers need triples: `gear index CORPUS --openie FILE` or "
            "`--extract`)")


def _next_step(settings, passages: int) -> None:
    from gear_agent.store.backends import backend

    if passages:
        option = backend(settings.backend).index_option(settings)
        where = f" {option}" if option else ""
        console.print(f'next: gear search "your question"{where}', highlight=False,
                      soft_wrap=True, markup=False)


@reports_errors
def info(index_dir: IndexOpt = None) -> None:
    """Counts, embedding model and size on disk of the index (loads no model)."""
    from gear_agent.store.backends import backend
    from gear_agent.store.base import StoreError

    settings = load_settings(index_dir)
    row = backend(settings.backend)
    if row.manifest is None:
        raise StoreError(f"`gear info` reads embedded indexes; for the {row.name} backend, `gear index` "
                         "prints the counts after a run")
    manifest = row.manifest(settings)
    if manifest is None:
        raise StoreError(f"no index at {settings.index_dir}: build one with `gear index CORPUS`")
    table = Table(title=f"index at {settings.index_dir}", show_header=False)
    table.add_row("embedding model", f"{manifest['embedding_model']} (dimension {manifest['dimension']})")
    table.add_row("passages", f"{manifest['passages']:,}")
    table.add_row("triples", f"{manifest['triples']:,}")
    table.add_row("passages extracted", f"{manifest.get('extracted_passages', 0):,}")
    if manifest["format_version"] == 1:
        table.add_row("format", f"previous (CURRENT + gen-*); convert it with `gear migrate --index {settings.index_dir}`")
    else:
        table.add_row("last commit", f"{manifest.get('committed_at', '?')} (generation {manifest.get('generation', 0)})")
        table.add_row("BM25 tokenizers", ", ".join(manifest.get("tokenizers", [])))
        if row.size_on_disk is not None:
            table.add_row("size on disk", f"{row.size_on_disk(settings) / 1e6:.1f} MB")
    results.print(table)
    _print_hints(settings, manifest)  # what to do next


def _print_hints(settings, manifest) -> None:
    """What to do next, read from the manifest: extract, add triples, set the model, search."""
    from gear_agent.embedding import embedder_name

    passages, triples = int(manifest.get("passages", 0)), int(manifest.get("triples", 0))
    unextracted = passages - int(manifest.get("extracted_passages", 0))
    built_with, configured = manifest.get("embedding_model"), embedder_name(settings)
    hints = []
    if unextracted > 0:
        hints.append(f"passages not yet extracted: {unextracted:,} (run `gear index CORPUS "
                     "--extract` to extract them)")
    if passages and not triples:
        hints.append("no triples: graph retrievers need them (`gear index CORPUS --openie FILE` "
                     "or `--extract`)")
    if built_with and built_with != configured:
        hints.append(f"GEAR_EMBEDDING_MODEL is {configured}: set GEAR_EMBEDDING_MODEL={built_with} "
                     "to search this index")
    for hint in hints:
        console.print(f"[yellow]hint:[/] {escape(hint)}", highlight=False, soft_wrap=True)
    _next_step(settings, passages)


@reports_errors
def delete(
    ids: Annotated[list[str] | None, typer.Argument(metavar="[ID]...", help="Passage ids to delete.")] = None,
    source: Annotated[str | None, typer.Option(
        metavar="SOURCE", help="Delete every passage of this source: a file however named (relative, "
                               "absolute, through a symlink), every file under a folder, or a source "
                               "name as stored; never matched by file name alone.")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List what would be deleted; delete nothing.")] = False,
    index_dir: IndexOpt = None,
) -> None:
    """Delete passages (by id or by source) with their triples and graph edges (loads no model).

    Exits 1 when nothing matched, with or without --dry-run (a script sees the same answer
    from both); 0 when something was (or would be) deleted.
    """
    from gear_agent.cli.checks import open_store_without_model
    from gear_agent.sources import delete_passages
    from gear_agent.store.base import StoreError

    if not ids and not source:
        raise StoreError("name passage ids or --source to delete")
    settings = load_settings(index_dir)
    store = open_store_without_model(settings)
    result = delete_passages(store, ids or [], source=source, dry_run=dry_run)
    for message in result.messages():
        console.print(f"[yellow]note:[/] {escape(message)}", highlight=False, soft_wrap=True)
    if dry_run:
        for passage in result.passages:
            results.print(f"would delete {passage.id}  {passage.source}  {passage.title[:60]}",
                          highlight=False, soft_wrap=True, markup=False)
        results.print(f"dry run: {len(result)} passages and {result.triples:,} triples would be deleted; "
                      "nothing was deleted", highlight=False)
        if not result.passages:
            raise typer.Exit(1)  # as the real delete would: nothing matched
        return
    if not result.passages:
        results.print("deleted 0 passages: nothing deleted", highlight=False)
        raise typer.Exit(1)
    results.print(f"deleted {len(result)} passages and {result.triples:,} triples; {store.passages.count():,} "
                  f"passages and {store.triples.count():,} triples remain", highlight=False)
