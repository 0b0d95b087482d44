"""`gear index`, `gear info` and `gear delete`: build, describe and prune an index."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from gear_agent.cli.common import console, load_settings, progress_bar, reports_errors

IndexOpt = Annotated[Path | None, typer.Option("--index", "-i", help="Index directory (GEAR_INDEX_DIR).")]


@reports_errors
def index(
    corpus: Annotated[Path, typer.Argument(help="HippoRAG corpus .json, .jsonl, or a folder of .txt/.md")],
    openie: Annotated[Path | None, typer.Option(help="Import HippoRAG OpenIE triples from this file.")] = None,
    extract: Annotated[bool, typer.Option("--extract", help="Extract triples with the LLM for passages without any.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="With --extract: estimate tokens and cost, send nothing.")] = False,
    index_dir: IndexOpt = None,
    model: Annotated[str | None, typer.Option(help="Embedding model (GEAR_EMBEDDING_MODEL).")] = None,
) -> None:
    """Ingest a corpus into the index; then import OpenIE triples or extract them with an LLM."""
    from gear_agent.embedding import make_embedder
    from gear_agent.indexing import IndexReport, add_passages, import_openie
    from gear_agent.ingest.corpus import read_corpus
    from gear_agent.ingest.openie import read_openie
    from gear_agent.llm import LLMClient
    from gear_agent.store import open_store

    settings = load_settings(index_dir, embedding_model=model)
    started = time.perf_counter()
    passages = read_corpus(corpus, settings.chunk_words, settings.chunk_overlap_words)
    if dry_run:
        _dry_run(settings, passages)
        return
    # Every input is checked before any embedding or writing: a bad OpenIE file or a
    # missing LLM configuration fails at once and leaves the index as it was.
    triples = read_openie(openie) if openie is not None else None
    llm = LLMClient.from_settings(settings) if extract else None
    embedder = make_embedder(settings)
    store = open_store(settings, embedder)
    report = IndexReport()
    progress = progress_bar()
    add_passages(store, passages, report, progress)
    if triples is not None:
        import_openie(store, triples, report, progress)
    if llm is not None:
        from gear_agent.cli.extract_run import run_extraction

        run_extraction(store, settings, report, llm)
    total = time.perf_counter() - started
    _print_report(report, total)
    _print_info(store, settings)


def _dry_run(settings, passages) -> None:
    from gear_agent.extraction import estimate_cost

    estimate = estimate_cost(passages, settings)
    cost = f"${estimate.usd:.4f}" if estimate.usd is not None else "unknown for this model"
    console.print(
        f"dry run: {len(passages)} passages read; extraction would send about "
        f"{estimate.prompt_tokens:,} prompt tokens and receive about "
        f"{estimate.expected_output_tokens:,} output tokens with {settings.llm_model} ({cost}); "
        "passages already extracted in the index are not sent again"
    )


def _print_report(report, total: float) -> None:
    table = Table(title="this run", show_header=False)
    table.add_row("passages read", f"{report.passages_read:,}")
    table.add_row("passages added (embedded)", f"{report.passages_added:,}")
    table.add_row("passages already stored", f"{report.passages_existing:,}")
    if report.openie_docs:
        table.add_row("OpenIE docs", f"{report.openie_docs:,} ({report.openie_docs_unmatched:,} unmatched)")
        table.add_row("malformed triples skipped", f"{report.malformed_triples:,}")
        table.add_row("duplicate triples (same passage)", f"{report.duplicate_triples:,}")
    table.add_row("triples added (embedded)", f"{report.triples_added:,}")
    table.add_row("triples already stored", f"{report.triples_existing:,}")
    for stage, seconds in report.seconds.items():
        table.add_row(f"time: {stage}", f"{seconds:.1f} s")
    table.add_row("time: total", f"{total:.1f} s")
    console.print(table)
    if report.malformed_examples:
        console.print("malformed examples: " + "; ".join(report.malformed_examples[:3]))


def _print_info(store, settings) -> None:
    table = Table(title="index", show_header=False)
    table.add_row("backend", settings.backend)
    table.add_row("location", str(settings.index_dir) if settings.backend == "embedded" else str(settings.es_url))
    table.add_row("embedding model", f"{store.embedding_model} (dimension {store.dimension})")
    table.add_row("passages", f"{store.count('passage'):,}")
    table.add_row("triples", f"{store.count('triple'):,}")
    table.add_row("passages not yet extracted", f"{len(store.unextracted_passages()):,}")
    size = getattr(store, "size_on_disk", None)
    if size is not None:
        table.add_row("size on disk", f"{size() / 1e6:.1f} MB")
    console.print(table)


@reports_errors
def info(index_dir: IndexOpt = None) -> None:
    """Counts, embedding model and size on disk of the index (loads no model)."""
    from gear_agent.store import generations
    from gear_agent.store.base import StoreError
    from gear_agent.store.embedded import read_manifest

    settings = load_settings(index_dir)
    manifest = read_manifest(settings.index_dir)
    if manifest is None:
        raise StoreError(f"no index at {settings.index_dir}: build one with `gear index CORPUS`")
    live = generations.current_generation(settings.index_dir)
    table = Table(title=f"index at {settings.index_dir}", show_header=False)
    table.add_row("embedding model", f"{manifest['embedding_model']} (dimension {manifest['dimension']})")
    table.add_row("passages", f"{manifest['passages']:,}")
    table.add_row("triples", f"{manifest['triples']:,}")
    table.add_row("passages extracted", f"{manifest.get('extracted_passages', 0):,}")
    table.add_row("generation", f"{live.name} (committed {manifest.get('committed_at', '?')})")
    table.add_row("size on disk", f"{generations.folder_size(live) / 1e6:.1f} MB")
    console.print(table)


@reports_errors
def delete(
    ids: Annotated[list[str] | None, typer.Argument(help="Passage ids to delete.")] = None,
    source: Annotated[str | None, typer.Option(help="Delete every passage from this source.")] = None,
    index_dir: IndexOpt = None,
) -> None:
    """Delete passages (by id or by source) with their triples and graph edges."""
    from gear_agent.embedding import make_embedder
    from gear_agent.store import open_store
    from gear_agent.store.base import StoreError

    if not ids and not source:
        raise StoreError("name passage ids or --source to delete")
    settings = load_settings(index_dir)
    store = open_store(settings, make_embedder(settings), create=False)
    deleted = store.delete_passages(ids) if ids else []
    if source:
        deleted += store.delete_source(source)
    console.print(f"deleted {len(deleted)} passages; {store.count('passage'):,} passages and "
                  f"{store.count('triple'):,} triples remain")
