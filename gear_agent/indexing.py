"""Building an index: ingest a corpus, then import or extract triples, in committed batches."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from gear_agent.extraction import ExtractionSummary, extract_triples
from gear_agent.ingest.openie import OpenIEImport, read_openie
from gear_agent.llm.client import LLMClient
from gear_agent.prompts import Prompt
from gear_agent.store.base import Store
from gear_agent.types import AddResult, Passage, Triple

T = TypeVar("T")

Progress = Callable[[str, int, int], None]
"""Called as ``progress(stage, done, total)``; the CLI draws it as a bar."""

PASSAGE_BATCH = 256
TRIPLE_BATCH = 16384
"""Triples per committed batch: each commit rewrites the index pages it touches (ids are
random hashes), so larger batches write less per triple (5k synthetic passages: bytes
written / final size 2.5 at 2,048, 1.7 at 16,384)."""


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
    ungrounded_triples: int = 0
    ungrounded_left_out: bool = False
    malformed_examples: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    extraction: ExtractionSummary | None = None
    warnings: list[str] = field(default_factory=list)


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
    store.maintain()  # derived caches (the embedded store's ANN) once per run, not per batch
    report.seconds["passages"] = time.perf_counter() - started


def add_triples(
    store: Store, triples: Sequence[Triple], report: IndexReport, progress: Progress = _noop
) -> None:
    """Add triples in committed batches; already stored ones are no-ops."""
    added, existing = _add_in_batches(store.add_triples, triples, TRIPLE_BATCH, "triples", progress)
    report.triples_added += added
    report.triples_existing += existing


def import_openie(
    store: Store,
    source: Path | OpenIEImport,
    report: IndexReport,
    progress: Progress = _noop,
    *,
    drop_ungrounded: bool = False,
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
        drop_ungrounded: Leave out triples not found in their doc (``GEAR_GROUND_OPENIE``);
            they are counted in ``report.ungrounded_triples`` either way. Ignored when
            ``source`` was read already (it was read with its own choice).
    """
    started = time.perf_counter()
    parsed = source if isinstance(source, OpenIEImport) else read_openie(source, drop_ungrounded)
    stored = {p.id for p in store.get_passages(list(dict.fromkeys(parsed.passage_ids)))}
    report.openie_docs += parsed.docs
    report.openie_docs_unmatched += sum(1 for pid in parsed.passage_ids if pid not in stored)
    report.malformed_triples += parsed.malformed
    report.duplicate_triples += parsed.duplicates
    report.ungrounded_triples += parsed.ungrounded
    report.ungrounded_left_out = parsed.ungrounded_left_out
    report.malformed_examples.extend(parsed.malformed_examples)
    add_triples(store, [t for t in parsed.triples if t.passage_id in stored], report, progress)
    store.mark_extracted([pid for pid in parsed.passage_ids if pid in stored])
    store.maintain()
    report.seconds["triples"] = time.perf_counter() - started


def extract_with_llm(
    store: Store,
    llm: LLMClient,
    report: IndexReport,
    progress: Progress = _noop,
    *,
    concurrency: int = 4,
    prompt: Prompt | None = None,
    ground: bool = True,
) -> ExtractionSummary:
    """Extract triples with the LLM for every passage not extracted yet (resumable: finished
    passages are committed as they come, failed ones stay for the next run).

    The summary (passages, triples, failures, tokens) is put in ``report.extraction``; read
    its ``warnings()``. Works from a thread with a running event loop too (a notebook).
    """
    started = time.perf_counter()
    summary = run_coroutine(
        extract_triples(
            store, llm, concurrency=concurrency, prompt=prompt, ground=ground,
            progress=lambda done, total: progress("extraction", done, total),
        )
    )
    report.triples_added += summary.triples_kept
    report.malformed_triples += summary.malformed_dropped
    report.extraction = summary
    store.maintain()
    report.seconds["extraction"] = time.perf_counter() - started
    return summary


def run_coroutine(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to completion from sync code, also where a loop already runs in this
    thread (then in a worker thread with its own loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["value"] = asyncio.run(coroutine)
        except BaseException as exc:  # handed to the caller's thread below
            outcome["error"] = exc

    worker = threading.Thread(target=work, name="gear-extraction")
    worker.start()
    worker.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


@dataclass(frozen=True)
class DeleteResult:
    """What a delete removed, or with ``dry_run`` would remove.

    Attributes:
        passages: The passages (with their text and source) deleted, or that would be.
        triples: How many triples went (or would go) with them.
        triples_by_passage: That count per passage id.
        unknown_ids: Ids asked for that are not stored.
        source: The ``source`` asked for, as matched (normalised when only that matched).
        source_matched: Whether any stored passage has that source (None: none asked).
        similar_sources: When ``source`` matched nothing: stored sources with the same file
            name (what was probably meant).
        dry_run: True when nothing was deleted.
    """

    passages: list[Passage]
    triples: int = 0
    triples_by_passage: dict[str, int] = field(default_factory=dict)
    unknown_ids: list[str] = field(default_factory=list)
    source: str | None = None
    source_matched: bool | None = None
    similar_sources: list[str] = field(default_factory=list)
    dry_run: bool = False

    @property
    def ids(self) -> list[str]:
        """Ids of :attr:`passages`."""
        return [p.id for p in self.passages]

    def __len__(self) -> int:
        return len(self.passages)

    def messages(self) -> list[str]:
        """One line per thing the caller should know: nothing matched, unknown ids."""
        lines = []
        if self.unknown_ids:
            shown = ", ".join(self.unknown_ids[:5]) + (" ..." if len(self.unknown_ids) > 5 else "")
            lines.append(f"{len(self.unknown_ids)} id(s) are not stored: {shown}")
        if self.source_matched is False:
            hint = (f"; stored sources with that name: {', '.join(self.similar_sources)}"
                    if self.similar_sources else "")
            lines.append(f"no passage has source {self.source!r}{hint}")
        return lines


def delete_passages(
    store: Store, ids: Sequence[str] = (), *, source: str | None = None, dry_run: bool = False
) -> DeleteResult:
    """Delete passages by id and/or every passage of a ``source`` (exact: a file, or the
    files under a folder; a path is also tried normalised as ``gear index`` stored it),
    with their triples and graph edges; with ``dry_run``, only say what would go.

    Example:
        >>> delete_passages(store, source="reports/2024/q1.json", dry_run=True).ids  # doctest: +SKIP
        ['p-...', 'p-...']
    """
    from gear_agent.ingest.corpus import source_name

    wanted = list(dict.fromkeys(ids))
    matched, similar = None, []
    if source is not None:
        matched = False
        for candidate in dict.fromkeys([source, source_name(source)]):
            found = store.passage_ids_of_source(candidate)
            if found:
                source, matched = candidate, True
                seen = set(wanted)
                wanted.extend(i for i in found if i not in seen)
                break
        else:
            similar = store.sources_like(source)
    passages = store.get_passages(wanted)
    stored = {p.id for p in passages}
    unknown = [i for i in dict.fromkeys(ids) if i not in stored]
    counts = {p.id: len(store.triples_of_passage(p.id)) for p in passages}
    if passages and not dry_run:
        gone = set(store.delete_passages([p.id for p in passages]))
        passages = [p for p in passages if p.id in gone]
    counts = {p.id: counts[p.id] for p in passages}
    return DeleteResult(passages, sum(counts.values()), counts, unknown, source, matched, similar, dry_run)
