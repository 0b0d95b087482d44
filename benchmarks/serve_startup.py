"""How long `gear serve` takes to answer `/health`, and to be ready (issue 36).

Starts ``python -m gear_agent.cli serve`` over an index (by default the 12-passage demo,
indexed once into a temporary folder with the configured embedding model) ``--runs``
times, polls ``GET /health`` from the moment the process starts (every 20 ms until it
answers, then every 250 ms: :data:`READY_POLL_S`), and prints
per run: the seconds until the port accepts a connection, to the first answer (any status:
"warming" counts), to ``"status": "ok"`` (the model and the index loaded), and the
machine's load average when the run started (``os.getloadavg``, with the number of CPUs).

    python benchmarks/serve_startup.py                      # this checkout, 3 runs, a table
    python benchmarks/serve_startup.py --code /work/main    # another checkout, for a before/after
    python benchmarks/serve_startup.py --index .gear/index --runs 5

The chat model is a stand-in address (``OPENAI_BASE_URL=http://127.0.0.1:9/v1``) so that
a checkout that refuses to start without one starts too; nothing calls it.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from load_serve import free_port, stop

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "examples" / "demo"
READY_POLL_S = 0.25
"""How often ``/health`` is asked once it has answered: every 20 ms until then (the first
answer to within 20 ms), then every 250 ms. A server answering 50 polls a second takes the
GIL from its warm-up thread 50 times a second, which on a loaded machine delayed being
ready by a third (31-37 s against 21-23 s polled every second, at a load of about 15)."""


def build_demo(index: Path, code: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(code)}
    subprocess.run([sys.executable, "-m", "gear_agent.cli", "index", str(DEMO / "corpus.json"),
                    "--openie", str(DEMO / "openie.json"), "--index", str(index)],
                   env=env, cwd=code, check=True, stdout=subprocess.DEVNULL)


def one_start(index: Path, code: Path, limit_s: float) -> dict[str, object]:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(code), "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
           "OPENAI_API_KEY": "stand-in"}
    load = os.getloadavg()[0]
    started = time.monotonic()
    server = subprocess.Popen([sys.executable, "-m", "gear_agent.cli", "serve", "--index", str(index),
                               "--port", str(port), "--log-level", "warning"],
                              env=env, cwd=code, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    opened = first = ready = None
    try:
        with httpx.Client(timeout=2) as http:
            while time.monotonic() - started < limit_s and server.poll() is None:
                if opened is None:
                    with socket.socket() as probe:
                        probe.settimeout(0.5)
                        if probe.connect_ex(("127.0.0.1", port)) != 0:
                            time.sleep(0.02)
                            continue
                    opened = time.monotonic() - started
                try:
                    body = http.get(f"http://127.0.0.1:{port}/health").json()
                    now = time.monotonic() - started
                    first = now if first is None else first
                    if body.get("status") == "ok":
                        ready = now
                        break
                except (httpx.HTTPError, ValueError):
                    pass
                time.sleep(0.02 if first is None else READY_POLL_S)
    finally:
        stop(server)

    def seconds(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"

    return {"port open s": seconds(opened), "first /health s": seconds(first), "ready (ok) s": seconds(ready),
            "load at start": f"{load:.1f} on {os.cpu_count()} CPUs"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index", type=Path, help="The index to serve (default: the demo, built once).")
    parser.add_argument("--code", type=Path, default=ROOT,
                        help="The checkout `gear serve` runs from (its folder is the working directory, "
                        "so `python -m` imports its package).")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--limit", type=float, default=300.0, help="Seconds to wait for one start.")
    args = parser.parse_args()
    args.code = args.code.resolve()
    with tempfile.TemporaryDirectory(prefix="gear-startup-") as scratch:
        index = args.index.resolve() if args.index else None
        if index is None:
            index = Path(scratch) / "demo"
            build_demo(index, args.code)
        rows = [one_start(index, args.code, args.limit) for _ in range(args.runs)]
    print(f"code: {args.code}; index: {'demo (12 passages)' if args.index is None else args.index}")
    keys = list(rows[0])
    print("| run | " + " | ".join(keys) + " |")
    print("|---|" + "---|" * len(keys))
    for number, row in enumerate(rows, start=1):
        print(f"| {number} | " + " | ".join(str(row[k]) for k in keys) + " |")


if __name__ == "__main__":
    main()
