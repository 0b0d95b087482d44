"""Running LLM triple extraction from `gear index --extract`, with a progress bar and a loud summary."""

from __future__ import annotations

from gear_agent.cli.common import console
from gear_agent.config import GearSettings
from gear_agent.extraction import ExtractionBudget, estimate_cost
from gear_agent.indexing import IndexReport, Progress, extract_with_llm
from gear_agent.llm import LLMClient
from gear_agent.store.base import Store


def run_extraction(
    store: Store, settings: GearSettings, report: IndexReport, llm: LLMClient, progress: Progress,
    *, budget: ExtractionBudget | None = None,
) -> None:
    """Extract triples for every passage not yet extracted; prints the estimate (tokens and
    cost) before it starts, then the summary and its warnings.

    ``progress`` is called as ``progress("extraction", done, total)`` after each passage;
    a spent ``budget`` stops the run cleanly (the rest resumes on the next run).
    """
    from gear_agent.prompts import load_prompt

    prompt = load_prompt("extraction", settings.prompts_dir)
    estimate = estimate_cost(store.passages.unextracted(), settings, prompt=prompt)
    cost = f"${estimate.usd:.4f}" if estimate.usd is not None else "price unknown for this model"
    limit = f"; budget {budget.describe()}" if budget is not None else ""
    console.print(
        f"extraction: {estimate.passages:,} passages to send, about {estimate.prompt_tokens:,} prompt + "
        f"{estimate.expected_output_tokens:,} output tokens with {settings.llm_model} ({cost}){limit}",
        highlight=False, soft_wrap=True,
    )
    summary = extract_with_llm(
        store, llm, report, progress,
        concurrency=settings.llm_concurrency,
        prompt=prompt, ground=settings.ground_triples, budget=budget,
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
