"""Building an index: ingest a corpus, then import or extract triples, in committed batches."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gear_agent.ingest.openie import OpenIEImport, read_openie
from gear_agent.store.base import Store
from gear_agent.types import AddResult, Passage, Triple

Progress = Callable[[str, int, int], None]
"""Called as ``progress(stage, done, total)``; the CLI draws it as a bar."""

PASSAGE_BATCH = 256
TRIPLE_BATCH = 2048


@dataclass
class IndexReport:
    """What one indexing run did (counts are of this run, not of the whole index)."""

    passages_read: int = 0
    passages_added: int = 0
    passages_existing: int = 0
    triples_added: int = 0
    triples_existing: int = 0
    malformed_triples: int = 0
    duplicate_triples: int = 0
    openie_docs: int = 0
    openie_docs_unmatched: int = 0
    malformed_examples: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)


def _noop(stage: str, done: int, total: int) -> None:
    return None


def _add_in_batches(
    add: Callable[[Sequence], AddResult], items: Sequence, batch: int, stage: str,
    progress: Progress,
) -> tuple[int, int]:
    """Call ``add`` on committed batches of ``items``; returns (added, already stored)."""
    added = existing = 0
    progress(stage, 0, len(items))
    for start in range(0, len(items), batch):
        result = add(items[start : start + batch])
        added += len(result.added)
        existing += len(result.existing)
        progress(stage, min(start + batch, len(items)), len(items))
    return added, existing


def add_passages(
    store: Store, passages: Sequence[Passage], report: IndexReport, progress: Progress = _noop
) -> None:
    """Add passages in committed batches; already stored ones are no-ops (never re-embedded)."""
    started = time.perf_counter()
    report.passages_read += len(passages)
    added, existing = _add_in_batches(store.add_passages, passages, PASSAGE_BATCH, "passages", progress)
    report.passages_added += added
    report.passages_existing += existing
    report.seconds["passages"] = time.perf_counter() - started


def add_triples(
    store: Store, triples: Sequence[Triple], report: IndexReport, progress: Progress = _noop
) -> None:
    """Add triples in committed batches; already stored ones are no-ops."""
    added, existing = _add_in_batches(store.add_triples, triples, TRIPLE_BATCH, "triples", progress)
    report.triples_added += added
    report.triples_existing += existing


def import_openie(
    store: Store, source: Path | OpenIEImport, report: IndexReport, progress: Progress = _noop
) -> None:
    """Import HippoRAG OpenIE triples for the stored passages they align with.

    Docs whose (title, text) matches no stored passage are counted as unmatched.
    The passages covered are marked extracted, so LLM extraction skips them.

    Args:
        store: The index.
        source: The OpenIE file, or what :func:`~gear_agent.ingest.openie.read_openie`
            read from it (read it first to refuse a bad file before any other work).
        report: Counts are added here.
        progress: Called as triples are embedded.
    """
    started = time.perf_counter()
    parsed = source if isinstance(source, OpenIEImport) else read_openie(source)
    stored = {p.id for p in store.get_passages(list(dict.fromkeys(parsed.passage_ids)))}
    report.openie_docs += parsed.docs
    report.openie_docs_unmatched += sum(1 for pid in parsed.passage_ids if pid not in stored)
    report.malformed_triples += parsed.malformed
    report.duplicate_triples += parsed.duplicates
    report.malformed_examples.extend(parsed.malformed_examples)
    add_triples(store, [t for t in parsed.triples if t.passage_id in stored], report, progress)
    store.mark_extracted([pid for pid in parsed.passage_ids if pid in stored])
    report.seconds["triples"] = time.perf_counter() - started
