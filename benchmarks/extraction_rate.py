"""Extraction throughput: passages per second at several concurrencies, against a scripted
chat model that answers after a fixed latency (default 300 ms, a hosted model's typical
reply time for a short extraction), through the real client (retries, token accounting)
and the real store (triples embedded with the stand-in ``hashing-64`` embedder, committed
as ``gear index --extract`` commits them).

With ``--limit-every N`` every N-th call is answered 429 with ``Retry-After: --retry-after``
seconds (a rate-limited provider): the pause holds for every worker of the run (the client's
shared pause), so the rate shows what the pauses cost.

    python benchmarks/extraction_rate.py
    python benchmarks/extraction_rate.py --latency 0.8 --passages 96 --concurrency 1 8 32
    python benchmarks/extraction_rate.py --limit-every 32 --retry-after 1
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]

from support.fakes import ScriptedChatModel  # noqa: E402

from gear_agent.embedding.hashing import HashingEmbedder  # noqa: E402
from gear_agent.extraction import extract_triples  # noqa: E402
from gear_agent.ids import passage_id  # noqa: E402
from gear_agent.llm.client import LLMClient  # noqa: E402
from gear_agent.store.embedded.store import EmbeddedStore  # noqa: E402
from gear_agent.types import Passage  # noqa: E402


def reply(prompt: str) -> str:
    """One grounded triple per passage: its ``Town N`` and river."""
    town = re.findall(r"Town \d+", prompt)[-1]
    river = re.findall(r"river \d+", prompt)[-1]
    return json.dumps({"entities": [town, river], "triples": [[town, "lies on", river]]})


def limited(every: int, retry_after: float) -> Callable[[str], object]:
    """:func:`reply`, but every ``every``-th call is a 429 with ``Retry-After``."""
    import httpx
    import openai

    calls = itertools.count(1)
    request = httpx.Request("POST", "http://scripted.test/v1/chat/completions")

    def respond(prompt: str) -> object:
        if every and next(calls) % every == 0:
            response = httpx.Response(429, headers={"retry-after": str(retry_after)}, request=request)
            return openai.RateLimitError("HTTP 429", response=response, body=None)
        return reply(prompt)

    return respond


def run(concurrency: int, passages: int, latency: float, every: int = 0,
        retry_after: float = 1.0) -> tuple[float, int]:
    with tempfile.TemporaryDirectory(prefix="gear-extract-rate-") as folder:
        store = EmbeddedStore.open(Path(folder), HashingEmbedder(64))
        texts = [(f"Town {i}", f"Town {i} lies on river {i % 7} and holds a market.") for i in range(passages)]
        store.passages.add([Passage(passage_id(t, x), t, x, "bench") for t, x in texts])
        model = ScriptedChatModel(respond=limited(every, retry_after), delay_s=latency, usage=(180, 40))
        started = time.perf_counter()
        summary = asyncio.run(extract_triples(store, LLMClient(model), concurrency=concurrency))
        seconds = time.perf_counter() - started
        store.close()
    return seconds, summary.triples_kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.3, help="Seconds per reply.")
    parser.add_argument("--passages", type=int, default=64)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--limit-every", type=int, default=0, help="Every N-th call answers 429.")
    parser.add_argument("--retry-after", type=float, default=1.0, help="Its Retry-After, seconds.")
    args = parser.parse_args()
    limit = (f", every {args.limit_every}th call 429 with Retry-After {args.retry_after:g} s"
             if args.limit_every else "")
    print(f"{args.passages} passages, scripted model answering after {args.latency * 1000:.0f} ms{limit}\n")
    print("| concurrency | seconds | passages/s | ideal passages/s | triples |")
    print("|---:|---:|---:|---:|---:|")
    for concurrency in args.concurrency:
        seconds, triples = run(concurrency, args.passages, args.latency, args.limit_every, args.retry_after)
        ideal = concurrency / args.latency
        print(f"| {concurrency} | {seconds:.1f} | {args.passages / seconds:.1f} | {ideal:.1f} | {triples} |")


if __name__ == "__main__":
    main()
