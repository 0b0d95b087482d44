"""Optional on-disk cache of chat replies, so a repeated run costs nothing.

One small JSON file per request under the cache folder, named by the sha256 of the
model name, temperature, completion cap and the full prompt messages, and written
atomically (temporary file, then ``os.replace``), so concurrent runs and crashes never
leave a half-written entry. Sharded by the first two hex digits of the key.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage

logger = logging.getLogger(__name__)

_FORMAT = 1  # bump when the key or the file layout changes


@dataclass(frozen=True)
class CachedReply:
    """A stored reply and the tokens it cost when it was made."""

    text: str
    input_tokens: int
    output_tokens: int


def cache_key(
    model: str,
    temperature: float | None,
    messages: Sequence[BaseMessage],
    max_tokens: int | None = None,
    response_format: dict[str, Any] | None = None,
) -> str:
    """The sha256 hex key of a request.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> len(cache_key("gpt-4o-mini", 0.0, [HumanMessage("hi")]))
        64
    """
    payload = {
        "format": _FORMAT,
        "model": model,
        "temperature": temperature,
        "max_tokens": max_tokens,
        "messages": [{"role": m.type, "content": m.content} for m in messages],
    }
    if response_format is not None:  # absent otherwise, so older keys stay valid
        payload["response_format"] = response_format
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache:
    """Replies on disk, one JSON file per key.

    Args:
        directory: The cache folder (``GEAR_LLM_CACHE_DIR``); created on first write.
    """

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory)
        if self.directory.exists() and not self.directory.is_dir():
            raise NotADirectoryError(
                f"LLM cache dir {self.directory} is a file; set GEAR_LLM_CACHE_DIR to a folder"
            )

    def path(self, key: str) -> Path:
        """Where the entry of ``key`` lives."""
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> CachedReply | None:
        """The stored reply of ``key``, or None on a miss.

        An unreadable entry (edited by hand, or from an incompatible version) is a
        miss and is logged; the next :meth:`put` overwrites it.
        """
        path = self.path(key)
        try:
            raw = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            data = json.loads(raw)
            reply = CachedReply(
                text=data["text"],
                input_tokens=int(data["input_tokens"]),
                output_tokens=int(data["output_tokens"]),
            )
        except (ValueError, KeyError, TypeError) as exc:
            logger.warning("ignoring unreadable LLM cache entry %s: %s", path, exc)
            return None
        if not isinstance(reply.text, str) or not reply.text.strip():
            logger.warning("ignoring LLM cache entry %s without text", path)
            return None
        return reply

    def put(self, key: str, reply: CachedReply, *, model: str = "") -> None:
        """Store ``reply`` under ``key``, atomically."""
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {
            "format": _FORMAT,
            "model": model,
            "text": reply.text,
            "input_tokens": reply.input_tokens,
            "output_tokens": reply.output_tokens,
        }
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key[:8]}-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle, ensure_ascii=False)
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
