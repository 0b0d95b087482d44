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
        what = f"{type(last_error).__name__}: {last_error}"
        if retriable:
            hint = "retries spent; raise GEAR_LLM_MAX_RETRIES or check the server's load"
        else:
            hint = "not retried: this error does not go away by asking again"
        plural = "attempt" if attempts == 1 else "attempts"
        where = f", endpoint={endpoint!r}" if endpoint else ""
        super().__init__(
            f"LLM call failed (model={model!r}, node={node!r}{where}) after {attempts} {plural}: "
            f"{what} ({hint})"
        )
