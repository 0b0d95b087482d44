"""The one check every door (CLI, Python API, server, retrievers) applies to a question."""

from __future__ import annotations

from gear_agent.errors import GearError


class QuestionError(GearError, ValueError):
    """A question that cannot be asked (not text, empty, too long).

    A ``ValueError`` too, so the LangGraph server passes its message to clients.
    """


def check_question(question: object, max_chars: int) -> str:
    """The question, stripped; raises :class:`QuestionError` when it is empty, not text, or too long.

    Example:
        >>> check_question("  Who founded Rome? ", 2000)
        'Who founded Rome?'
    """
    if not isinstance(question, str):
        raise QuestionError(f"the question must be text, got {type(question).__name__}")
    text = question.strip()
    if not text:
        raise QuestionError("the question is empty; ask something, e.g. 'Who founded Rome?'")
    if len(text) > max_chars:
        raise QuestionError(
            f"the question is {len(text)} characters long; the limit is {max_chars} "
            "(raise GEAR_MAX_QUESTION_CHARS to allow longer ones)"
        )
    return text
