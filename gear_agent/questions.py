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
    if any("\ud800" <= char <= "\udfff" for char in text):
        raise QuestionError("the question is not valid text (it holds bytes that are not UTF-8)")
    if not text:
        raise QuestionError("the question is empty; ask something, e.g. 'Who founded Rome?'")
    if len(text) > max_chars:
        raise QuestionError(
            f"the question is {len(text)} characters long; the limit is {max_chars} "
            "(raise GEAR_MAX_QUESTION_CHARS to allow longer ones)"
        )
    return text


class RunOptionError(QuestionError):
    """A per-run option (``max_iterations``, ``top_k``, ``deadline_s``) with a value that
    cannot be used; the message names the option and the allowed range."""


def check_run_option(
    name: str, value: object, low: float, high: float | None = None, *, integer: bool = True
) -> int | float:
    """A per-run option as a number in ``[low, high]``; a numeric string (``"3"``) is
    accepted, anything else raises :class:`RunOptionError` with a one-line message.

    Example:
        >>> check_run_option("max_iterations", "3", 1, 16)
        3
        >>> check_run_option("top_k", 0, 1)  # doctest: +IGNORE_EXCEPTION_DETAIL
        Traceback (most recent call last):
        gear_agent.questions.RunOptionError: top_k must be at least 1, got 0
    """
    kind = "a whole number" if integer else "a number"
    number: int | float
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise RunOptionError(f"{name} must be {kind}, got {type(value).__name__}")
    try:
        if isinstance(value, str):
            number = int(value.strip()) if integer else float(value)
        else:
            number = value if integer else float(value)
    except ValueError:
        raise RunOptionError(f"{name} must be {kind}, got {str(value)[:40]!r}") from None
    if integer and isinstance(number, float):
        if not number.is_integer():
            raise RunOptionError(f"{name} must be {kind}, got {number!r}")
        number = int(number)
    if isinstance(number, float) and number != number:  # NaN
        raise RunOptionError(f"{name} must be {kind}, got nan")
    if number < low:
        raise RunOptionError(f"{name} must be at least {low:g}, got {number:g}")
    if high is not None and number > high:
        raise RunOptionError(f"{name} must be at most {high:g}, got {number:g}")
    return number
