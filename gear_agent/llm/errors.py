"""The errors the LLM layer raises; each message says what failed and what to do."""

from __future__ import annotations

from gear_agent.errors import GearError


class LLMError(GearError, RuntimeError):
    """Base class of every error raised by :mod:`gear_agent.llm`."""


class LLMConfigError(LLMError):
    """The chat model cannot be built from the current settings and environment."""


class EmptyReplyError(LLMError):
    """The model answered with no text (empty content or no choices); worth retrying."""


class LLMCallError(LLMError):
    """A chat-model call failed for good: retries are spent or the error is not retriable.

    Attributes:
        model: Name of the chat model that was called.
        node: The graph node or pipeline step that made the call.
        attempts: How many times the call was tried.
        last_error: The exception of the last attempt (also ``__cause__``).
        retriable: Whether ``last_error`` is of a kind that is retried (rate limit,
            timeout, connection, 5xx, empty reply); False means it failed at once.
        endpoint: The server's base URL when one was configured (OPENAI_BASE_URL), so an
            unreachable or failing server is named; None for the provider's default.
    """

    def __init__(
        self,
        *,
        model: str,
        node: str,
        attempts: int,
        last_error: BaseException,
        retriable: bool,
        endpoint: str | None = None,
    ) -> None:
        self.model = model
        self.endpoint = endpoint
        self.node = node
        self.attempts = attempts
        self.last_error = last_error
        self.retriable = retriable
        what = describe_call_error(last_error)
        if _refused(last_error):
            hint = ("nothing answers there: start the model server, or point OPENAI_BASE_URL "
                    "at the one that runs")
        elif retriable:
            hint = "retries spent; raise GEAR_LLM_MAX_RETRIES or check the server's load"
        else:
            hint = "not retried: this error does not go away by asking again"
        plural = "attempt" if attempts == 1 else "attempts"
        where = f", endpoint={endpoint!r}" if endpoint else ""
        super().__init__(
            f"LLM call failed (model={model!r}, node={node!r}{where}) after {attempts} {plural}: "
            f"{what} ({hint})"
        )


def _refused(error: BaseException | None) -> bool:
    """Whether ``error`` (or one it was raised from) is a refused or failed connect: no
    server listens at the address, so retrying or waiting longer cannot help."""
    seen = 0
    while error is not None and seen < 8:
        if isinstance(error, ConnectionRefusedError) or type(error).__name__ == "ConnectError":
            return True
        error = error.__cause__ or error.__context__
        seen += 1
    return False


class ReplyFormatError(LLMError):
    """The model's replies are not the JSON a prompt asks for, and the request asked for
    none in any other way (``GEAR_LLM_RESPONSE_FORMAT=text``): a model that ignores the
    prompt's JSON needs the server to constrain its replies; the message names the setting."""


class LLMDeadlineError(LLMCallError):
    """A call stopped because the run's time budget (``GEAR_DEADLINE_S``) is spent.

    Raised before an attempt when no time is left, when an attempt outlives the budget
    (the whole call is cut, not one read), and when the next backoff or ``Retry-After``
    wait would end past it. ``last_error`` is the error of the last attempt, or a
    ``TimeoutError`` when the budget ran out during one.
    """

    def __init__(
        self,
        *,
        model: str,
        node: str,
        attempts: int,
        budget_s: float,
        last_error: BaseException | None = None,
        endpoint: str | None = None,
    ) -> None:
        self.budget_s = budget_s
        cause = last_error or TimeoutError(f"no time left of the {budget_s:.1f} s budget")
        super().__init__(
            model=model, node=node, attempts=attempts, last_error=cause, retriable=True,
            endpoint=endpoint,
        )
        plural = "attempt" if attempts == 1 else "attempts"
        self.args = (
            f"LLM call stopped (model={model!r}, node={node!r}): the run's deadline is spent "
            f"({budget_s:.1f} s were left for this call, {attempts} {plural}; last: "
            f"{type(cause).__name__}: {cause}); raise GEAR_DEADLINE_S or check the server",
        )

    def __str__(self) -> str:
        return str(self.args[0])


def describe_call_error(error: BaseException) -> str:
    """What went wrong in one line: a reply body that is not JSON (which Python's reader
    reports as a ``UnicodeDecodeError`` of ``utf-16`` or ``utf-32`` when it starts with a
    zero byte) is named as such, anything else as ``Type: message``.

    Example:
        >>> describe_call_error(ValueError("bad"))
        'ValueError: bad'
    """
    import json

    if isinstance(error, (json.JSONDecodeError, UnicodeDecodeError)):
        return (f"the endpoint replied with a body that is not JSON ({type(error).__name__}); "
                "check that the URL is an OpenAI-compatible API (it usually ends in /v1)")
    return f"{type(error).__name__}: {error}"
