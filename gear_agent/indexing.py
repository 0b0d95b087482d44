"""Building an index: add passages, then import or extract triples, in committed batches.

Keeping sources in sync (replacing a file's edited passages, pruning, deleting by source)
is :mod:`gear_agent.sources`, built on these."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from gear_agent.extraction import ExtractionBudget, ExtractionSummary, extract_triples
from gear_agent.ingest.openie import OpenIEImport, read_openie
from gear_agent.llm.client import LLMClient
from gear_agent.prompts import Prompt
from gear_agent.store.base import Store
from gear_agent.text.token_chunking import Chunker
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
    """What one indexing run did (counts are of this run, not of the whole index).

    The sync table of a run (see :func:`gear_agent.sources.sync_passages`): ``passages_added`` passages were
    embedded, of which ``passages_replaced`` took the place of an old version in their
    source (the rest are new: :attr:`passages_new`); ``passages_removed`` old passages went
    with no new version (a shorter file, a file gone under ``--prune``);
    ``passages_existing`` (:attr:`passages_unchanged`) were kept untouched, not embedded or
    extracted again. ``triples_removed`` went with the replaced and removed passages,
    ``triples_unchanged`` stay with the unchanged ones, ``triples_added`` are new.
    ``passages_cut`` passages are longer than the encoder reads (JSON records kept whole
    up to ``record_max_words``): their end is not embedded.
    """

    passages_read: int = 0
    passages_added: int = 0
    passages_existing: int = 0
    passages_replaced: int = 0
    passages_removed: int = 0
    passages_cut: int = 0
    triples_added: int = 0
    triples_existing: int = 0
    triples_removed: int = 0
    triples_unchanged: int = 0
    sources_synced: int = 0
    sources_pruned: list[str] = field(default_factory=list)
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

    @property
    def passages_unchanged(self) -> int:
        """Passages read that were stored already (kept, not embedded again)."""
        return self.passages_existing

    @property
    def passages_new(self) -> int:
        """Passages embedded that replace no old version."""
        return self.passages_added - self.passages_replaced


def _noop(stage: str, done: int, total: int) -> None:
    return None


def cut_warning(count: int, chunker: Chunker) -> str:
    """The line saying that ``count`` passages are longer than the encoder reads."""
    return (f"{count} passages are longer than {chunker.counter.name} reads "
            f"({chunker.counter.max_tokens} tokens, title included), so their end is not embedded: "
            "JSON records are kept whole up to record_max_words (GEAR_RECORD_MAX_WORDS); "
            "lower it to split them")


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
    added, existing = _add_in_batches(store.passages.add, passages, PASSAGE_BATCH, "passages", progress)
    report.passages_added += added
    report.passages_existing += existing
    store.maintain(progress)  # derived caches (the embedded store's ANN) once per run, not per batch
    report.seconds["passages"] = time.perf_counter() - started


def add_triples(
    store: Store, triples: Sequence[Triple], report: IndexReport, progress: Progress = _noop
) -> None:
    """Add triples in committed batches; already stored ones are no-ops."""
    added, existing = _add_in_batches(store.triples.add, triples, TRIPLE_BATCH, "triples", progress)
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
    stored = {p.id for p in store.passages.get(list(dict.fromkeys(parsed.passage_ids)))}
    report.openie_docs += parsed.docs
    report.openie_docs_unmatched += sum(1 for pid in parsed.passage_ids if pid not in stored)
    report.malformed_triples += parsed.malformed
    report.duplicate_triples += parsed.duplicates
    report.ungrounded_triples += parsed.ungrounded
    report.ungrounded_left_out = parsed.ungrounded_left_out
    report.malformed_examples.extend(parsed.malformed_examples)
    add_triples(store, [t for t in parsed.triples if t.passage_id in stored], report, progress)
    store.passages.mark_extracted([pid for pid in parsed.passage_ids if pid in stored])
    store.maintain(progress)
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
    budget: ExtractionBudget | None = None,
) -> ExtractionSummary:
    """Extract triples with the LLM for every passage not extracted yet (resumable: finished
    passages are committed as they come, failed ones, and those a spent ``budget`` left
    unsent, stay for the next run).

    The summary (passages, triples, failures, tokens) is put in ``report.extraction``; read
    its ``warnings()``. Works from a thread with a running event loop too (a notebook).
    """
    started = time.perf_counter()
    summary = run_coroutine(
        extract_triples(
            store, llm, concurrency=concurrency, prompt=prompt, ground=ground, budget=budget,
            progress=lambda done, total: progress("extraction", done, total),
        )
    )
    report.triples_added += summary.triples_kept
    report.malformed_triples += summary.malformed_dropped
    report.extraction = summary
    store.maintain(progress)
    report.seconds["extraction"] = time.perf_counter() - started
    return summary


_LOOP: asyncio.AbstractEventLoop | None = None
_LOOP_LOCK = threading.Lock()


def _shared_loop() -> asyncio.AbstractEventLoop:
    """The process's one event loop for sync callers, running in a daemon thread: every
    extraction run uses it, so the connections an HTTP client keeps open (langchain-openai
    shares one async client per process) stay on the loop they were made on. A new loop per
    run (``asyncio.run``) left them on a closed loop, and the next run's first call failed
    with "Event loop is closed"."""
    global _LOOP
    with _LOOP_LOCK:
        if _LOOP is None or _LOOP.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="gear-async", daemon=True).start()
            _LOOP = loop
        return _LOOP


def run_coroutine(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to completion from sync code (also where a loop already runs in this
    thread, a notebook) on the process's shared loop, with this thread's context variables
    (the CLI's progress callbacks). Whatever it raises (``KeyboardInterrupt`` included,
    which must not stop the shared loop) is raised here; an interrupt here (Ctrl-C) cancels
    it and waits for its cleanup (extraction writes what finished) before it is raised."""
    loop = _shared_loop()
    context = contextvars.copy_context()
    outcome: concurrent.futures.Future[T] = concurrent.futures.Future()
    tasks: list[asyncio.Task[None]] = []

    async def runner() -> None:
        try:
            outcome.set_result(await coroutine)
        except BaseException as exc:  # handed to the caller's thread, never to the loop
            outcome.set_exception(exc)

    def start() -> None:
        tasks.append(context.run(loop.create_task, runner()))  # the task runs in ``context``

    loop.call_soon_threadsafe(start)
    try:
        return outcome.result()
    except BaseException:
        if not outcome.done():
            loop.call_soon_threadsafe(lambda: tasks[0].cancel())
            concurrent.futures.wait([outcome])
        raise
