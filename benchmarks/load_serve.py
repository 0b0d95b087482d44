"""Load test of `gear serve` on loopback: N concurrent clients x M requests to /gear/invoke.

By default it starts its own server in a subprocess over the tiny test index with the
prompt-keyed fake chat model of ``tests/integration/test_serve.py`` (so it measures the
service and the graph, not an LLM), then reports requests/s, p50/p99 latency and errors.

    python benchmarks/load_serve.py                    # 8 clients x 50 requests, a table
    python benchmarks/load_serve.py --clients 16 --requests 20
    python benchmarks/load_serve.py --url http://127.0.0.1:8000   # an existing server
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
QUESTION = "In which county is the town where the Rainbow Bridge over the American River is located?"


def serve_fake(port: int, folder: Path) -> None:
    """Run the service over the tiny test index with the fake chat model (blocks)."""
    sys.path[:0] = [str(ROOT / "tests" / p) for p in ("", "integration")]
    import uvicorn
    from support.tiny_corpus import make_runtime, make_settings
    from test_serve import prompt_keyed_chat

    from gear_agent.agent.graph import build_agent
    from gear_agent.serve.app import create_app

    settings = make_settings(llm_max_retries=0)
    runtime = make_runtime(folder / "index", settings)
    agent = build_agent(settings, runtime=runtime, chat_model=prompt_keyed_chat())
    uvicorn.run(create_app(agent, settings), host="127.0.0.1", port=port, log_level="warning")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_up(url: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"server at {url} did not come up in {seconds:.0f} s")


async def client(http: httpx.AsyncClient, requests: int, latencies: list[float], errors: list[str]) -> None:
    body = {"input": {"question": QUESTION}}
    for _ in range(requests):
        start = time.perf_counter()
        try:
            response = await http.post("/gear/invoke", json=body)
            if response.status_code != 200 or response.json()["output"]["answer"] != "Sacramento County":
                errors.append(f"{response.status_code}: {response.text[:120]}")
        except httpx.HTTPError as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
        latencies.append(time.perf_counter() - start)


async def load(url: str, clients: int, requests: int) -> dict[str, float]:
    latencies: list[float] = []
    errors: list[str] = []
    limits = httpx.Limits(max_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as http:
        await http.post("/gear/invoke", json={"input": {"question": QUESTION}})  # warm-up
        start = time.perf_counter()
        await asyncio.gather(*(client(http, requests, latencies, errors) for _ in range(clients)))
        elapsed = time.perf_counter() - start
    ordered = sorted(latencies)
    return {
        "clients": clients,
        "requests": len(latencies),
        "errors": len(errors),
        "seconds": round(elapsed, 2),
        "requests_per_s": round(len(latencies) / elapsed, 1),
        "p50_ms": round(statistics.median(ordered) * 1000, 1),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] * 1000, 1),
        "first_error": errors[0] if errors else "",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=50, help="Requests per client.")
    parser.add_argument("--url", help="Load an existing server instead of starting one.")
    parser.add_argument("--json", action="store_true", help="Print JSON instead of a table.")
    parser.add_argument("--serve-fake", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_fake:
        with tempfile.TemporaryDirectory() as folder:
            serve_fake(args.serve_fake, Path(folder))
        return
    server = None
    url = args.url
    if url is None:
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        server = subprocess.Popen([sys.executable, __file__, "--serve-fake", str(port)], env=env)
    try:
        wait_until_up(url.rstrip("/"))
        result = asyncio.run(load(url.rstrip("/"), args.clients, args.requests))
    finally:
        if server is not None:
            server.terminate()
            server.wait(10)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print("| measure | value |")
    print("|---|---|")
    for name, value in result.items():
        print(f"| {name.replace('_', ' ')} | {value} |")


if __name__ == "__main__":
    main()
