"""What an extraction run did, and the warnings a person should read."""

from __future__ import annotations

from dataclasses import dataclass

MOSTLY_EMPTY = 0.5
"""Warn when more than this share of passages yields no triple."""

MOSTLY_MALFORMED = 0.1
"""Warn when more than this share of the triple items in replies is malformed."""

MOSTLY_UNGROUNDED = 0.2
"""Warn when more than this share of the well-formed triples is not found in its passage."""


@dataclass(frozen=True)
class PassageFailure:
    """A passage whose extraction failed; it stays unextracted and is retried next run."""

    passage_id: str
    error: str


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


@dataclass(frozen=True)
class ExtractionSummary:
    """Counts of one :func:`~gear_agent.extraction.extract_triples` run.

    Attributes:
        passages_sent: Passages whose LLM call finished this run (succeeded + failed).
        passages_succeeded: Passages extracted and marked done (possibly with no triple).
        passages_failed: Passages whose call or reply failed; left unextracted.
        passages_skipped: Passages already extracted before this run (not sent).
        passages_without_triples: Succeeded passages that yielded no triple.
        triples_kept: Triples handed to the store.
        malformed_dropped: Triple items left out as malformed (see ``ParsedTriples.dropped``).
        ungrounded_dropped: Triples left out because their subject or object is not found
            in their passage (``GEAR_GROUND_TRIPLES``; see :mod:`gear_agent.text.grounding`).
        ungrounded_examples: Up to five of them, for the report.
        input_tokens: Billed prompt tokens.
        output_tokens: Billed completion tokens.
        cached_replies: Replies served from the response cache (not billed).
        failures: Each failed passage with its error.
        empty_reply_sample: Start of the first reply that yielded no triple, for diagnosis.
        passages_left: Passages not sent because the run's budget was spent (they stay
            unextracted: the next run resumes with them).
        stopped_by_budget: The run stopped at its budget.
    """

    passages_sent: int = 0
    passages_succeeded: int = 0
    passages_failed: int = 0
    passages_skipped: int = 0
    passages_without_triples: int = 0
    triples_kept: int = 0
    malformed_dropped: int = 0
    ungrounded_dropped: int = 0
    ungrounded_examples: tuple[str, ...] = ()
    input_tokens: int = 0
    output_tokens: int = 0
    cached_replies: int = 0
    failures: tuple[PassageFailure, ...] = ()
    empty_reply_sample: str | None = None
    passages_left: int = 0
    stopped_by_budget: bool = False

    def warnings(self) -> list[str]:
        """Loud messages about results that look wrong, most serious first; empty if fine.

        Example:
            >>> ExtractionSummary(passages_sent=40, passages_succeeded=40,
            ...     passages_without_triples=40).warnings()[0][:48]
            'all 40 passages yielded no triples: check the mo'
        """
        found: list[str] = []
        if self.stopped_by_budget:
            found.append(
                f"the extraction budget was spent after {self.input_tokens + self.output_tokens:,} "
                f"tokens: {self.passages_left:,} passages were not sent and stay unextracted; "
                "index again (with a larger budget) to resume"
            )
        if self.passages_failed:
            first = self.failures[0].error if self.failures else "unknown"
            if self.passages_failed == self.passages_sent:
                lead = f"all {_plural(self.passages_failed, 'passage')} failed"
            else:
                lead = f"{self.passages_failed} of {self.passages_sent} passages failed"
            found.append(
                f"{lead}; they stay unextracted and are retried by the next run. "
                f"First error: {first}"
            )
        done, empty = self.passages_succeeded, self.passages_without_triples
        sample = (
            f" (first such reply: {self.empty_reply_sample!r})" if self.empty_reply_sample else ""
        )
        if done and empty == done:
            found.append(
                f"all {_plural(done, 'passage')} yielded no triples: check the model/prompt{sample}"
            )
        elif done and empty / done > MOSTLY_EMPTY:
            found.append(
                f"{empty} of {done} passages yielded no triples: check the model/prompt{sample}"
            )
        items = self.triples_kept + self.malformed_dropped
        if items and self.malformed_dropped / items > MOSTLY_MALFORMED:
            found.append(
                f"{self.malformed_dropped} of {items} triple items in the replies were malformed "
                "(not three non-empty parts) and dropped: the model does not follow the "
                "extraction prompt's format"
            )
        grounded = self.triples_kept + self.ungrounded_dropped
        if grounded and self.ungrounded_dropped / grounded > MOSTLY_UNGROUNDED:
            example = f" (e.g. {self.ungrounded_examples[0]})" if self.ungrounded_examples else ""
            found.append(
                f"{self.ungrounded_dropped} of {grounded} triples were not found in their passage "
                f"and dropped{example}: the model invents or rewrites facts, or a passage "
                "carries instructions; GEAR_GROUND_TRIPLES=false keeps them"
            )
        return found
