"""Counting tokens: the model's own report when it gives one, else tiktoken, else an estimate.

tiktoken fetches its encoding files from the internet on first use. gear-agent never
lets it: an encoding is used only when its file is already in tiktoken's cache
(``TIKTOKEN_CACHE_DIR``, ``DATA_GYM_CACHE_DIR`` or ``<tmp>/data-gym-cache``) and its
checksum matches. Otherwise tokens are estimated at about 4 characters per token
(OpenAI's rule of thumb for English). To get exact counts offline, copy the cache
files from a machine that has them, or run ``python -c "import tiktoken;
tiktoken.get_encoding('o200k_base')"`` once with internet access.
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage

from gear_agent.llm.messages import content_text

CHARS_PER_TOKEN = 4.0
"""Offline estimate: characters per token when no tokenizer file is available."""

MESSAGE_OVERHEAD_TOKENS = 4
"""Tokens a chat API adds per message (role and separators), as in OpenAI's cookbook."""

DEFAULT_ENCODING = "o200k_base"
"""Encoding for model names tiktoken does not know (local servers, new models)."""

# Where tiktoken downloads each encoding from, and the sha256 it checks; copied from
# tiktoken_ext/openai_public.py so the cache can be checked without touching the network.
_ENCODING_FILES: dict[str, tuple[str, str]] = {
    "cl100k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
    "o200k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
}


def estimate_tokens(text: str) -> int:
    """Tokens in ``text`` by the offline rule of ~4 characters per token.

    Example:
        >>> estimate_tokens("twelve chars")
        3
    """
    if not text:
        return 0
    return max(1, math.ceil(len(text) / CHARS_PER_TOKEN))


def _tiktoken_cache_dir() -> Path | None:
    """The folder tiktoken reads cached encodings from (mirrors tiktoken.load)."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        folder = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        folder = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        folder = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    return Path(folder) if folder else None  # "" disables tiktoken's cache: always downloads


def encoding_is_cached(name: str) -> bool:
    """Whether tiktoken can load encoding ``name`` from its cache, without any download."""
    if name not in _ENCODING_FILES:
        return False
    folder = _tiktoken_cache_dir()
    if folder is None:
        return False
    url, expected = _ENCODING_FILES[name]
    path = folder / hashlib.sha1(url.encode()).hexdigest()
    try:
        data = path.read_bytes()
    except OSError:
        return False
    return hashlib.sha256(data).hexdigest() == expected


@functools.lru_cache(maxsize=8)
def _encoding(name: str) -> Any | None:
    """The tiktoken encoding ``name`` if it loads offline, else None (checked once)."""
    if not encoding_is_cached(name):
        return None
    try:
        import tiktoken
    except ImportError:
        return None
    try:
        return tiktoken.get_encoding(name)
    except (ValueError, OSError):
        return None


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


def count_tokens(text: str, model: str | None = None) -> int:
    """Tokens in ``text`` for ``model``: exact where tiktoken's file is cached, else estimated.

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
