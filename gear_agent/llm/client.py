"""One way to call any LangChain chat model: retries, token accounting, optional cache.

:class:`LLMClient` wraps a chat model (``ChatOpenAI`` from :func:`make_chat_model`,
a fake model in tests, any ``BaseChatModel`` or runnable with ``invoke``/``ainvoke``)
and returns an :class:`LLMReply` with the text and the tokens it cost.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import random
import threading
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig

from gear_agent.llm.cache import CachedReply, ResponseCache, cache_key
from gear_agent.llm.errors import EmptyReplyError, LLMCallError, LLMDeadlineError
from gear_agent.llm.messages import PromptInput, content_text, to_messages
from gear_agent.llm.reply import LLMReply
from gear_agent.llm.response_format import (
    ReplySchema,
    ResponseFormatMode,
    check_mode,
    response_format,
)
from gear_agent.llm.retry import (
    RetryPolicy,
    SharedPause,
    backoff_delay,
    is_retriable,
    retry_after_s,
)
from gear_agent.llm.tokens import count_message_tokens, count_tokens, reported_usage
from gear_agent.llm.usage import TokenUsage

if TYPE_CHECKING:
    from gear_agent.config import LLMSettings

logger = logging.getLogger(__name__)


def _unwrap(model: Any) -> Any:
    """The chat model inside ``model.bind(...)`` / configurable wrappers."""
    seen = 0
    while hasattr(model, "bound") and seen < 8:
        model = model.bound
        seen += 1
    return model


def _model_name(model: Any) -> str:
    inner = _unwrap(model)
    for attribute in ("model_name", "model", "model_id"):
        value = getattr(inner, attribute, None)
        if isinstance(value, str) and value:
            return value
    llm_type = getattr(inner, "_llm_type", None)
    return llm_type if isinstance(llm_type, str) else type(inner).__name__


def _endpoint(model: Any) -> str | None:
    """The base URL an OpenAI-compatible model was pointed at, if any."""
    inner = _unwrap(model)
    for attribute in ("openai_api_base", "base_url"):
        value = getattr(inner, attribute, None)
        if isinstance(value, str) and value:
            return value
    return None


def _number(model: Any, attribute: str) -> Any:
    value = getattr(_unwrap(model), attribute, None)
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


class _OutOfTime(Exception):
    """An attempt was cut because the call's deadline came (internal)."""


def _bounded(call: Callable[[], Any], seconds: float | None) -> Any:
    """``call()``, given up after ``seconds`` of total time (None: no bound).

    A blocking HTTP call cannot be cancelled from outside, so it runs in a daemon thread
    (with the caller's context variables, so callbacks and tracing follow) and is
    abandoned when time is up; its own request timeout ends it later.
    """
    if seconds is None:
        return call()
    box: dict[str, Any] = {}
    context = contextvars.copy_context()

    def target() -> None:
        try:
            box["value"] = context.run(call)
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=target, name="gear-llm-call", daemon=True)
    worker.start()
    worker.join(max(seconds, 0.0))
    if worker.is_alive():
        raise _OutOfTime()
    if "error" in box:
        raise box["error"]
    return box["value"]


class LLMClient:
    """Calls a chat model with retries, token accounting and an optional response cache.

    Args:
        model: Any LangChain chat model (or runnable with ``invoke`` and ``ainvoke``).
        model_name: Name used in errors, token counting and cache keys; read from
            the model (``model_name``/``model``) when left out.
        retry: Backoff policy; ``RetryPolicy()`` (4 retries) when left out.
        cache: Response cache; no caching when left out.
        usage: Running total to add to; a fresh one when left out (see :attr:`usage`).
        sleep: Called with the seconds to wait between sync retries (patch in tests).
        async_sleep: Awaited with the seconds to wait between async retries.
        rng: Source of the backoff jitter.
        response_format_mode: How calls that pass a ``schema`` ask for JSON (see
            :mod:`gear_agent.llm.response_format`); ``"text"`` sends nothing extra.
        clock: Monotonic seconds, for deadlines (patch in tests).
        pause: The ``Retry-After`` pause every call honours (:class:`SharedPause`); a new
            one for this client when left out, so all workers of a run share it.

    Example:
        >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
        >>> client = LLMClient(FakeListChatModel(responses=["Paris"]))
        >>> client.invoke("Capital of France?", node="qa").text
        'Paris'
    """

    def __init__(
        self,
        model: Any,
        *,
        model_name: str | None = None,
        retry: RetryPolicy | None = None,
        cache: ResponseCache | None = None,
        usage: TokenUsage | None = None,
        sleep: Callable[[float], None] = time.sleep,
        async_sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: random.Random | None = None,
        response_format_mode: ResponseFormatMode = "text",
        clock: Callable[[], float] = time.monotonic,
        pause: SharedPause | None = None,
    ) -> None:
        self.model = model
        self.response_format_mode = check_mode(response_format_mode)
        self.model_name = model_name or _model_name(model)
        self.endpoint = _endpoint(model)
        self.temperature = _number(model, "temperature")
        self.max_tokens = _number(model, "max_tokens")
        self.retry = retry or RetryPolicy()
        self.cache = cache
        self.usage = usage if usage is not None else TokenUsage()
        self._sleep = sleep
        self._async_sleep = async_sleep
        self._rng = rng or random.Random()
        self._clock = clock
        self.pause = pause or SharedPause(clock)

    @classmethod
    def from_settings(cls, settings: LLMSettings, model: Any | None = None) -> LLMClient:
        """A client configured from settings: the model, retries and cache.

        Args:
            settings: The LLM section of the settings (a ``GearSettings`` is one);
                ``llm_cache_dir`` turns the cache on.
            model: A ready chat model; built with :func:`make_chat_model` when None.

        Raises:
            LLMConfigError: No model given and none can be built from the environment.
        """
        if model is None:
            from gear_agent.llm.factory import make_chat_model

            model = make_chat_model(settings)
        cache = ResponseCache(settings.llm_cache_dir) if settings.llm_cache_dir else None
        return cls(
            model,
            retry=RetryPolicy(max_retries=settings.llm_max_retries),
            cache=cache,
            response_format_mode=settings.llm_response_format,
        )

    # ---- public calls --------------------------------------------------------
    def invoke(
        self,
        prompt: PromptInput,
        *,
        node: str,
        config: RunnableConfig | None = None,
        schema: ReplySchema | None = None,
        deadline_s: float | None = None,
        response_format_mode: ResponseFormatMode | None = None,
    ) -> LLMReply:
        """Send ``prompt`` and return the reply, retrying transient failures.

        Args:
            prompt: A string (one user message), a PromptValue or a list of messages.
            node: Name of the calling node or step; used in usage totals and errors.
            config: LangChain runnable config (callbacks, tags) passed to the model.
            schema: The JSON the prompt asks for; sent as ``response_format`` unless the
                client's mode is ``"text"``.
            deadline_s: Seconds this call may take in all: every attempt, backoff and
                ``Retry-After`` wait; an attempt still running when it ends is abandoned.
                None: only the retry policy bounds it.
            response_format_mode: This call's way of asking for ``schema`` instead of the
                client's own mode (extraction switches to a constrained mode this way when a
                model ignores the prompt's JSON).

        Returns:
            The reply with its token counts.

        Raises:
            LLMDeadlineError: ``deadline_s`` ran out (a subclass of LLMCallError).
            LLMCallError: The call failed for good (message names model, node, attempts).
        """
        messages = to_messages(prompt)
        extra = self._extra(schema, response_format_mode)
        key = self._key(messages, extra)
        hit = self._from_cache(messages, key, node)
        if hit is not None:
            return hit
        end = None if deadline_s is None else self._clock() + deadline_s
        attempt, seen = 0, 0.0
        while True:
            attempt += 1
            wait, seen = self._pause_or_raise(seen, end, deadline_s, attempt, node)
            if wait:
                self._sleep(wait)
            left = self._left_or_raise(end, deadline_s, attempt, node, None)
            try:
                message = _bounded(
                    lambda: self.model.invoke(messages, config=self._config(config, node), **extra),
                    left,
                )
                reply = self._reply(messages, message)
            except _OutOfTime:
                raise self._deadline_error(deadline_s, attempt, node, None) from None
            except Exception as exc:  # classified below: retried, or re-raised as LLMCallError
                delay, seen = self._wait_or_raise(exc, attempt, node, end, deadline_s)
                self._sleep(delay)
                continue
            return self._record(key, node, reply)

    async def ainvoke(
        self,
        prompt: PromptInput,
        *,
        node: str,
        config: RunnableConfig | None = None,
        schema: ReplySchema | None = None,
        deadline_s: float | None = None,
        response_format_mode: ResponseFormatMode | None = None,
    ) -> LLMReply:
        """Async :meth:`invoke`: awaits the model's own ``ainvoke`` (no thread per call);
        an attempt that outlives ``deadline_s`` is cancelled (``asyncio.wait_for``). The
        cache read and the token counting (whose first use reads the tokenizer's rank file)
        run in a worker thread, off the event loop."""
        messages = to_messages(prompt)
        extra = self._extra(schema, response_format_mode)
        key = self._key(messages, extra)
        hit = None if key is None else await asyncio.to_thread(
            self._from_cache, messages, key, node)
        if hit is not None:
            return hit
        end = None if deadline_s is None else self._clock() + deadline_s
        attempt, seen = 0, 0.0
        while True:
            attempt += 1
            wait, seen = self._pause_or_raise(seen, end, deadline_s, attempt, node)
            if wait:
                await self._async_sleep(wait)
            left = self._left_or_raise(end, deadline_s, attempt, node, None)
            call = self.model.ainvoke(messages, config=self._config(config, node), **extra)
            try:
                if left is None:
                    message = await call
                else:
                    message = await asyncio.wait_for(call, left)
                reply = await asyncio.to_thread(self._reply, messages, message)
            except Exception as exc:  # classified below: retried, or re-raised as LLMCallError
                # asyncio.TimeoutError is the builtin TimeoutError from Python 3.11 on only
                timed_out = isinstance(exc, (TimeoutError, asyncio.TimeoutError))
                if end is not None and timed_out and self._clock() >= end:
                    raise self._deadline_error(deadline_s, attempt, node, None) from None
                delay, seen = self._wait_or_raise(exc, attempt, node, end, deadline_s)
                await self._async_sleep(delay)
                continue
            return self._record(key, node, reply)

    # ---- steps shared by invoke and ainvoke ------------------------------------
    def _extra(
        self, schema: ReplySchema | None, mode: ResponseFormatMode | None = None
    ) -> dict[str, Any]:
        """Keyword arguments for the model call: ``response_format`` when one applies."""
        fmt = response_format(check_mode(mode) if mode else self.response_format_mode, schema)
        return {} if fmt is None else {"response_format": fmt}

    def _key(self, messages: list[BaseMessage], extra: dict[str, Any]) -> str | None:
        if self.cache is None:
            return None
        return cache_key(
            self.model_name,
            self.temperature,
            messages,
            self.max_tokens,
            extra.get("response_format"),
        )

    def _counted(self, messages: list[BaseMessage], text: str) -> dict[str, int]:
        """The call's tokens by the model's tokenizer (every call, cached or not)."""
        return {"counted_input": count_message_tokens(messages, self.model_name),
                "counted_output": count_tokens(text, self.model_name)}

    def _from_cache(self, messages: list[BaseMessage], key: str | None,
                    node: str) -> LLMReply | None:
        if key is None or self.cache is None:
            return None
        hit = self.cache.get(key)
        if hit is None:
            return None
        reply = LLMReply(hit.text, 0, 0, cached=True, **self._counted(messages, hit.text))
        self.usage.record_cached(node, hit.input_tokens, hit.output_tokens,
                                 reply.counted_input, reply.counted_output)
        return reply

    @staticmethod
    def _config(config: RunnableConfig | None, node: str) -> RunnableConfig:
        merged: dict[str, Any] = dict(config or {})
        merged["metadata"] = {**(merged.get("metadata") or {}), "gear_node": node}
        return merged  # type: ignore[return-value]

    def _reply(self, messages: list[BaseMessage], message: Any) -> LLMReply:
        if isinstance(message, BaseMessage):
            text = content_text(message.content)
        elif isinstance(message, str):
            text = message
        else:
            text = content_text(getattr(message, "content", None))
        if not text.strip():
            raise EmptyReplyError(f"{self.model_name} returned an empty reply")
        counted = self._counted(messages, text)
        usage = reported_usage(message) if isinstance(message, BaseMessage) else None
        if usage is None:
            usage = (counted["counted_input"], counted["counted_output"])
        return LLMReply(text, usage[0], usage[1], cached=False, **counted)

    def _deadline_error(
        self, budget_s: float | None, attempt: int, node: str, last: BaseException | None
    ) -> LLMDeadlineError:
        return LLMDeadlineError(
            model=self.model_name, node=node, attempts=attempt, budget_s=budget_s or 0.0,
            last_error=last, endpoint=self.endpoint,
        )

    def _left_or_raise(
        self, end: float | None, budget_s: float | None, attempt: int, node: str,
        last: BaseException | None,
    ) -> float | None:
        """Seconds left before ``end`` (None: no deadline); raises when none are."""
        if end is None:
            return None
        left = end - self._clock()
        if left <= 0:
            raise self._deadline_error(budget_s, attempt - 1, node, last)
        return left

    def _pause_or_raise(
        self, seen: float, end: float | None, budget_s: float | None, attempt: int, node: str
    ) -> tuple[float, float]:
        """The wait for the shared ``Retry-After`` pause before an attempt (0.0: none, or
        one this call waited for already) and the pause end now waited for; raises when the
        pause ends past the deadline."""
        if self.pause.until <= seen:
            return 0.0, seen
        until, wait = self.pause.seen()
        if wait <= 0:
            return 0.0, until
        if end is not None and self._clock() + wait >= end:
            raise self._deadline_error(budget_s, attempt - 1, node, None)
        return wait, until

    def _wait_or_raise(
        self, exc: Exception, attempt: int, node: str, end: float | None, budget_s: float | None
    ) -> tuple[float, float]:
        """The wait before the next attempt (its own backoff, or longer while the shared
        pause lasts) and the pause end it covers; raises when there is none, or when the
        wait would end past the deadline (waiting for nothing helps nobody)."""
        delay = self._delay_or_raise(exc, attempt, node)
        until, paused = self.pause.seen()
        delay = max(delay, paused)
        if end is not None and self._clock() + delay >= end:
            raise self._deadline_error(budget_s, attempt, node, exc) from exc
        return delay, until

    def _delay_or_raise(self, exc: Exception, attempt: int, node: str) -> float:
        retriable = is_retriable(exc)
        if not retriable or attempt > self.retry.max_retries:
            raise LLMCallError(
                model=self.model_name,
                node=node,
                attempts=attempt,
                last_error=exc,
                retriable=retriable,
                endpoint=self.endpoint,
            ) from exc
        retry_after = retry_after_s(exc)
        if retry_after is not None:  # the server's word holds for every call of this client
            self.pause.hold(min(retry_after, self.retry.max_retry_after_s))
        delay = backoff_delay(attempt, self.retry, self._rng, retry_after)
        logger.info(
            "LLM call (model=%s, node=%s) failed with %s: %s; retry %d/%d in %.1fs",
            self.model_name,
            node,
            type(exc).__name__,
            exc,
            attempt,
            self.retry.max_retries,
            delay,
        )
        return delay

    def _record(self, key: str | None, node: str, reply: LLMReply) -> LLMReply:
        self.usage.record(node, reply.input_tokens, reply.output_tokens,
                          reply.counted_input, reply.counted_output)
        if key is not None and self.cache is not None:
            entry = CachedReply(reply.text, reply.input_tokens, reply.output_tokens)
            try:
                self.cache.put(key, entry, model=self.model_name)
            except OSError as exc:  # the reply is good; only the saving failed
                logger.warning(
                    "could not write the LLM cache entry under %s (%s); check "
                    "GEAR_LLM_CACHE_DIR is writable",
                    self.cache.directory,
                    exc,
                )
        return reply
