"""Running LLM triple extraction from `gear index --extract`, with a progress bar and a loud summary."""

from __future__ import annotations

from gear_agent.cli.common import console
from gear_agent.config import GearSettings
from gear_agent.indexing import IndexReport, Progress, extract_with_llm
from gear_agent.llm import LLMClient
from gear_agent.store.base import Store


def run_extraction(
    store: Store, settings: GearSettings, report: IndexReport, llm: LLMClient, progress: Progress
) -> None:
    """Extract triples for every passage not yet extracted; prints the summary and its warnings.

    ``progress`` is called as ``progress("extraction", done, total)`` after each passage.
    """
    from gear_agent.prompts import load_prompt

    summary = extract_with_llm(
        store, llm, report, progress,
        concurrency=settings.llm_concurrency,
        prompt=load_prompt("extraction", settings.prompts_dir),
        ground=settings.ground_triples,
    )
    console.print(
        f"extraction: {summary.passages_sent} passages sent, {summary.passages_succeeded} ok, "
        f"{summary.passages_failed} failed, {summary.triples_kept} triples kept, "
        f"{summary.malformed_dropped} malformed dropped, "
        f"{summary.ungrounded_dropped} not found in their passage dropped, "
        f"{summary.input_tokens:,} input + {summary.output_tokens:,} output tokens"
    )
    for warning in summary.warnings():
        console.print(f"[bold yellow]warning:[/] {warning}")
