"""Building an index: ingest a corpus, then import or extract triples, in committed batches."""

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

    The sync table of a run (see :func:`sync_passages`): ``passages_added`` passages were
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
    added, existing = _add_in_batches(store.add_passages, passages, PASSAGE_BATCH, "passages", progress)
    report.passages_added += added
    report.passages_existing += existing
    store.maintain()  # derived caches (the embedded store's ANN) once per run, not per batch
    report.seconds["passages"] = time.perf_counter() - started


@dataclass(frozen=True)
class SourceSync:
    """What syncing one source changes.

    Attributes:
        source: The source (canonical for files).
        new: Its passages read now that are not stored: embedded.
        stale: Ids of its stored passages (under this name or a legacy relative form of it)
            not read now: deleted with their triples.
        unchanged: Its passages read now that are stored already: kept untouched.
    """

    source: str
    new: list[Passage]
    stale: list[str]
    unchanged: int

    @property
    def replaced(self) -> int:
        """New passages that take the place of a stale one (an edited chunk)."""
        return min(len(self.new), len(self.stale))


@dataclass(frozen=True)
class SyncPlan:
    """What :func:`sync_passages` will do, worked out before anything is written.

    Attributes:
        sources: One entry per source these passages own.
        loose: Passages of no synced source (plain strings) not stored yet: only added.
        pruned: Sources no longer in a pruned folder, with the ids of their passages.
        loose_existing: Passages of no synced source that are stored already.
    """

    sources: list[SourceSync]
    loose: list[Passage]
    pruned: dict[str, list[str]]
    loose_existing: int = 0

    def counts(self) -> dict[str, int]:
        """``added`` (new), ``replaced``, ``removed``, ``unchanged`` passages and ``pruned``
        sources, as the run would report them (loose passages counted as new)."""
        replaced = sum(s.replaced for s in self.sources)
        return {
            "added": sum(len(s.new) for s in self.sources) - replaced + len(self.loose),
            "replaced": replaced,
            "removed": sum(len(s.stale) for s in self.sources) - replaced
            + sum(len(ids) for ids in self.pruned.values()),
            "unchanged": sum(s.unchanged for s in self.sources) + self.loose_existing,
            "pruned": len(self.pruned),
        }


LEGACY_SUFFIXES = (".json", ".jsonl", ".ndjson", ".txt", ".md")
"""File names a stored relative source must end with to be read as a path recorded before
sources were canonical (``docs/a.txt``), not as a name a caller gave (``wiki``)."""


class SourceNames:
    """The stored sources a canonical source goes by: its own name, the files under it (a
    folder), and the relative forms ``gear index`` recorded before sources were canonical
    (matched as a trailing part of the path, :func:`~gear_agent.ingest.corpus.legacy_matches`).
    The stored sources are listed once per object."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._legacy: list[str] | None = None

    def legacy(self) -> list[str]:
        """Stored relative sources that look like paths of corpus files."""
        if self._legacy is None:
            self._legacy = [s for s in self.store.stored_sources()
                            if not s.startswith("/") and "://" not in s
                            and s.lower().endswith(LEGACY_SUFFIXES)]
        return self._legacy

    def of_file(self, source: str) -> list[str]:
        """Names of this one source: itself and legacy forms of exactly it."""
        legacy = [s for s in self.legacy() if source.startswith("/") and source.endswith("/" + s)]
        return list(dict.fromkeys([source, *legacy]))

    def under(self, source: str) -> list[str]:
        """Names of ``source`` and of every file under it, legacy forms included."""
        from gear_agent.ingest.corpus import legacy_matches

        found = self.store.stored_sources(under=source)
        if source.startswith("/"):
            found += [s for s in self.legacy() if legacy_matches(s, source)]
        return list(dict.fromkeys(found))


COUNT_IDS = 200
"""Ids per filtered count (SQLite's expression depth is 1,000; a filter's ``$in`` takes 1,024)."""


def count_triples_of(store: Store, passage_ids: Sequence[str]) -> int:
    """How many triples the passages ``passage_ids`` hold (a filtered count per
    :data:`COUNT_IDS` ids: one request each on a remote backend, not one per passage)."""
    ids = list(dict.fromkeys(passage_ids))
    return sum(store.count("triple", where={"id": {"$in": ids[at : at + COUNT_IDS]}})
               for at in range(0, len(ids), COUNT_IDS))


def plan_sync(
    store: Store, passages: Sequence[Passage], sources: Sequence[str], *, prune: Sequence[str] = (),
) -> SyncPlan:
    """Compare what ``sources`` hold now (``passages``) with what the index stores for them.

    Passage ids are content hashes (title and text), so an unchanged chunk has the id it
    had: it is kept; a chunk whose text changed is a new id (embedded) and its old id is
    stale (deleted). Passages of a source not in ``sources`` are only added. ``prune`` names
    folders (canonical): their stored sources that are not in ``sources`` are pruned. A
    passage read now is never deleted, whatever source stored it first.
    """
    read_ids = {p.id for p in passages}
    stored: set[str] = set()
    ids = list(read_ids)
    for start in range(0, len(ids), 4096):
        stored.update(p.id for p in store.get_passages(ids[start : start + 4096]))
    by_source: dict[str, list[Passage]] = {}
    for passage in passages:
        by_source.setdefault(passage.source, []).append(passage)
    names = SourceNames(store)
    owned = list(dict.fromkeys(sources))
    synced, claimed = [], set()
    for source in owned:
        held = by_source.get(source, [])
        source_names = names.of_file(source)
        claimed.update(source_names)
        old = [i for name in source_names for i in store.passage_ids_of_source(name)]
        stale = list(dict.fromkeys(i for i in old if i not in read_ids))
        new = [p for p in held if p.id not in stored]
        synced.append(SourceSync(source, new, stale, len(held) - len(new)))
    owned_set = set(owned)
    others = [p for p in passages if p.source not in owned_set]
    loose = [p for p in others if p.id not in stored]
    pruned: dict[str, list[str]] = {}
    for folder in prune:
        for name in names.under(folder):
            if name in owned_set or name in claimed or name in pruned:
                continue
            gone = [i for i in store.passage_ids_of_source(name) if i not in read_ids]
            if gone:
                pruned[name] = gone
    return SyncPlan(synced, loose, pruned, len(others) - len(loose))


def sync_passages(
    store: Store, passages: Sequence[Passage], sources: Sequence[str], report: IndexReport,
    progress: Progress = _noop, *, prune: Sequence[str] = (), plan: SyncPlan | None = None,
    batch: int = PASSAGE_BATCH,
) -> SyncPlan:
    """Bring the index in line with what ``sources`` hold now (sync by source).

    Each source's stale passages are deleted (with their triples, graph edges and every
    structure derived from them) and its new passages added in ONE commit (a group of
    sources per commit, :meth:`Store.replace_passages`), so a reader, or an index reopened
    after a crash, sees a source's old version or its new one, never both and never
    neither. Unchanged passages are kept untouched: not embedded, not extracted again (new
    ones are left unextracted for the extraction that follows). Sources gone from a
    ``prune`` folder are deleted last. Counts go to ``report`` (see :class:`IndexReport`).
    A commit closes once its sources hold ``batch`` new or stale passages (a source is
    never split across commits).

    Example:
        >>> read = read_items(Path("docs"))  # doctest: +SKIP
        >>> sync_passages(store, read.passages, read.sources, IndexReport()).counts()  # doctest: +SKIP
        {'added': 0, 'replaced': 1, 'removed': 0, 'unchanged': 41, 'pruned': 0}
    """
    started = time.perf_counter()
    plan = plan or plan_sync(store, passages, sources, prune=prune)
    report.passages_read += len(passages)
    total = sum(len(s.new) for s in plan.sources) + len(plan.loose)
    done = 0
    progress("passages", 0, total)

    def commit(group: list[SourceSync]) -> None:
        nonlocal done
        stale = [i for s in group for i in s.stale]
        new = [p for s in group for p in s.new]
        report.triples_removed += count_triples_of(store, stale)
        result = store.replace_passages(stale, new)
        report.passages_added += len(result.added)
        report.passages_existing += len(result.existing)
        replaced = sum(s.replaced for s in group)
        report.passages_replaced += replaced
        report.passages_removed += len(stale) - replaced
        done += len(new)
        progress("passages", done, total)

    group: list[SourceSync] = []
    for change in plan.sources:
        report.sources_synced += 1
        report.passages_existing += change.unchanged
        group.append(change)
        if sum(len(s.new) for s in group) >= batch or sum(len(s.stale) for s in group) >= batch:
            commit(group)
            group = []
    if group:
        commit(group)
    for start in range(0, len(plan.loose), PASSAGE_BATCH):
        result = store.add_passages(plan.loose[start : start + PASSAGE_BATCH])
        report.passages_added += len(result.added)
        report.passages_existing += len(result.existing)
        done += len(result.added) + len(result.existing)
        progress("passages", done, total)
    report.passages_existing += plan.loose_existing
    for source, ids in plan.pruned.items():  # one commit per source gone
        report.triples_removed += count_triples_of(store, ids)
        report.passages_removed += len(store.delete_passages(ids))
        report.sources_pruned.append(source)
    unchanged_ids = {p.id for p in passages} - {p.id for s in plan.sources for p in s.new} \
        - {p.id for p in plan.loose}
    report.triples_unchanged += count_triples_of(store, sorted(unchanged_ids))
    store.maintain()  # derived caches (the embedded store's ANN) once per run, not per batch
    report.seconds["passages"] = time.perf_counter() - started
    return plan


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
    store.maintain()
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
    (the CLI's progress callbacks). An interrupt (Ctrl-C) cancels it and waits for its
    cleanup (extraction writes what finished) before it is raised here."""
    loop = _shared_loop()
    context = contextvars.copy_context()
    outcome: concurrent.futures.Future[T] = concurrent.futures.Future()
    tasks: list[asyncio.Task[T]] = []

    def finished(task: asyncio.Task[T]) -> None:
        if task.cancelled():
            outcome.set_exception(asyncio.CancelledError())
        elif task.exception() is not None:
            outcome.set_exception(task.exception())  # type: ignore[arg-type]
        else:
            outcome.set_result(task.result())

    def start() -> None:
        task = context.run(loop.create_task, coroutine)  # the task runs in ``context``
        tasks.append(task)
        task.add_done_callback(finished)

    loop.call_soon_threadsafe(start)
    try:
        return outcome.result()
    except BaseException:
        if not outcome.done():
            loop.call_soon_threadsafe(lambda: tasks[0].cancel())
            concurrent.futures.wait([outcome])
        raise


@dataclass(frozen=True)
class DeleteResult:
    """What a delete removed, or with ``dry_run`` would remove.

    Attributes:
        passages: The passages (with their text and source) deleted, or that would be.
        triples: How many triples went (or would go) with them.
        triples_by_passage: That count per passage id.
        unknown_ids: Ids asked for that are not stored.
        source: The ``source`` asked for, as given.
        source_matched: Whether any stored passage has that source (None: none asked).
        similar_sources: When ``source`` matched nothing: stored sources with the same file
            name (what was probably meant).
        dry_run: True when nothing was deleted.
        sources: The stored sources ``source`` matched (a file's one name, a folder's files).
    """

    passages: list[Passage]
    triples: int = 0
    triples_by_passage: dict[str, int] = field(default_factory=dict)
    unknown_ids: list[str] = field(default_factory=list)
    source: str | None = None
    source_matched: bool | None = None
    similar_sources: list[str] = field(default_factory=list)
    dry_run: bool = False
    sources: list[str] = field(default_factory=list)

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


def source_names(store: Store, source: str) -> list[str]:
    """The stored sources ``source`` names, however it is typed: the name as given (a
    caller's own id, a URL), and for a path its :func:`~gear_agent.ingest.corpus.canonical_source`
    from this working folder; each with every file under it when it is a folder, and the
    relative forms older indexes stored (:class:`SourceNames`).

    Example:
        >>> source_names(store, "./docs")  # doctest: +SKIP
        ['/home/me/docs/a.txt', '/home/me/docs/sub/b.md']
    """
    from gear_agent.ingest.corpus import canonical_source, is_path_like

    names = SourceNames(store)
    found = names.under(source)
    if is_path_like(source):
        found += names.under(canonical_source(source))
    return list(dict.fromkeys(found))


def delete_passages(
    store: Store, ids: Sequence[str] = (), *, source: str | None = None, dry_run: bool = False
) -> DeleteResult:
    """Delete passages by id and/or every passage of a ``source`` (a file however named,
    or every file under a folder: :func:`source_names`), with their triples and graph
    edges; with ``dry_run``, only say what would go.

    Example:
        >>> delete_passages(store, source="reports/2024/q1.json", dry_run=True).ids  # doctest: +SKIP
        ['p-...', 'p-...']
    """
    wanted = list(dict.fromkeys(ids))
    matched, similar, matched_sources = None, [], []
    if source is not None:
        matched_sources = source_names(store, source)
        seen = set(wanted)
        for name in matched_sources:
            found = [i for i in store.passage_ids_of_source(name) if i not in seen]
            seen.update(found)
            wanted.extend(found)
        matched = bool(matched_sources)
        if not matched:
            similar = store.sources_like(source)
    passages = store.get_passages(wanted)
    stored = {p.id for p in passages}
    unknown = [i for i in dict.fromkeys(ids) if i not in stored]
    counts = {p.id: len(store.triples_of_passage(p.id)) for p in passages}
    if passages and not dry_run:
        gone = set(store.delete_passages([p.id for p in passages]))
        passages = [p for p in passages if p.id in gone]
    counts = {p.id: counts[p.id] for p in passages}
    return DeleteResult(passages, sum(counts.values()), counts, unknown, source, matched, similar, dry_run,
                        matched_sources)
