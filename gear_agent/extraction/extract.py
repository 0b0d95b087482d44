"""Extract triples from the passages that have none yet, with an LLM (paper, section 3.1).

Resumable: only ``store.passages.unextracted()`` are sent, and finished passages are
written (``add_triples`` then ``mark_extracted``) once ``commit_every`` passages are
waiting or ``commit_seconds`` have passed since the last write, whichever comes first,
and when the run stops for any reason. An interrupted run loses at most the calls in
flight; a killed one at most the last ``commit_seconds`` of replies. Few large writes
keep the bytes an index writes close to its size (one small write per handful of
passages rewrote the same database pages over and over). A passage whose call fails after retries, or whose reply cannot be read, is
recorded in the summary and left unextracted for the next run; only errors that
would fail every call (bad API key, unknown model) stop the run.
"""

from __future__ import annotations

import asyncio
import time
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from gear_agent.errors import GearWarning
from gear_agent.extraction.budget import ExtractionBudget
from gear_agent.extraction.summary import ExtractionSummary, PassageFailure
from gear_agent.ids import triple_id
from gear_agent.llm.client import LLMClient, LLMReply
from gear_agent.llm.errors import LLMCallError, ReplyFormatError
from gear_agent.llm.response_format import EXTRACTION_REPLY
from gear_agent.llm.retry import is_fatal
from gear_agent.parsing.errors import ParseError
from gear_agent.parsing.extraction_reply import ExtractionReply, parse_extraction_reply
from gear_agent.prompts import Prompt, load_prompt
from gear_agent.store.base import Store
from gear_agent.text.grounding import Grounding
from gear_agent.types import Passage, ResponseFormatMode, Triple

ProgressCallback = Callable[[int, int], None]

COMMIT_EVERY = 2048
"""Finished passages buffered before they are written (about 18k triples)."""
COMMIT_SECONDS = 10.0
"""Longest time finished passages wait before they are written anyway."""
"""Called as ``progress(done, total)`` after each passage, succeeded or failed."""

_SAMPLE_CHARS = 200
CONSTRAINED_MODES: tuple[ResponseFormatMode, ...] = ("json_schema", "json_object_schema")
"""The ways of asking a server to constrain replies that a run tries, in this order, when a
model asked for JSON by the prompt alone answers unreadably before any readable reply:
OpenAI's structured outputs (OpenAI, vLLM, llama.cpp's ``llama-server``, Ollama), then the
form llama-cpp-python's server reads."""


@dataclass
class _Outcome:
    passage: Passage
    reply: LLMReply | None = None
    parsed: ExtractionReply | None = None
    error: str | None = None


@dataclass
class _Run:
    """Counters and the write buffer of one run."""

    store: Store
    commit_every: int
    commit_seconds: float = COMMIT_SECONDS
    ground: bool = True
    succeeded: int = 0
    failed: int = 0
    without_triples: int = 0
    triples_kept: int = 0
    dropped: int = 0
    ungrounded: int = 0
    ungrounded_examples: list[str] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    cached: int = 0
    failures: list[PassageFailure] = field(default_factory=list)
    empty_sample: str | None = None
    pending_triples: list[Triple] = field(default_factory=list)
    pending_ids: list[str] = field(default_factory=list)
    last_write: float = field(default_factory=time.monotonic)

    def take(self, outcome: _Outcome) -> None:
        reply = outcome.reply
        if reply is not None:
            self.input_tokens += reply.input_tokens
            self.output_tokens += reply.output_tokens
            self.cached += int(reply.cached)
        if outcome.parsed is None:
            self.failed += 1
            self.failures.append(PassageFailure(outcome.passage.id, outcome.error or "unknown"))
            return
        passage = outcome.passage
        triples = {}
        source = Grounding.of(passage.title, passage.text) if self.ground else None
        for subject, predicate, obj in outcome.parsed.triples:
            if source is not None and not source.grounds(subject, obj):
                self.ungrounded += 1
                if len(self.ungrounded_examples) < 5:
                    self.ungrounded_examples.append(repr((subject, predicate, obj))[:160])
                continue
            tid = triple_id(passage.id, subject, predicate, obj)
            triples.setdefault(tid, Triple(tid, subject, predicate, obj, passage.id))
        self.succeeded += 1
        self.dropped += len(outcome.parsed.dropped)
        self.triples_kept += len(triples)
        if not triples:
            self.without_triples += 1
            if self.empty_sample is None and reply is not None:
                self.empty_sample = reply.text.strip()[:_SAMPLE_CHARS]
        self.pending_triples.extend(triples.values())
        self.pending_ids.append(passage.id)
        if (len(self.pending_ids) >= self.commit_every
                or time.monotonic() - self.last_write >= self.commit_seconds):
            self.flush()

    def flush(self) -> None:
        """Write finished passages: triples first, then the extracted marks."""
        triples, ids = self.pending_triples, self.pending_ids
        self.pending_triples, self.pending_ids = [], []
        self.last_write = time.monotonic()
        if triples:
            self.store.triples.add(triples)
        if ids:
            self.store.passages.mark_extracted(ids)

    def summary(self, skipped: int, left: int = 0, stopped_by_budget: bool = False) -> ExtractionSummary:
        return ExtractionSummary(
            passages_left=left,
            stopped_by_budget=stopped_by_budget,
            passages_sent=self.succeeded + self.failed,
            passages_succeeded=self.succeeded,
            passages_failed=self.failed,
            passages_skipped=skipped,
            passages_without_triples=self.without_triples,
            triples_kept=self.triples_kept,
            malformed_dropped=self.dropped,
            ungrounded_dropped=self.ungrounded,
            ungrounded_examples=tuple(self.ungrounded_examples),
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cached_replies=self.cached,
            failures=tuple(self.failures),
            empty_reply_sample=self.empty_sample,
        )


class _FormatSwitch:
    """How the run asks for JSON, switched once if the model ignores the prompt's JSON.

    Under ``GEAR_LLM_RESPONSE_FORMAT=text`` the first unreadable reply before any readable
    one is asked again in each of :data:`CONSTRAINED_MODES`; the first mode whose reply
    reads is used for the rest of the run (with one warning naming the setting), and if
    none does the run stops at once with a :class:`ReplyFormatError` naming it. Once a reply
    has read, an unreadable one is a slip and is only recorded as a failed passage.
    """

    def __init__(self, llm: LLMClient) -> None:
        self.probing = llm.response_format_mode == "text"
        self.mode: ResponseFormatMode | None = None
        self.lock = asyncio.Lock()
        self.failed: ReplyFormatError | None = None

    async def reask(
        self, ask: Callable[[ResponseFormatMode], Awaitable[LLMReply]], error: str | None
    ) -> tuple[LLMReply, ExtractionReply] | None:
        """Settle the run's mode after an unreadable first reply; the passage's reply and
        parse in that mode, or None when the run is not probing (any more)."""
        async with self.lock:
            if self.failed is not None:
                raise self.failed
            if self.mode is None and self.probing:
                for mode in CONSTRAINED_MODES:
                    try:
                        reply = await ask(mode)
                        parsed = parse_extraction_reply(reply.text)
                    except (LLMCallError, ParseError):
                        continue
                    self.mode = mode
                    warnings.warn(
                        f"the model ignored the JSON its extraction prompt asks for, so this run "
                        f"asks the server to constrain replies (GEAR_LLM_RESPONSE_FORMAT={mode}); "
                        "set it to skip this probe next time", GearWarning, stacklevel=2,
                    )
                    return reply, parsed
                self.failed = ReplyFormatError(
                    f"the model's extraction replies are not the JSON the prompt asks for "
                    f"({error}), and the server took no constrained format "
                    f"({', '.join(CONSTRAINED_MODES)}) either: set GEAR_LLM_RESPONSE_FORMAT to "
                    "the form your server reads (json_object_schema for llama-cpp-python, "
                    "json_schema for vLLM, llama-server, Ollama, OpenAI) and index again; "
                    "passages already extracted are kept"
                )
                raise self.failed
        if self.mode is None:
            return None
        reply = await ask(self.mode)
        return reply, parse_extraction_reply(reply.text)

    def readable(self) -> None:
        """A reply read: later unreadable ones are the model's slips, not its format."""
        self.probing = False


async def _extract_one(
    passage: Passage, llm: LLMClient, prompt: Prompt, node: str, slots: asyncio.Semaphore,
    switch: _FormatSwitch,
) -> _Outcome:
    """One passage's call and parse; releases its concurrency slot however it ends."""
    text = prompt.format(title=passage.title, passage=passage.text)

    def ask(mode: ResponseFormatMode | None) -> Awaitable[LLMReply]:
        return llm.ainvoke(text, node=node, schema=EXTRACTION_REPLY, response_format_mode=mode)

    try:
        reply = await ask(switch.mode)
        try:
            parsed = parse_extraction_reply(reply.text)
        except ParseError as exc:
            error = f"unreadable reply: {exc}"
            if not switch.probing:
                return _Outcome(passage, reply, None, error)
            try:
                again = await switch.reask(ask, error)
            except ParseError as exc_again:
                return _Outcome(passage, reply, None, f"unreadable reply: {exc_again}")
            if again is None:
                return _Outcome(passage, reply, None, error)
            reply, parsed = again
        switch.readable()
        return _Outcome(passage, reply, parsed)
    except LLMCallError as exc:
        if is_fatal(exc.last_error):
            raise
        return _Outcome(passage, None, None, str(exc))
    finally:
        slots.release()


async def extract_triples(
    store: Store,
    llm: LLMClient,
    *,
    concurrency: int = 4,
    progress: ProgressCallback | None = None,
    commit_every: int = COMMIT_EVERY,
    commit_seconds: float = COMMIT_SECONDS,
    prompt: Prompt | None = None,
    node: str = "extraction",
    ground: bool = True,
    budget: ExtractionBudget | None = None,
) -> ExtractionSummary:
    """Extract and store triples for every passage not extracted yet.

    Store writes happen in the event loop's thread (stores need not be thread-safe).

    Args:
        store: Where passages come from and triples go.
        llm: The client to call (retries, usage and cache are its business).
        concurrency: LLM calls in flight at once (``GEAR_LLM_CONCURRENCY``).
        progress: Called as ``progress(done, total)`` after each passage.
        commit_every: Finished passages buffered before they are written.
        commit_seconds: Longest wait before buffered passages are written anyway.
        prompt: The extraction template; the built-in ``extraction`` prompt when None.
        node: Name the calls are accounted under.
        ground: Drop triples whose subject or object is not found in their passage
            (counted in ``ungrounded_dropped``; ``GEAR_GROUND_TRIPLES``).
        budget: Stop sending passages once the run's billed tokens (or their price) reach
            it; the calls in flight finish and are kept, the passages not sent stay
            unextracted for the next run (``passages_left``, ``stopped_by_budget``).

    Returns:
        The run's counts; read :meth:`ExtractionSummary.warnings`.

    Raises:
        ValueError: ``concurrency`` or ``commit_every`` is below 1, or ``commit_seconds``
            is negative.
        LLMCallError: An error that every call would hit (authentication, permission,
            unknown model); finished work is written before it is raised.

    Example:
        >>> summary = asyncio.run(extract_triples(store, llm, concurrency=8))  # doctest: +SKIP
        >>> summary.warnings()  # doctest: +SKIP
        []
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    if commit_every < 1:
        raise ValueError(f"commit_every must be at least 1, got {commit_every}")
    if commit_seconds < 0:
        raise ValueError(f"commit_seconds must not be negative, got {commit_seconds}")
    template = prompt or load_prompt("extraction")
    passages = store.passages.unextracted()
    skipped = max(0, store.passages.count() - len(passages))
    run = _Run(store, commit_every, commit_seconds, ground)
    switch = _FormatSwitch(llm)
    slots = asyncio.Semaphore(concurrency)
    pending: set[asyncio.Task[_Outcome]] = set()
    total, done = len(passages), 0

    def take(task: asyncio.Task[_Outcome]) -> None:
        nonlocal done
        run.take(task.result())
        done += 1
        if progress is not None:
            progress(done, total)

    writing = False
    sent = 0
    try:
        for passage in passages:
            await slots.acquire()
            for task in [t for t in pending if t.done()]:
                pending.discard(task)
                take(task)
            if budget is not None and budget.spent(run.input_tokens, run.output_tokens):
                slots.release()
                break
            sent += 1
            pending.add(asyncio.create_task(_extract_one(passage, llm, template, node, slots, switch)))
        while pending:
            finished, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in finished:
                pending.discard(task)  # the rest stay pending until taken, even on error
                take(task)
        writing = True
        run.flush()
    except BaseException:
        finished_ok = [t for t in pending if t.done() and not t.cancelled() and not t.exception()]
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        if not writing:
            for task in finished_ok:
                run.take(task.result())
            run.flush()  # keep the finished work of an interrupted run
        raise
    return run.summary(skipped, left=len(passages) - sent, stopped_by_budget=sent < len(passages))
