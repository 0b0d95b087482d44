"""Sources own their passages: sync a source with what it holds now, prune the files gone from
a folder, delete by source however a file is named.

A source is a file (one canonical name: :func:`~gear_agent.ingest.corpus.canonical_source`),
a folder (every file under it), or a name a caller gives (a record's ``source``). Passage ids
are content hashes, so indexing a source again tells unchanged passages (kept untouched) from
edited ones (replaced, with their triples, in one commit) without comparing texts.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from gear_agent.filters import MAX_VALUES, Condition, FilterError, Where
from gear_agent.indexing import PASSAGE_BATCH, IndexReport, Progress
from gear_agent.store.base import Store
from gear_agent.types import Passage


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


class SyncCounts(NamedTuple):
    """Passages a sync adds as ``new``, ``replaced`` (an edited chunk's new version),
    ``removed`` (no new version) and keeps ``unchanged``; sources ``pruned``."""

    new: int
    replaced: int
    removed: int
    unchanged: int
    pruned: int


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

    def counts(self) -> SyncCounts:
        """The counts the run would report (loose passages counted as new)."""
        replaced = sum(s.replaced for s in self.sources)
        return SyncCounts(
            new=sum(len(s.new) for s in self.sources) - replaced + len(self.loose),
            replaced=replaced,
            removed=sum(len(s.stale) for s in self.sources) - replaced
            + sum(len(ids) for ids in self.pruned.values()),
            unchanged=sum(s.unchanged for s in self.sources) + self.loose_existing,
            pruned=len(self.pruned),
        )


def _noop(stage: str, done: int, total: int) -> None:
    return None


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
            self._legacy = [s for s in self.store.passages.sources(relative=True)
                            if "://" not in s and s.lower().endswith(LEGACY_SUFFIXES)]
        return self._legacy

    def of_file(self, source: str) -> list[str]:
        """Names of this one source: itself and legacy forms of exactly it."""
        legacy = [s for s in self.legacy() if source.startswith("/") and source.endswith("/" + s)]
        return list(dict.fromkeys([source, *legacy]))

    def under(self, source: str) -> list[str]:
        """Names of ``source`` and of every file under it, legacy forms included."""
        from gear_agent.ingest.corpus import legacy_matches

        found = self.store.passages.sources(under=source)
        if source.startswith("/"):
            found += [s for s in self.legacy() if legacy_matches(s, source)]
        return list(dict.fromkeys(found))


COUNT_IDS = 200
"""Ids per filtered count (SQLite's expression depth is 1,000; a filter's ``$in`` takes 1,024)."""


def count_triples_of(store: Store, passage_ids: Sequence[str]) -> int:
    """How many triples the passages ``passage_ids`` hold (a filtered count per
    :data:`COUNT_IDS` ids: one request each on a remote backend, not one per passage)."""
    ids = list(dict.fromkeys(passage_ids))
    return sum(store.triples.count(where={"id": {"$in": ids[at : at + COUNT_IDS]}})
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
        stored.update(p.id for p in store.passages.get(ids[start : start + 4096]))
    by_source: dict[str, list[Passage]] = {}
    for passage in passages:
        by_source.setdefault(passage.source, []).append(passage)
    names = SourceNames(store)
    owned = list(dict.fromkeys(sources))
    names_of = {source: names.of_file(source) for source in owned}
    stored_ids = store.passages.ids_of_sources([n for found in names_of.values() for n in found])
    synced, claimed = [], set()
    for source in owned:
        held = by_source.get(source, [])
        source_names = names_of[source]
        claimed.update(source_names)
        old = [i for name in source_names for i in stored_ids[name]]
        stale = list(dict.fromkeys(i for i in old if i not in read_ids))
        new = [p for p in held if p.id not in stored]
        synced.append(SourceSync(source, new, stale, len(held) - len(new)))
    owned_set = set(owned)
    others = [p for p in passages if p.source not in owned_set]
    loose = [p for p in others if p.id not in stored]
    pruned: dict[str, list[str]] = {}
    for folder in prune:
        left = [n for n in names.under(folder) if n not in owned_set and n not in claimed and n not in pruned]
        for name, ids_now in store.passages.ids_of_sources(left).items():
            gone = [i for i in ids_now if i not in read_ids]
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
    sources per commit, :meth:`Passages.replace`; on Elasticsearch published as one
    generation, :mod:`gear_agent.store.elasticsearch.sync`), so a reader, or an index reopened
    after a crash, sees a source's old version or its new one, never both and never
    neither. Unchanged passages are kept untouched: not embedded, not extracted again (new
    ones are left unextracted for the extraction that follows). Sources gone from a
    ``prune`` folder are deleted last. Counts go to ``report`` (see :class:`IndexReport`).
    A commit closes once its sources hold ``batch`` new or stale passages (a source is
    never split across commits).

    Example:
        >>> read = read_items(Path("docs"))  # doctest: +SKIP
        >>> sync_passages(store, read.passages, read.sources, IndexReport()).counts()  # doctest: +SKIP
        SyncCounts(new=0, replaced=1, removed=0, unchanged=41, pruned=0)
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
        result = store.passages.replace(stale, new)
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
        result = store.passages.add(plan.loose[start : start + PASSAGE_BATCH])
        report.passages_added += len(result.added)
        report.passages_existing += len(result.existing)
        done += len(result.added) + len(result.existing)
        progress("passages", done, total)
    report.passages_existing += plan.loose_existing
    for source, ids in plan.pruned.items():  # one commit per source gone
        report.triples_removed += count_triples_of(store, ids)
        report.passages_removed += len(store.passages.remove(ids))
        report.sources_pruned.append(source)
    unchanged_ids = {p.id for p in passages} - {p.id for s in plan.sources for p in s.new} \
        - {p.id for p in plan.loose}
    report.triples_unchanged += count_triples_of(store, sorted(unchanged_ids))
    store.maintain(progress)  # derived caches (the embedded store's ANN) once per run, not per batch
    report.seconds["passages"] = time.perf_counter() - started
    return plan


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
            found = [i for i in store.passages.ids_of_source(name) if i not in seen]
            seen.update(found)
            wanted.extend(found)
        matched = bool(matched_sources)
        if not matched:
            similar = store.passages.sources_like(source)
    passages = store.passages.get(wanted)
    stored = {p.id for p in passages}
    unknown = [i for i in dict.fromkeys(ids) if i not in stored]
    counts = {p.id: len(store.triples.of_passage(p.id)) for p in passages}
    if passages and not dry_run:
        gone = set(store.passages.remove([p.id for p in passages]))
        passages = [p for p in passages if p.id in gone]
    counts = {p.id: counts[p.id] for p in passages}
    return DeleteResult(passages, sum(counts.values()), counts, unknown, source, matched, similar, dry_run,
                        matched_sources)


def path_aware_where(where: Where | None) -> Where | None:
    """``where`` with its ``source`` tests made path-aware: a value that names a file or a
    folder (:func:`~gear_agent.ingest.corpus.is_path_like`: relative, ``./``, absolute, a
    symlink, ``~``) also matches its canonical form
    (:func:`~gear_agent.ingest.corpus.canonical_source`), and a source test matches a file
    or every file under a folder, so ``source=docs`` run from the folder above ``docs``
    finds ``/home/me/docs/a.txt`` and ``/home/me/docs/sub/b.md``, as ``gear delete
    --source docs`` does. The value as typed is kept too (a caller's own id such as a URL;
    the relative sources older indexes stored, typed from the folder they were indexed
    in); ``=`` becomes ``$in`` and ``!=`` ``$nin`` over the two. Paths resolve against
    this process's working folder; no request is made. Other keys and operators are left
    as they are.

    Raises:
        FilterError: a ``$in`` or ``$nin`` would name more than a filter takes (1,024).

    Example:
        >>> from gear_agent.filters import parse_where
        >>> path_aware_where(parse_where(["source=./docs/"]))  # doctest: +SKIP
        Where(conditions=(Condition(key='source', op='in', value=('./docs/', '/home/me/docs')),))
        >>> str(path_aware_where(parse_where(["source=wiki"])))  # not a path: as given
        'source="wiki"'
    """
    from gear_agent.ingest.corpus import canonical_source, is_path_like

    if where is None:
        return None
    conditions = []
    for condition in where.conditions:
        if condition.key != "source" or condition.op not in ("eq", "ne", "in", "nin"):
            conditions.append(condition)
            continue
        values: list[object] = []
        for value in condition.values():
            values.append(value)
            if isinstance(value, str) and is_path_like(value):
                values.append(canonical_source(value))
        unique = tuple(dict.fromkeys(values))
        if unique == condition.values():
            conditions.append(condition)
            continue
        if len(unique) > MAX_VALUES:
            raise FilterError(f"bad filter {condition}: its paths name {len(unique)} sources; "
                              f"a filter takes at most {MAX_VALUES}")
        op = {"eq": "in", "ne": "nin"}.get(condition.op, condition.op)
        conditions.append(Condition("source", op, unique))  # type: ignore[arg-type]
    return Where(tuple(conditions))
