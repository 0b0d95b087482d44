"""Triple extraction with an LLM: resumable, bounded concurrency, and a dry-run cost estimate."""

from gear_agent.extraction.budget import ExtractionBudget
from gear_agent.extraction.cost import CostEstimate, estimate_cost
from gear_agent.extraction.extract import ProgressCallback, extract_triples
from gear_agent.extraction.summary import ExtractionSummary, PassageFailure

__all__ = [
    "CostEstimate",
    "ExtractionBudget",
    "ExtractionSummary",
    "PassageFailure",
    "ProgressCallback",
    "estimate_cost",
    "extract_triples",
]
