"""The one check every door (CLI, Python API, server, retrievers) applies to a question."""

from __future__ import annotations

from gear_agent.errors import GearError


def check_question(question: object, max_chars: int) -> str:
    """The question, stripped; raises :class:`GearError` when it is empty, not text, or too long.

    Example:
        >>> check_question("  Who founded Rome? ", 2000)
        'Who founded Rome?'
    """
    if not isinstance(question, str):
        raise GearError(f"the question must be text, got {type(question).__name__}")
    text = question.strip()
    if not text:
        raise GearError("the question is empty; ask something, e.g. 'Who founded Rome?'")
    if len(text) > max_chars:
        raise GearError(
            f"the question is {len(text)} characters long; the limit is {max_chars} "
            "(raise GEAR_MAX_QUESTION_CHARS to allow longer ones)"
        )
    return text
