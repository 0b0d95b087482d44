"""Which failed calls are worth repeating, and how long to wait before the next try.

Retried: rate limits (429), request timeouts (408), server errors (5xx), timeouts and
connection errors (openai SDK, langchain-core's provider-neutral ``Model*Error`` types,
httpx or the standard library), empty replies (no text, or no choices at all), and
response bodies that are not JSON (an empty 200, a proxy's error page).
Everything else (bad request, authentication, a bug) fails at once: asking again
gives the same answer.

A server's ``Retry-After`` is honoured by every call of the client, not only the one that
got it (:class:`SharedPause`): concurrent extraction workers that each backed off on their
own would keep hitting a rate limit the server asked them all to wait out.
"""

from __future__ import annotations

import email.utils
import json
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType

from gear_agent.llm.errors import EmptyReplyError


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter.

    Attributes:
        max_retries: Retries after the first attempt (``GEAR_LLM_MAX_RETRIES``).
        base_delay_s: Wait before the first retry; doubles on each further retry.
        max_delay_s: Cap on one backoff wait.
        max_retry_after_s: Cap on a server's ``Retry-After`` wait.
    """

    max_retries: int = 4
    base_delay_s: float = 1.0
    max_delay_s: float = 30.0
    max_retry_after_s: float = 120.0

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")
        if self.base_delay_s < 0 or self.max_delay_s < 0 or self.max_retry_after_s < 0:
            raise ValueError("retry delays must be >= 0")


# Provider-neutral errors of langchain-core >= 1.x (absent from older versions).
_RETRIABLE_MODEL_ERRORS = (
    "ModelRateLimitError",
    "ModelTimeoutError",
    "ModelConnectionError",
    "ModelAPIError",
)
_FATAL_MODEL_ERRORS = (
    "ModelAuthenticationError",
    "ModelPermissionDeniedError",
    "ModelNotFoundError",
)


def _langchain_errors(names: tuple[str, ...]) -> tuple[type[BaseException], ...]:
    from langchain_core import exceptions

    return tuple(t for t in (getattr(exceptions, n, None) for n in names) if isinstance(t, type))


def _status_code(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


def _is_empty_choices(exc: BaseException) -> bool:
    """A reply without choices, as langchain-openai / langchain-core report it."""
    if isinstance(exc, (TypeError, KeyError)) and "'choices'" in str(exc):
        return True  # langchain-openai: "null value for 'choices'" / "missing 'choices' key"
    if isinstance(exc, IndexError):
        # BaseChatModel.invoke indexes generations[0][0]: an empty choices list ends here.
        tb: TracebackType | None = exc.__traceback__
        last = None
        while tb is not None:
            last = tb
            tb = tb.tb_next
        if last is not None:
            code = last.tb_frame.f_code
            filename = code.co_filename.replace("\\", "/")
            return code.co_name in {"invoke", "ainvoke"} and filename.endswith(
                "language_models/chat_models.py"
            )
    return False


def is_retriable(exc: BaseException) -> bool:
    """Whether asking again may succeed: rate limit, timeout, connection, 5xx, empty reply.

    Example:
        >>> is_retriable(TimeoutError()), is_retriable(ValueError("bad prompt"))
        (True, False)
    """
    if isinstance(exc, EmptyReplyError) or _is_empty_choices(exc):
        return True
    if isinstance(exc, (TimeoutError, ConnectionError)):
        return True
    if isinstance(exc, (json.JSONDecodeError, UnicodeDecodeError)):
        # Raised inside the model call, it can only be about the HTTP response's body:
        # the client parses the reply before any of our code sees it (a body that starts
        # with a zero byte is read as UTF-16 or UTF-32 and fails to decode).
        return True
    if isinstance(exc, _langchain_errors(_RETRIABLE_MODEL_ERRORS)):
        return True
    try:
        import openai
    except ImportError:  # pragma: no cover - openai is a core dependency
        openai = None  # type: ignore[assignment]
    if openai is not None:
        if isinstance(
            exc,
            (
                openai.RateLimitError,
                openai.APITimeoutError,
                openai.APIConnectionError,
                openai.InternalServerError,
                openai.APIResponseValidationError,
            ),
        ):
            return True
        if isinstance(exc, openai.APIStatusError):
            status = _status_code(exc)
            return status is not None and (status >= 500 or status in (408, 429))
    try:
        import httpx
    except ImportError:  # pragma: no cover - httpx comes with openai
        return False
    if isinstance(exc, (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)):
        return True
    if isinstance(exc, httpx.HTTPStatusError):
        status = exc.response.status_code
        return status >= 500 or status in (408, 429)
    return False


def is_fatal(exc: BaseException) -> bool:
    """Whether every further call will fail the same way (bad key, no access, unknown model).

    Batch jobs such as triple extraction stop on these instead of failing item by item.
    """
    if isinstance(exc, _langchain_errors(_FATAL_MODEL_ERRORS)):
        return True
    try:
        import openai
    except ImportError:  # pragma: no cover
        return False
    return isinstance(
        exc, (openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError)
    )


def retry_after_s(exc: BaseException) -> float | None:
    """Seconds the server asked to wait (``retry-after-ms`` / ``Retry-After``), if it did."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def backoff_delay(
    retry: int, policy: RetryPolicy, rng: random.Random, retry_after: float | None = None
) -> float:
    """Seconds to wait before retry number ``retry`` (1 for the first retry).

    The server's ``Retry-After`` wins when given (capped at ``max_retry_after_s``).
    Otherwise ``base * 2**(retry-1)`` capped at ``max_delay_s``, with "equal jitter":
    half of it fixed, half drawn uniformly, so parallel callers spread out.

    Example:
        >>> 1.0 <= backoff_delay(2, RetryPolicy(base_delay_s=1.0), random.Random(0)) <= 2.0
        True
    """
    if retry_after is not None:
        return min(retry_after, policy.max_retry_after_s)
    ceiling = min(policy.max_delay_s, policy.base_delay_s * 2.0 ** (retry - 1))
    return ceiling / 2.0 + rng.uniform(0.0, ceiling / 2.0)


class SharedPause:
    """One pause that every call of a client honours: when a server answers a rate limit
    with ``Retry-After``, the calls that start (or retry) before the pause ends wait until
    it ends, instead of each worker backing off on its own and the others running into the
    same limit meanwhile. The latest end wins when pauses overlap. Thread-safe (sync calls
    from threads and async ones share it).

    Args:
        clock: Monotonic seconds (the client's own, so tests can drive it).

    Example:
        >>> now = [10.0]
        >>> pause = SharedPause(lambda: now[0])
        >>> pause.hold(2.0); pause.left()
        2.0
        >>> now[0] = 11.5; pause.left()
        0.5
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._until = 0.0
        self._lock = threading.Lock()

    def hold(self, seconds: float) -> None:
        """Pause every call for ``seconds`` from now (a later end already set is kept)."""
        with self._lock:
            self._until = max(self._until, self._clock() + max(0.0, seconds))

    def left(self) -> float:
        """Seconds until the pause ends (0.0 when there is none)."""
        return self.seen()[1]

    @property
    def until(self) -> float:
        """The pause's end in clock time (0.0 before any pause); reads no clock."""
        return self._until

    def seen(self) -> tuple[float, float]:
        """The pause's end (clock time; 0.0 before any) and the seconds left until it, read
        together: a call that waits for them remembers the end, and waits again only for a
        pause that ends later. Before any pause the clock is not read."""
        with self._lock:
            if self._until <= 0.0:
                return 0.0, 0.0
            return self._until, max(0.0, self._until - self._clock())
