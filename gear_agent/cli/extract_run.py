"""Running LLM triple extraction from `gear index --extract`, with a progress bar and a loud summary."""

from __future__ import annotations

import asyncio

from gear_agent.cli.common import console, progress_bar
from gear_agent.config import GearSettings
from gear_agent.indexing import IndexReport
from gear_agent.llm import LLMClient
from gear_agent.store.base import Store


def run_extraction(
    store: Store, settings: GearSettings, report: IndexReport, llm: LLMClient
) -> None:
    """Extract triples for every passage not yet extracted; prints the summary and its warnings."""
    from gear_agent.extraction import extract_triples
    from gear_agent.prompts import load_prompt

    bar = progress_bar()
    summary = asyncio.run(
        extract_triples(
            store, llm, concurrency=settings.llm_concurrency,
            progress=lambda done, total: bar("extraction", done, total),
            prompt=load_prompt("extraction", settings.prompts_dir),
        )
    )
    report.triples_added += summary.triples_kept
    report.malformed_triples += summary.malformed_dropped
    console.print(
        f"extraction: {summary.passages_sent} passages sent, {summary.passages_succeeded} ok, "
        f"{summary.passages_failed} failed, {summary.triples_kept} triples kept, "
        f"{summary.malformed_dropped} malformed dropped, "
        f"{summary.input_tokens:,} input + {summary.output_tokens:,} output tokens"
    )
    for warning in summary.warnings():
        console.print(f"[bold yellow]warning:[/] {warning}")
