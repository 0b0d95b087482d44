"""Load test of `gear serve` on loopback: N concurrent clients x M requests to /gear/invoke.

By default it starts its own server in a subprocess over the tiny test index with the
prompt-keyed fake chat model of ``tests/integration/test_serve.py`` (so it measures the
service and the graph, not an LLM), then reports requests/s, p50/p99 latency and errors.

    python benchmarks/load_serve.py                    # 8 clients x 50 requests, a table
    python benchmarks/load_serve.py --clients 16 --requests 20
    python benchmarks/load_serve.py --url http://127.0.0.1:8000   # an existing server
    python benchmarks/load_serve.py --shed             # load shedding: 3 servers, a table

``--shed`` runs three servers whose fake model takes ``--delay`` seconds per call (a run
makes 6 calls): within the limit (``--limit`` clients), over it with no limit (``--clients``
clients, ``GEAR_SERVE_MAX_CONCURRENT`` effectively off) and over it with the limit, and
prints per server: requests, answered, shed (503 with ``Retry-After``), other errors, and
the p50/p99 latency of the answered ones.

``--get-flood`` floods the web page's GET routes (issue 36): it builds (or reuses, with
``--index DIR``) an index of ``--passages`` synthetic passages (two triples each) embedded
by the stand-in ``hashing-384`` embedder, starts the page's server over it (``--code DIR``
runs the server from another checkout, e.g. main's, for a before/after), and for each of
``/ui/api/documents``, ``/ui/api/entities?q=`` and ``/ui/api/health`` sends ``--rounds``
floods of ``--clients`` concurrent clients x ``--requests`` requests while a probe (its own
process) asks ``/health`` every 50 ms. Per route and round it prints answered, shed (503
with ``Retry-After``), other errors (timeouts, refused connections, a 503 without
``Retry-After``), the p50/p99 of the flood, the probe's ``/health`` p99 and maximum, and
the server's RSS before and after (2 s after the flood ends).

    python benchmarks/load_serve.py --get-flood --passages 40000 --index /tmp/flood
    python benchmarks/load_serve.py --get-flood --index /tmp/flood --code /work/main
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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
    model = prompt_keyed_chat()
    model.delay_s = float(os.environ.get("LOAD_FAKE_DELAY_S", "0"))  # seconds per (async) call
    agent = build_agent(settings, index=runtime, chat_model=model)
    uvicorn.run(create_app(agent, settings), host="127.0.0.1", port=port, log_level="warning")


def build_flood_index(folder: Path, passages: int) -> None:
    """``passages`` synthetic passages with two triples each, stand-in embedder (once)."""
    from gear_agent.config import GearSettings
    from gear_agent.ids import passage_id, triple_id
    from gear_agent.indexing import IndexReport, add_passages, add_triples
    from gear_agent.open_index import OpenIndex
    from gear_agent.types import Passage, Triple

    settings = GearSettings(index_dir=folder, embedding_model="hashing-384")
    runtime = OpenIndex.open(settings, create=True)
    rows, triples = [], []
    for i in range(passages):
        title = f"Station {i}"
        text = (f"Station {i} was founded by Person {i % 997} in {1800 + i % 200}. It lies near "
                f"Town {i % 1_511} and is known for its work on topic {i % 89}.")
        pid = passage_id(title, text)
        rows.append(Passage(pid, title, text, "flood"))
        for subject, predicate, obj in ((title, "founded by", f"Person {i % 997}"),
                                        (title, "near", f"Town {i % 1_511}")):
            triples.append(Triple(triple_id(pid, subject, predicate, obj), subject, predicate, obj, pid))
    report = IndexReport()
    add_passages(runtime.store, rows, report)
    add_triples(runtime.store, triples, report)
    runtime.store.passages.mark_extracted([p.id for p in rows])
    runtime.store.close()


def serve_page(port: int, index: Path) -> None:
    """The page's server over ``index`` with a scripted chat model (blocks)."""
    sys.path[:0] = [str(ROOT / "tests")]
    import uvicorn
    from support.fakes import ScriptedChatModel

    from gear_agent.agent.graph import build_agent
    from gear_agent.config import GearSettings
    from gear_agent.open_index import OpenIndex
    from gear_agent.serve.app import create_app

    try:  # as `gear serve` does (gear_agent/serve/process.py), where the checkout has it
        from gear_agent.serve.process import prepare_server_process
    except ImportError:
        pass
    else:
        prepare_server_process()
    settings = GearSettings(index_dir=index, embedding_model="hashing-384")
    runtime = OpenIndex.open(settings)
    agent = build_agent(settings, index=runtime, chat_model=ScriptedChatModel(respond=lambda _prompt: "{}"))
    uvicorn.run(create_app(agent, settings, index=runtime), host="127.0.0.1", port=port,
                log_level="error")


def settle(url: str, path: str, timeout: float, seconds: float = 300) -> None:
    """Wait until ``path`` answers (the server has worked off what a flood left queued,
    answered or shed), at most ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + path, timeout=timeout).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(1)


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    """The process's resident memory (``VmRSS``; ``RssAnon``: its heap and stacks, without
    the pages of mapped files such as SQLite's memory map), MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


PROBE_EVERY_S = 0.01
"""How often the probe asks ``/health`` during a flood (so a round of a few seconds gives some
hundreds of samples and its p99 is not just its slowest)."""


def probe_health(url: str, stop: Any, out: Any, timeout: float) -> None:
    """``GET /health`` every :data:`PROBE_EVERY_S` until ``stop`` (its own process, so the flood's
    clients do not delay it); puts the latencies on ``out``."""
    latencies = []
    with httpx.Client(base_url=url, timeout=timeout) as http:
        while not stop.is_set():
            start = time.perf_counter()
            try:
                http.get("/health")
            except httpx.HTTPError:
                pass
            latencies.append(time.perf_counter() - start)
            stop.wait(PROBE_EVERY_S)
    out.put(latencies)


async def flood(url: str, path: str, clients: int, requests: int, timeout: float) -> dict[str, object]:
    seen: list[tuple[int, float]] = []

    async def one(http: httpx.AsyncClient) -> None:
        for _ in range(requests):
            start = time.perf_counter()
            try:
                response = await http.get(path)
                status = response.status_code
                if status == 503 and "retry-after" not in response.headers:
                    status = -503
            except httpx.HTTPError:
                status = -1
            seen.append((status, time.perf_counter() - start))

    context = multiprocessing.get_context("fork")
    stop, out = context.Event(), context.Queue()
    prober = context.Process(target=probe_health, args=(url, stop, out, timeout))
    prober.start()
    limits = httpx.Limits(max_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=timeout, limits=limits) as http:
        start = time.perf_counter()
        await asyncio.gather(*(one(http) for _ in range(clients)))
        elapsed = time.perf_counter() - start
    stop.set()
    probes = sorted(out.get(timeout=timeout + 10))
    prober.join(10)
    answered = sorted(t for status, t in seen if status == 200)
    shed = [t for status, t in seen if status == 503]
    everything = sorted(t for _, t in seen)

    def ms(values: list[float], q: float) -> str:
        return "-" if not values else f"{values[min(len(values) - 1, int(q * len(values)))] * 1000:.0f}"

    return {"requests": len(seen), "answered": len(answered), "shed (503)": len(shed),
            "other errors": len(seen) - len(answered) - len(shed), "seconds": f"{elapsed:.1f}",
            "p50 ms": ms(everything, 0.5), "p99 ms": ms(everything, 0.99),
            "/health p99 ms": ms(probes, 0.99), "/health max ms": ms(probes, 1.0)}


FLOOD_ROUTES = {"documents": "/ui/api/documents", "entities": "/ui/api/entities?q=station%2012",
                "health": "/ui/api/health"}
"""The routes ``--get-flood`` floods (``--routes`` picks some, by these names)."""


def get_flood(index: Path | None, passages: int, clients: int, requests: int, code: Path,
              timeout: float, rounds: int = 3, routes: tuple[str, ...] = tuple(FLOOD_ROUTES)) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        folder = index or Path(scratch) / "index"
        if not (folder / "manifest.json").exists() and not any(folder.glob("*.sqlite")):
            started = time.perf_counter()
            build_flood_index(folder, passages)
            print(f"built {passages:,} passages in {time.perf_counter() - started:.0f} s at {folder}")
        port = free_port()
        env = {**os.environ, "PYTHONPATH": str(code)}
        server = subprocess.Popen([sys.executable, __file__, "--serve-page", str(port), str(folder)], env=env)
        url = f"http://127.0.0.1:{port}"
        rows = []
        try:
            wait_until_up(url, 300)
            for path in (FLOOD_ROUTES[name] for name in routes):
                settle(url, path, timeout)  # one of each first: lazy parts built
                rss = [rss_mb(server.pid)]
                first = rss[0]
                route_rows = []
                for round_ in range(rounds):
                    row = asyncio.run(flood(url, path, clients, requests, timeout))
                    settle(url, path, timeout)
                    time.sleep(2)
                    rss.append(rss_mb(server.pid))
                    route_rows.append({**row, "RSS before MB": rss[-2], "RSS after MB": rss[-1],
                                       "RSS change": f"{(rss[-1] / rss[-2] - 1) * 100:+.0f}%",
                                       "anon after MB": rss_mb(server.pid, "RssAnon")})
                    rows.append((f"{path} (round {round_ + 1})", route_rows[-1]))
                rows.append((f"{path} (median of {rounds})", _medians(route_rows, first, rss[-1])))
        finally:
            stop(server)
    print(f"code: {code}; {clients} clients x {requests} GETs per route and round, {rounds} rounds; "
          f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs at the end")
    keys = list(rows[0][1])
    print("| route | " + " | ".join(keys) + " |")
    print("|---|" + "---|" * len(keys))
    for name, row in rows:
        print(f"| {name} | " + " | ".join(str(row.get(k, "")) for k in keys) + " |")


def _medians(rows: list[dict[str, Any]], first: float, last: float) -> dict[str, Any]:
    """A route's rounds in one row: the median of each number, the RSS of before the first
    round and after the last (the change over all rounds)."""
    out: dict[str, Any] = {}
    for key in rows[0]:
        values = [float(str(r[key]).rstrip("%")) for r in rows if str(r[key]).rstrip("%").lstrip("+-").replace(".", "", 1).isdigit()]
        if len(values) == len(rows):
            out[key] = f"{statistics.median(values):g}" + ("%" if str(rows[0][key]).endswith("%") else "")
    out.update({"RSS before MB": first, "RSS after MB": last, "RSS change": f"{(last / first - 1) * 100:+.0f}% (all rounds)"})
    return out


def stop(server: subprocess.Popen) -> None:
    """End a server process: a terminate, then a kill when it has not gone in 30 s."""
    server.terminate()
    try:
        server.wait(30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait(10)


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


async def shed_client(http: httpx.AsyncClient, requests: int, seen: list[tuple[int, float]]) -> None:
    body = {"input": {"question": QUESTION}}
    for _ in range(requests):
        start = time.perf_counter()
        try:
            status = (await http.post("/gear/invoke", json=body)).status_code
        except httpx.HTTPError:
            status = -1
        seen.append((status, time.perf_counter() - start))


async def shed_load(url: str, clients: int, requests: int) -> dict[str, object]:
    seen: list[tuple[int, float]] = []
    limits = httpx.Limits(max_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=600, limits=limits) as http:
        await http.post("/gear/invoke", json={"input": {"question": QUESTION}})  # warm-up
        await asyncio.gather(*(shed_client(http, requests, seen) for _ in range(clients)))
    answered = sorted(t for status, t in seen if status == 200)
    shed = sorted(t for status, t in seen if status in (429, 503))

    def ms(values: list[float], q: float) -> str:
        return "-" if not values else f"{values[min(len(values) - 1, int(q * len(values)))] * 1000:.0f}"

    return {"requests": len(seen), "answered": len(answered), "shed (503)": len(shed),
            "other errors": len(seen) - len(answered) - len(shed),
            "answered p50 ms": ms(answered, 0.5), "answered p99 ms": ms(answered, 0.99),
            "shed p50 ms": ms(shed, 0.5)}


def start_fake(env_extra: dict[str, str]) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), **env_extra}
    server = subprocess.Popen([sys.executable, __file__, "--serve-fake", str(port)], env=env)
    return server, f"http://127.0.0.1:{port}"


def shedding(clients: int, requests: int, limit: int, delay: float) -> None:
    runs = [(f"{limit} clients, limit {limit}", limit, limit),
            (f"{clients} clients, no limit", clients, 100_000),
            (f"{clients} clients, limit {limit}", clients, limit)]
    rows = []
    for name, n, cap in runs:
        server, url = start_fake({"LOAD_FAKE_DELAY_S": str(delay),
                                  "GEAR_SERVE_MAX_CONCURRENT": str(cap)})
        try:
            wait_until_up(url)
            rows.append((name, asyncio.run(shed_load(url, n, requests))))
        finally:
            server.terminate()
            server.wait(10)
    keys = list(rows[0][1])
    print("| server | " + " | ".join(keys) + " |")
    print("|---|" + "---|" * len(keys))
    for name, row in rows:
        print(f"| {name} | " + " | ".join(str(row[k]) for k in keys) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=50, help="Requests per client.")
    parser.add_argument("--url", help="Load an existing server instead of starting one.")
    parser.add_argument("--json", action="store_true", help="Print JSON instead of a table.")
    parser.add_argument("--serve-fake", type=int, metavar="PORT", help=argparse.SUPPRESS)
    parser.add_argument("--shed", action="store_true", help="The load-shedding table.")
    parser.add_argument("--limit", type=int, default=8, help="GEAR_SERVE_MAX_CONCURRENT for --shed.")
    parser.add_argument("--delay", type=float, default=0.1, help="Seconds per fake LLM call (--shed).")
    parser.add_argument("--get-flood", action="store_true", help="Flood the page's GET routes (a table).")
    parser.add_argument("--passages", type=int, default=40_000, help="Passages of the --get-flood index.")
    parser.add_argument("--index", type=Path, help="The --get-flood index (built there when absent).")
    parser.add_argument("--code", type=Path, default=ROOT, help="Checkout the --get-flood server runs from.")
    parser.add_argument("--timeout", type=float, default=60.0, help="Client timeout, seconds (--get-flood).")
    parser.add_argument("--rounds", type=int, default=3, help="Floods per route (--get-flood).")
    parser.add_argument("--routes", default=",".join(FLOOD_ROUTES),
                        help=f"Comma-separated routes to flood (--get-flood): {', '.join(FLOOD_ROUTES)}.")
    parser.add_argument("--serve-page", nargs=2, metavar=("PORT", "INDEX"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_page:
        serve_page(int(args.serve_page[0]), Path(args.serve_page[1]))
        return
    if args.get_flood:
        routes = tuple(r.strip() for r in args.routes.split(",") if r.strip())
        unknown = sorted(set(routes) - set(FLOOD_ROUTES))
        if unknown:
            parser.error(f"unknown --routes {', '.join(unknown)}: choose from {', '.join(FLOOD_ROUTES)}")
        get_flood(args.index, args.passages, args.clients, args.requests, args.code, args.timeout,
                  args.rounds, routes)
        return
    if args.serve_fake:
        with tempfile.TemporaryDirectory() as folder:
            serve_fake(args.serve_fake, Path(folder))
        return
    if args.shed:
        shedding(args.clients, args.requests, args.limit, args.delay)
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
